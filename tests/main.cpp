// The one test runner: libsystemc supplies main() and calls sc_main, which runs Catch2.
// A SystemC kernel elaborates once per process, so system tests run one per process
// (catch_discover_tests gives every test case its own ctest entry).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <systemc>

int sc_main(int argc, char* argv[]) { return Catch::Session().run(argc, argv); }
