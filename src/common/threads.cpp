#include "tpusim/common/threads.h"

#include <cstdlib>
#include <string>
#include <thread>

#include "tpusim/common/error.h"

namespace tpusim {

int worker_threads() {
    const char* env = std::getenv("TPUSIM_THREADS");
    if (env == nullptr || *env == '\0') {
        const unsigned hw = std::thread::hardware_concurrency();
        return hw == 0 ? 1 : static_cast<int>(hw);
    }
    const std::string text(env);
    std::size_t used = 0;
    long value = 0;
    try {
        value = std::stol(text, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used != text.size() || value < 1 || value > 4096)
        throw InputError("TPUSIM_THREADS", "",
                         "expected an integer from 1 to 4096, got \"" + text + "\"");
    return static_cast<int>(value);
}

}  // namespace tpusim
