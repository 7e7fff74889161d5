#include "hlo_value.h"

#include <algorithm>
#include <unordered_set>

namespace tpusim::hlo_detail {

void flatten(const Value& v, std::vector<std::uint32_t>& out) {
    out.insert(out.end(), v.ops.begin(), v.ops.end());
    for (const auto& e : v.elems) flatten(e, out);
}

void unique_keep_order(std::vector<std::uint32_t>& v) {
    std::unordered_set<std::uint32_t> seen;
    std::size_t w = 0;
    for (std::size_t r = 0; r < v.size(); ++r)
        if (seen.insert(v[r]).second) v[w++] = v[r];
    v.resize(w);
}

Value merged(const std::vector<const Value*>& vs) {
    Value out;
    for (const Value* v : vs) flatten(*v, out.ops);
    std::sort(out.ops.begin(), out.ops.end());
    out.ops.erase(std::unique(out.ops.begin(), out.ops.end()), out.ops.end());
    return out;
}

void remap(Value& v, std::uint32_t from, std::uint32_t to, std::uint32_t delta) {
    for (auto& o : v.ops)
        if (o >= from && o < to) o -= delta;
    for (auto& e : v.elems) remap(e, from, to, delta);
}

}  // namespace tpusim::hlo_detail
