#pragma once
// Keeps AddressSanitizer's idea of the running stack true after a SystemC simulation.
//
// Why: SystemC 2.3.4 runs SC_THREADs as QuickThreads coroutines on mmap'ed stacks whose lowest
// page is a PROT_NONE red zone (sc_cor_qt::stack_protect), and it tells ASan about every switch
// it makes with yield() (__sanitizer_start/finish_switch_fiber, weak references in
// sc_cor_qt.cpp). It does not when a thread process *ends*: sc_cor_pkg_qt::abort() jumps to the
// next coroutine without the annotation. If the last coroutine to run is one that ended (the
// usual case: a test's driver thread returns, sc_start returns to sc_main), ASan keeps that
// thread's stack as the main thread's stack bounds. The stack is then unmapped when SystemC
// collects the process, and the region is reused by later mappings that hold PROT_NONE pages
// (LeakSanitizer's own tracer stack has a guard page). At exit, LeakSanitizer scans the "main
// stack" it was given, reads into such a page and dies: "Tracer caught signal 11 ...
// LeakSanitizer has encountered a fatal error". Whether the reused region holds a guard page
// depends on mmap placement, so which process fails varies from run to run.
//
// The same missing annotation hits inside a simulation: after a thread process ends, ASan takes
// the next thread's stack to be the ended one's and warns "ignoring requested
// __asan_handle_no_return" at that thread's next throw or noreturn call. So the board's thread
// processes never end: each loops, or parks on an event that is never notified (Sequencer).
//
// Contract: call on the process's main stack (in sc_main, after the last sc_start) before
// returning. It re-announces the real stack of the calling thread as the current fiber, so the
// leak scan reads exactly that stack. Without sanitizers the weak symbols are null and it does
// nothing.

namespace tpusim {

void announce_main_stack_to_sanitizers();

}  // namespace tpusim
