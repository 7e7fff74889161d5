// Attribute values that the import reads: integer lists, replica groups (explicit or iota
// form) and source-target pairs.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <string>

#include "hlo_cursor.h"

namespace tpusim::hlo_detail {

namespace {

// Reads the integers of a nested {..} / [..] list in order, with their nesting: calls
// `on_int` for each and `on_close` when a depth-2 group closes.
template <class OnInt, class OnClose>
void scan_ints(std::string_view v, const HloModule& m, std::uint32_t at, OnInt on_int,
               OnClose on_close) {
    int depth = 0;
    for (std::size_t i = 0; i < v.size();) {
        const char c = v[i];
        if (c == '{' || c == '[') {
            ++depth;
            ++i;
        } else if (c == '}' || c == ']') {
            if (depth == 2) on_close();
            --depth;
            ++i;
        } else if (std::isdigit(static_cast<unsigned char>(c)) != 0) {
            std::int64_t x = 0;
            while (i < v.size() && std::isdigit(static_cast<unsigned char>(v[i])) != 0) {
                if (x > kMaxDim) m.fail(at, fmt::format("number too large in {}", v));
                x = x * 10 + (v[i++] - '0');
            }
            on_int(x);
        } else if (c == ',' || c == ' ') {
            ++i;
        } else {
            m.fail(at,
                   fmt::format("expected a list of non-negative integers, found '{}' in {}", c, v));
        }
    }
}

std::vector<std::int64_t> iota_list(std::string_view dims_text, std::string_view perm_text,
                                    const HloModule& m, std::uint32_t at) {
    const std::vector<std::int64_t> dims = int_list(dims_text, m, at);
    std::int64_t n = 1;
    for (std::int64_t d : dims) {
        if (d < 1 || d > (1 << 20)) m.fail(at, "replica group iota dimensions must be 1..2^20");
        n *= d;
        if (n > (1 << 20)) m.fail(at, "more than 2^20 devices in replica groups");
    }
    std::vector<std::int64_t> perm;
    if (perm_text.empty()) {
        for (std::size_t i = 0; i < dims.size(); ++i) perm.push_back(static_cast<int>(i));
    } else {
        perm = int_list(perm_text, m, at);
    }
    std::vector<bool> seen(dims.size(), false);
    if (perm.size() != dims.size()) m.fail(at, "the T(...) permutation must name every dimension");
    for (std::int64_t p : perm) {
        if (p < 0 || p >= static_cast<std::int64_t>(dims.size()) || seen[p])
            m.fail(at, "the T(...) permutation is not a permutation of the dimensions");
        seen[p] = true;
    }
    // Element at transposed index (i_perm[0], ...) of iota(dims) transposed by perm.
    std::vector<std::int64_t> strides(dims.size(), 1), tdims(dims.size()), out;
    for (std::size_t i = dims.size(); i-- > 1;) strides[i - 1] = strides[i] * dims[i];
    for (std::size_t i = 0; i < dims.size(); ++i) tdims[i] = dims[perm[i]];
    std::vector<std::int64_t> idx(dims.size(), 0);
    out.reserve(static_cast<std::size_t>(n));
    for (std::int64_t k = 0; k < n; ++k) {
        std::int64_t v = 0;
        for (std::size_t i = 0; i < dims.size(); ++i) v += idx[i] * strides[perm[i]];
        out.push_back(v);
        for (std::size_t i = dims.size(); i-- > 0;) {
            if (++idx[i] < tdims[i]) break;
            idx[i] = 0;
        }
    }
    return out;
}

// mesh['a'=4,'b'=2] {'a'}: devices numbered row-major over the mesh axes; one group per
// combination of the axes not named in braces, holding the devices along the named ones.
std::vector<std::vector<std::int64_t>> mesh_groups(std::string_view v, const HloModule& m,
                                                   std::uint32_t at) {
    const std::size_t close = v.find(']');
    if (close == std::string_view::npos) m.fail(at, fmt::format("expected mesh[...] in {}", v));
    std::vector<std::string_view> names;
    std::vector<std::int64_t> sizes;
    std::string_view axes = v.substr(5, close - 5);
    while (!axes.empty()) {
        const std::size_t eq = axes.find('=');
        if (eq == std::string_view::npos) m.fail(at, fmt::format("expected 'axis'=size in {}", v));
        std::string_view n = axes.substr(0, eq);
        while (!n.empty() && (n.front() == ' ' || n.front() == ',' || n.front() == '\''))
            n.remove_prefix(1);
        while (!n.empty() && n.back() == '\'') n.remove_suffix(1);
        std::size_t i = eq + 1;
        std::int64_t size = 0;
        while (i < axes.size() && std::isdigit(static_cast<unsigned char>(axes[i])) != 0)
            size = std::min<std::int64_t>(size * 10 + (axes[i++] - '0'), 1 << 21);
        if (size < 1) m.fail(at, fmt::format("expected a positive axis size in {}", v));
        names.push_back(n);
        sizes.push_back(size);
        axes = axes.substr(i);
    }
    std::int64_t total = 1;
    for (std::int64_t s : sizes) {
        total *= s;
        if (total > (1 << 20)) m.fail(at, "more than 2^20 devices in the mesh");
    }
    const std::string_view grouped = v.substr(close + 1);
    std::vector<bool> in_group(names.size(), false);
    for (std::size_t a = 0; a < names.size(); ++a)
        in_group[a] = grouped.find("'" + std::string(names[a]) + "'") != std::string_view::npos;
    std::map<std::vector<std::int64_t>, std::vector<std::int64_t>> by_key;
    for (std::int64_t d = 0; d < total; ++d) {
        std::vector<std::int64_t> key;
        std::int64_t rest = d;
        for (std::size_t a = names.size(); a-- > 0;) {
            if (!in_group[a]) key.push_back(rest % sizes[a]);
            rest /= sizes[a];
        }
        by_key[key].push_back(d);
    }
    std::vector<std::vector<std::int64_t>> out;
    for (auto& [k, g] : by_key) out.push_back(std::move(g));
    return out;
}

}  // namespace

std::vector<std::int64_t> int_list(std::string_view v, const HloModule& m, std::uint32_t at) {
    std::vector<std::int64_t> out;
    scan_ints(
        v, m, at, [&](std::int64_t x) { out.push_back(x); }, [] {});
    return out;
}

std::vector<std::vector<std::int64_t>> replica_groups(std::string_view v, const HloModule& m,
                                                      std::uint32_t at) {
    std::vector<std::vector<std::int64_t>> groups;
    if (v.substr(0, 5) == "mesh[") return mesh_groups(v, m, at);
    const std::size_t arrow = v.find("<=");
    if (arrow != std::string_view::npos) {  // [G,S]<=[dims] or [G,S]<=[dims]T(perm)
        const std::vector<std::int64_t> gs = int_list(v.substr(0, arrow), m, at);
        std::string_view rest = v.substr(arrow + 2);
        std::string_view perm;
        const std::size_t t = rest.find('T');
        if (t != std::string_view::npos) {
            perm = rest.substr(t + 1);
            if (perm.size() < 2 || perm.front() != '(' || perm.back() != ')')
                m.fail(at, fmt::format("expected T(<permutation>) in {}", v));
            perm = perm.substr(1, perm.size() - 2);
            rest = rest.substr(0, t);
        }
        const std::vector<std::int64_t> ids = iota_list(rest, perm, m, at);
        if (gs.size() != 2 || gs[0] < 1 || gs[1] < 1 ||
            gs[0] * gs[1] != static_cast<std::int64_t>(ids.size()))
            m.fail(at, fmt::format("replica groups {}: [groups,size] must cover the iota", v));
        for (std::int64_t g = 0; g < gs[0]; ++g)
            groups.emplace_back(ids.begin() + g * gs[1], ids.begin() + (g + 1) * gs[1]);
        return groups;
    }
    std::vector<std::int64_t> cur;
    scan_ints(
        v, m, at, [&](std::int64_t x) { cur.push_back(x); },
        [&] {
            groups.push_back(cur);
            cur.clear();
        });
    return groups;
}

std::vector<std::pair<std::int64_t, std::int64_t>> pairs_list(std::string_view v,
                                                              const HloModule& m,
                                                              std::uint32_t at) {
    std::vector<std::pair<std::int64_t, std::int64_t>> out;
    for (const auto& g : replica_groups(v, m, at)) {
        if (g.size() != 2) m.fail(at, fmt::format("expected {{source,target}} pairs in {}", v));
        out.emplace_back(g[0], g[1]);
    }
    return out;
}

}  // namespace tpusim::hlo_detail
