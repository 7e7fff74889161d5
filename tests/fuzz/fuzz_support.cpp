#include "fuzz_support.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <new>

#include "tpusim/common/error.h"

namespace tpusim::fuzz {

namespace {

[[noreturn]] void fail(const char* kind, const char* what) {
    std::fprintf(stderr, "fuzz: %s escaped (only an InputError may): %s\n", kind, what);
    std::abort();
}

}  // namespace

void expect_input_error_only(const std::function<void()>& body) {
    try {
        body();
    } catch (const InputError&) {
        // Bad input, reported as the CLI reports it: the expected outcome.
    } catch (const std::bad_alloc&) {
        fail("std::bad_alloc", "an allocation the input's sizes should have bounded");
    } catch (const std::exception& e) {
        fail("an exception", e.what());
    } catch (...) {
        fail("an exception", "not derived from std::exception");
    }
}

std::vector<std::string> split_sections(const std::string& text, std::string_view separator) {
    std::vector<std::string> out;
    std::size_t start = 0;
    const std::string marker = "\n" + std::string(separator) + "\n";
    for (;;) {
        const std::size_t at = text.find(marker, start);
        if (at == std::string::npos) {
            out.push_back(text.substr(start));
            return out;
        }
        out.push_back(text.substr(start, at - start));
        start = at + marker.size();
    }
}

bool small_enough_to_lower(const Trace& t) {
    // Per op and core, each figure below 2^63 (the reader's contract): the sums cannot wrap in
    // 128 bits.
    // A loop body's op counts once per trip, as the lowering makes each trip's instructions: a
    // loop of 5 M trips of a scalar add moves few bytes but takes minutes under the sanitizers,
    // so the op instances are bounded as well as the work.
    unsigned __int128 flops = 0, bytes = 0, instances = 0;
    const auto trips = op_trips(t);
    for (std::size_t i = 0; i < t.ops.size(); ++i) {
        const TraceOp& op = t.ops[i];
        const auto cores = static_cast<unsigned __int128>(op_core_count(t, op)) *
                           static_cast<unsigned __int128>(trips[i]);
        flops += static_cast<unsigned __int128>(op_flops(op)) * cores;
        bytes += (static_cast<unsigned __int128>(op_bytes_in(op)) +
                  static_cast<unsigned __int128>(op_bytes_out(op))) *
                 cores;
        instances += cores;
    }
    return flops <= (static_cast<unsigned __int128>(1) << 40) &&
           bytes <= (static_cast<unsigned __int128>(1) << 30) &&
           instances <= (static_cast<unsigned __int128>(1) << 16);
}

std::string source_dir() {
    if (const char* env = std::getenv("TPUSIM_SOURCE_DIR"); env && *env) return env;
    return TPUSIM_SOURCE_DIR;
}

const std::string& scratch_with_configs() {
    namespace fs = std::filesystem;
    // Never destroyed: the exit handler that removes the folder runs after the destructors of
    // statics constructed later than its registration, this string's among them.
    static const std::string* const dir = [] {
        const fs::path base = fs::is_directory("/dev/shm") ? "/dev/shm" : fs::temp_directory_path();
        std::string tmpl = (base / "tpusim-fuzz-XXXXXX").string();
        if (!mkdtemp(tmpl.data())) std::abort();
        for (const char* sub : {"configs", "configs/compat"}) {
            for (const auto& e : fs::directory_iterator(source_dir() + "/" + sub)) {
                if (e.path().extension() == ".json")
                    fs::copy_file(e.path(), fs::path(tmpl) / e.path().filename(),
                                  fs::copy_options::overwrite_existing);
            }
        }
        auto* d = new std::string(tmpl);
        std::atexit([] {
            std::error_code ec;
            fs::remove_all(scratch_with_configs(), ec);
        });
        return d;
    }();
    return *dir;
}

const TpuConfig& committed_config(const std::string& file_name) {
    static std::map<std::string, std::unique_ptr<TpuConfig>> cache;
    auto& slot = cache[file_name];
    if (!slot) {
        slot = std::make_unique<TpuConfig>(load_config(source_dir() + "/configs/" + file_name));
    }
    return *slot;
}

}  // namespace tpusim::fuzz
