#pragma once
// Small grammar for messages and summaries: "1 core", "8 cores"; "a matmul", "an all_reduce".
#include <cstdint>
#include <string>
#include <string_view>

namespace tpusim {

// "<n> <noun>" with the noun's plural ("s" appended) unless n is 1.
std::string count_of(std::int64_t n, std::string_view noun);

// `word` after its indefinite article: "an all_reduce", "a matmul" (by its first letter).
std::string with_article(std::string_view word);

}  // namespace tpusim
