#include "tpusim/common/suggest.h"

#include <algorithm>
#include <vector>

namespace tpusim {

std::size_t edit_distance(std::string_view a, std::string_view b) {
    // Optimal string alignment distance: Levenshtein plus adjacent transpositions.
    const std::size_t n = a.size(), m = b.size();
    std::vector<std::vector<std::size_t>> d(n + 1, std::vector<std::size_t>(m + 1));
    for (std::size_t i = 0; i <= n; ++i) d[i][0] = i;
    for (std::size_t j = 0; j <= m; ++j) d[0][j] = j;
    for (std::size_t i = 1; i <= n; ++i) {
        for (std::size_t j = 1; j <= m; ++j) {
            const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
        }
    }
    return d[n][m];
}

std::string closest_name(std::string_view word, const std::vector<std::string>& candidates) {
    std::string best;
    std::size_t best_d = 3;  // more than 2 edits is not a typo
    bool tie = false;
    for (const std::string& c : candidates) {
        if (c == word) continue;
        const std::size_t d = edit_distance(word, c);
        if (d < best_d) {
            best = c;
            best_d = d;
            tie = false;
        } else if (d == best_d) {
            tie = true;
        }
    }
    if (best.empty() || tie || 2 * best_d > word.size()) return "";
    return best;
}

std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates) {
    const std::string c = closest_name(word, candidates);
    return c.empty() ? "" : " (did you mean \"" + c + "\"?)";
}

}  // namespace tpusim
