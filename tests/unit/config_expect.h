#pragma once
// Shared by the config unit tests: run a load and check the located InputError it throws.
#include <catch2/catch.hpp>
#include <functional>
#include <string>

#include "tpusim/common/error.h"

namespace tpusim::test {

// Asserts that `f` throws InputError with exactly this file and location, and a message
// containing `fragment`. Returns the error's full one-line text for further checks.
inline std::string expect_input_error(const std::function<void()>& f, const std::string& file,
                                      const std::string& where, const std::string& fragment) {
    try {
        f();
    } catch (const InputError& e) {
        INFO("error: " << e.what());
        CHECK(e.file() == file);
        CHECK(e.where() == where);
        CHECK_THAT(e.what_only(), Catch::Matchers::Contains(fragment));
        return e.what();
    }
    FAIL("expected InputError at " << file << ": " << where << " containing \"" << fragment
                                   << "\"");
    return {};
}

}  // namespace tpusim::test
