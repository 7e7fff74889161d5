// Wording of messages: "did you mean" (common/suggest.h), counts and articles (common/wording.h).
#include "tpusim/common/suggest.h"

#include <catch2/catch.hpp>

#include "tpusim/common/wording.h"

using tpusim::closest_name;
using tpusim::edit_distance;

TEST_CASE("edit distance counts insertions, deletions, substitutions and swaps", "[suggest]") {
    CHECK(edit_distance("run", "run") == 0);
    CHECK(edit_distance("runn", "run") == 1);     // insertion
    CHECK(edit_distance("rn", "run") == 1);       // deletion
    CHECK(edit_distance("rows", "rowz") == 1);    // substitution
    CHECK(edit_distance("chekc", "check") == 1);  // two neighbours swapped
    CHECK(edit_distance("", "abc") == 3);
    CHECK(edit_distance("kitten", "sitting") == 3);
}

TEST_CASE("closest name: a likely typo, or nothing", "[suggest]") {
    const std::vector<std::string> cmds{"info",  "config", "run",   "train",
                                        "trace", "import", "sweep", "bench"};
    CHECK(closest_name("runn", cmds) == "run");
    CHECK(closest_name("imprt", cmds) == "import");
    CHECK(closest_name("foo", cmds).empty());            // 3 edits from everything
    CHECK(closest_name("x", {"y"}).empty());             // one letter: any name is 1 edit away
    CHECK(closest_name("trai", cmds) == "train");        // 1 edit; trace is 2
    CHECK(closest_name("bat", {"cat", "hat"}).empty());  // a tie says nothing
    CHECK(closest_name("run", cmds).empty());            // the name itself is not a suggestion
    CHECK(tpusim::did_you_mean("rowz", {"rows", "cols"}) == " (did you mean \"rows\"?)");
    CHECK(tpusim::did_you_mean("zzzz", {"rows", "cols"}).empty());
}

TEST_CASE("wording: counts and articles", "[suggest]") {
    CHECK(tpusim::count_of(1, "core") == "1 core");
    CHECK(tpusim::count_of(8, "core") == "8 cores");
    CHECK(tpusim::count_of(0, "chip") == "0 chips");
    CHECK(tpusim::with_article("all_reduce") == "an all_reduce");
    CHECK(tpusim::with_article("infeed") == "an infeed");
    CHECK(tpusim::with_article("matmul") == "a matmul");
}
