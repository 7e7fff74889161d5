#pragma once
// An instruction stream lowered on demand (private to the program layer; SharedInstrs is its
// face). A producer thread runs the lowering and appends instructions; it runs at most
// `window` instructions ahead of the slowest reader's release point, unless a reader asks for
// one further on (then it goes on until it has it, so two readers far apart never deadlock).
// Instructions every reader has released are freed, a block at a time.
//
// The readers (the simulated cores) all run on one thread, the simulation's; the producer on
// its own. Instructions live in blocks of kBlock, reached through a directory sized from the
// stream's length (known from the first lowering), which never moves: a reader reads a
// produced instruction without a lock (the producer publishes its count with release order
// after writing it); only a reader that must wait for the producer, and the releases, take
// the mutex. References returned by at() stay valid until the instruction is released.
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "tpusim/program/program.h"

namespace tpusim {

class InstrStream {
 public:
    using Push = std::function<void(Instr&&)>;
    // Appends the stream's instructions, in order, through `push`.
    using Producer = std::function<void(const Push& push)>;

    // `size`: the instructions the producer will push (more is an error the readers see).
    InstrStream(Producer producer, std::size_t window, std::size_t size);
    ~InstrStream();  // stops the producer and joins it
    InstrStream(const InstrStream&) = delete;
    InstrStream& operator=(const InstrStream&) = delete;

    // Instruction i: waits until it is produced. Throws what the producer threw, or
    // std::logic_error when i was released or lies past the end.
    const Instr& at(std::size_t i) {
        if (i < produced_.load(std::memory_order_acquire) &&
            i >= floor_.load(std::memory_order_relaxed))
            return blocks_[i / kBlock][i % kBlock];
        return wait_for(i);
    }
    std::size_t add_reader();
    void release(std::size_t reader, std::size_t below);
    // Instructions produced and not yet released by every reader: for tests of the bound
    // (memory holds these and at most one block more).
    std::size_t held() const;

 private:
    static constexpr std::size_t kBlock = 1024;
    struct Cancelled {};
    const Instr& wait_for(std::size_t i);
    void push(Instr&& in);
    void body();

    Producer producer_;
    const std::size_t window_;
    const std::size_t size_;
    // blocks_[b] holds instructions [b * kBlock, (b + 1) * kBlock); allocated by the producer
    // before it publishes their count, freed by release() once every reader is past them.
    std::unique_ptr<std::unique_ptr<Instr[]>[]> blocks_;
    std::atomic<std::size_t> produced_{0};  // instructions written and published
    std::atomic<std::size_t> floor_{0};     // every reader has released those below
    std::atomic<std::size_t> demand_{0};    // highest index a reader waits for
    std::atomic<std::size_t> readers_waiting_{0};
    std::atomic<bool> producer_waiting_{false};
    mutable std::mutex mu_;
    std::condition_variable cv_;
    std::size_t freed_blocks_ = 0;       // blocks_[0 .. freed_blocks_) are freed (readers' side)
    std::vector<std::size_t> released_;  // per reader
    bool started_ = false, done_ = false, cancel_ = false;
    static constexpr std::size_t kBatch = 256;  // see push()
    std::exception_ptr error_;
    std::thread thread_;
};

}  // namespace tpusim
