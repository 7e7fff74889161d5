#include "tpusim/common/sanitizer.h"

#include <pthread.h>

#include <cstddef>

// The sanitizer fiber interface (sanitizer/common_interface_defs.h), declared weak so that a
// build without sanitizers links and sees null pointers, as SystemC's sc_cor_qt.cpp does.
extern "C" {
void __sanitizer_start_switch_fiber(void** fake_stack_save, const void* bottom, std::size_t size)
    __attribute__((weak));
void __sanitizer_finish_switch_fiber(void* fake_stack_save, const void** bottom_old,
                                     std::size_t* size_old) __attribute__((weak));
}

namespace tpusim {

void announce_main_stack_to_sanitizers() {
    if (__sanitizer_start_switch_fiber == nullptr || __sanitizer_finish_switch_fiber == nullptr) {
        return;
    }
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) != 0) return;
    void* bottom = nullptr;
    std::size_t size = 0;
    const bool ok = pthread_attr_getstack(&attr, &bottom, &size) == 0;
    pthread_attr_destroy(&attr);
    if (!ok || bottom == nullptr || size == 0) return;
    // A switch from "the stack ASan believes we are on" to the stack we are really on. Saving
    // and handing back the fake stack keeps stack-use-after-return detection for this thread.
    void* fake_stack = nullptr;
    __sanitizer_start_switch_fiber(&fake_stack, bottom, size);
    __sanitizer_finish_switch_fiber(fake_stack, nullptr, nullptr);
}

}  // namespace tpusim
