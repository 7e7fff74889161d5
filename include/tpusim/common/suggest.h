#pragma once
// "Did you mean": the known name closest to a mistyped one, for error messages.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace tpusim {

// Edits (insertions, deletions, substitutions, swaps of two neighbours) between a and b.
std::size_t edit_distance(std::string_view a, std::string_view b);

// The candidate closest to `word`, when it is near enough to be a typo of it (at most 2 edits,
// and at most one per two characters of the word); empty otherwise, and on a tie.
std::string closest_name(std::string_view word, const std::vector<std::string>& candidates);

// " (did you mean \"x\"?)" for closest_name's answer, or "" when there is none.
std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace tpusim
