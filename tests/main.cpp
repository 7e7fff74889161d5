// The one test runner: libsystemc supplies main() and calls sc_main, which runs Catch2.
// A SystemC kernel elaborates once per process, so system tests run one per process
// (catch_discover_tests gives every test case its own ctest entry).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <systemc>

#include "tpusim/common/sanitizer.h"

int sc_main(int argc, char* argv[]) {
    const int failed = Catch::Session().run(argc, argv);
    // Back on the main stack after the last sc_start: see sanitizer.h for why ASan must be told.
    tpusim::announce_main_stack_to_sanitizers();
    return failed;
}
