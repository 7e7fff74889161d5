#include "tpusim/common/wording.h"

#include <cctype>

namespace tpusim {

std::string count_of(std::int64_t n, std::string_view noun) {
    return std::to_string(n) + " " + std::string(noun) + (n == 1 ? "" : "s");
}

std::string with_article(std::string_view word) {
    const bool vowel = !word.empty() && std::string_view("aeiou").find(static_cast<char>(
                                            std::tolower(static_cast<unsigned char>(word[0])))) !=
                                            std::string_view::npos;
    return std::string(vowel ? "an " : "a ") + std::string(word);
}

}  // namespace tpusim
