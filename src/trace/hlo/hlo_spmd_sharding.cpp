// XLA's HloSharding as HLO text writes it (xla/hlo/ir/hlo_sharding.cc, ToString; the parser's
// ParseSharding in xla/hlo/parser/hlo_parser.cc): {replicated}, {manual}, {maximal device=k},
// {devices=[a,b,...]d0,d1,...} and the iota form {devices=[a,b]<=[n]} or <=[x,y]T(1,0), with
// last_tile_dim_replicate, tuples {{...}, {...}}, and Shardy's form as XLA prints it
// ({mesh['x'=8], [{'x'}, {}]}, what JAX 0.5+ hands XLA). Subgroup shardings
// (last_tile_dims={manual}) and Shardy's sub-axes are kept as Kind::Other.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "hlo_spmd.h"

namespace tpusim::hlo_spmd {

namespace {

class ShardingReader {
 public:
    ShardingReader(std::string_view v, const HloModule& m, std::uint32_t at, std::int64_t parts)
        : v_(v), m_(m), at_(at), parts_(parts) {}

    Sharding read() {
        Sharding s = one();
        space();
        if (p_ != v_.size()) bad("text after the sharding");
        return s;
    }

 private:
    [[noreturn]] void bad(const std::string& what) const {
        m_.fail(at_, fmt::format("bad sharding {}: {}", v_, what));
    }
    void space() {  // and /*index=5*/ comments, which XLA writes in long tuples
        while (p_ < v_.size()) {
            if (std::isspace(static_cast<unsigned char>(v_[p_])) != 0) {
                ++p_;
            } else if (v_.substr(p_, 2) == "/*") {
                const std::size_t e = v_.find("*/", p_ + 2);
                if (e == std::string_view::npos) bad("a comment is not closed");
                p_ = e + 2;
            } else {
                break;
            }
        }
    }
    bool eat(std::string_view s) {
        space();
        if (v_.substr(p_, s.size()) != s) return false;
        p_ += s.size();
        return true;
    }
    void need(std::string_view s) {
        if (!eat(s)) bad(fmt::format("expected '{}'", s));
    }
    std::int64_t number() {
        space();
        if (p_ >= v_.size() || std::isdigit(static_cast<unsigned char>(v_[p_])) == 0)
            bad("expected a number");
        std::int64_t x = 0;
        while (p_ < v_.size() && std::isdigit(static_cast<unsigned char>(v_[p_])) != 0) {
            if (x > (std::int64_t{1} << 40)) bad("number too large");
            x = x * 10 + (v_[p_++] - '0');
        }
        return x;
    }
    std::vector<std::int64_t> bracketed(char open, char close) {
        need(std::string_view(&open, 1));
        std::vector<std::int64_t> out;
        if (eat(std::string_view(&close, 1))) return out;
        do out.push_back(number());
        while (eat(","));
        need(std::string_view(&close, 1));
        return out;
    }
    std::string word() {
        space();
        const std::size_t b = p_;
        while (p_ < v_.size() && (std::isalnum(static_cast<unsigned char>(v_[p_])) != 0 ||
                                  v_[p_] == '_' || v_[p_] == '.'))
            ++p_;
        return std::string(v_.substr(b, p_ - b));
    }
    // The shardings that name no tiling (`replicated`, `manual`, `maximal device=k`), in either
    // form; false for any other word.
    bool whole_kind(const std::string& w, Sharding& s) {
        if (w == "replicated") {
            s.kind = Sharding::Kind::Replicated;
        } else if (w == "manual") {
            s.kind = Sharding::Kind::Manual;
        } else if (w == "maximal") {
            need("device");
            need("=");
            s.kind = Sharding::Kind::Maximal;
            s.device = number();
            if (s.device >= parts_)
                bad(fmt::format("device {} but num_partitions is {}", s.device, parts_));
        } else {
            return false;
        }
        return true;
    }
    // Skips a balanced {..} / [..] / "..." value.
    void skip_value() {
        space();
        int depth = 0;
        bool quoted = false;
        for (; p_ < v_.size(); ++p_) {
            const char c = v_[p_];
            if (quoted) {
                if (c == '\\')
                    ++p_;
                else if (c == '"')
                    quoted = false;
                continue;
            }
            if (c == '"')
                quoted = true;
            else if (c == '{' || c == '[' || c == '(')
                ++depth;
            else if (c == '}' || c == ']' || c == ')') {
                if (depth == 0) return;
                if (--depth == 0) {
                    ++p_;
                    return;
                }
            } else if (depth == 0 && (c == ',' || c == ' '))
                return;
        }
        if (depth != 0 || quoted) bad("unbalanced brackets");
    }

    Sharding one() {
        need("{");
        space();
        Sharding s;
        if (p_ < v_.size() && v_[p_] == '{') {  // a tuple
            s.kind = Sharding::Kind::Tuple;
            do s.elements.push_back(one());
            while (eat(","));
            need("}");
            return s;
        }
        if (eat("}")) {  // the empty tuple
            s.kind = Sharding::Kind::Tuple;
            return s;
        }
        std::vector<std::int64_t> dims;
        bool replicate_last = false, tiled = false;
        while (true) {
            space();
            if (eat("}")) break;
            if (eat(",")) continue;
            const std::string w = word();
            if (w.empty()) bad(fmt::format("unexpected '{}'", v_.substr(p_, 1)));
            if (whole_kind(w, s)) {
            } else if (w == "mesh") {  // Shardy's form
                mesh(s);
                return s;
            } else if (w == "devices") {
                need("=");
                tiled = true;
                s.kind = Sharding::Kind::Tiled;
                dims = bracketed('[', ']');
                if (dims.empty()) bad("devices=[] names no tile dimension");
                space();
                if (eat("<=")) {
                    iota(s, bracketed('[', ']'));
                } else {
                    while (true) {  // d0,d1,... up to the next flag
                        s.devices.push_back(number());
                        const std::size_t save = p_;
                        if (!eat(",")) break;
                        space();
                        if (p_ >= v_.size() ||
                            std::isdigit(static_cast<unsigned char>(v_[p_])) == 0) {
                            p_ = save;
                            break;
                        }
                    }
                }
            } else if (w == "last_tile_dim_replicate") {
                replicate_last = true;
            } else if (w == "last_tile_dims") {
                need("=");
                skip_value();
                s.kind = Sharding::Kind::Other;
                s.other = "a subgroup sharding (last_tile_dims)";
            } else if (w == "unknown") {
                s.kind = Sharding::Kind::Other;
                s.other = "an unknown sharding";
            } else {  // metadata={...}, shard_as / shard_like N, ...: not read
                if (eat("="))
                    skip_value();
                else {
                    space();
                    if (p_ < v_.size() && std::isdigit(static_cast<unsigned char>(v_[p_])) != 0)
                        number();
                }
            }
        }
        if (tiled && s.kind != Sharding::Kind::Other) {
            std::int64_t prod = 1;
            for (std::int64_t d : dims) {
                if (d <= 0) bad("a tile dimension of 0");
                prod *= d;
                if (prod > (std::int64_t{1} << 40)) bad("too many tiles");
            }
            if (replicate_last) {
                s.replicate = dims.back();
                dims.pop_back();
            }
            s.tile = dims;
            if (static_cast<std::int64_t>(s.devices.size()) != prod)
                bad(fmt::format("the tile assignment [{}] has {} tiles but {} devices are listed",
                                fmt::join(dims, ","), prod, s.devices.size()));
            if (prod != parts_)
                bad(fmt::format("it names {} devices but num_partitions is {}", prod, parts_));
            check_devices(s);
        }
        return s;
    }

    // Shardy's form as XLA prints it: {mesh['x'=4,'y'=2], [{'x'}, {}]} (each dimension
    // names the axes it is split over, major first; '?' marks an open dimension), or
    // {mesh[...], replicated} / manual / maximal device=k. The tile assignment is the mesh's
    // devices (iota, or device_ids=[...]) with the axes of dimension 0, 1, ... first and the
    // unused axes last as copies (last_tile_dim_replicate). Sub-axes ('x':(1)2) and trailing
    // unreduced= / replicated= lists are not read: Kind::Other. Reads through the closing brace.
    void mesh(Sharding& s) {
        need("[");
        std::vector<std::string> names;
        std::vector<std::int64_t> sizes, ids;
        if (!eat("]")) {
            do {
                space();
                if (eat("device_ids")) {
                    need("=");
                    ids = bracketed('[', ']');
                    continue;
                }
                names.push_back(quoted());
                need("=");
                sizes.push_back(number());
            } while (eat(","));
            need("]");
        }
        std::int64_t n = 1;
        for (std::int64_t z : sizes) {
            if (z <= 0) bad("a mesh axis of size 0");
            n *= z;
            if (n > (std::int64_t{1} << 24)) bad("too many devices");
        }
        need(",");
        space();
        std::vector<std::vector<std::size_t>> dims;
        bool other = false;
        if (eat("[")) {
            s.kind = Sharding::Kind::Tiled;
            if (!eat("]")) {
                do {
                    need("{");
                    dims.emplace_back();
                    while (!eat("}")) {
                        if (eat("?") || eat(",")) continue;
                        const std::string a = quoted();
                        space();
                        if (p_ < v_.size() && v_[p_] == ':') {  // a sub-axis
                            other = true;
                            while (p_ < v_.size() && v_[p_] != ',' && v_[p_] != '}') ++p_;
                            continue;
                        }
                        const auto it = std::find(names.begin(), names.end(), a);
                        if (it == names.end()) bad(fmt::format("axis '{}' is not in the mesh", a));
                        dims.back().push_back(static_cast<std::size_t>(it - names.begin()));
                    }
                } while (eat(","));
                need("]");
            }
        } else {
            const std::string w = word();
            if (!whole_kind(w, s)) bad(fmt::format("unexpected '{}' after the mesh", w));
        }
        // Trailing fields (unreduced={...}, replicated={...}, metadata=...) up to the brace.
        while (!eat("}")) {
            if (eat(",")) continue;
            const std::string w = word();
            if (w.empty()) bad(fmt::format("unexpected '{}'", v_.substr(p_, 1)));
            if (w != "metadata") other = true;
            if (eat("=")) skip_value();
        }
        if (other) {
            s.kind = Sharding::Kind::Other;
            s.other = "a Shardy sharding with sub-axes or unreduced / replicated axes";
            return;
        }
        if (s.kind != Sharding::Kind::Tiled) return;
        if (n != parts_)
            bad(fmt::format("its mesh has {} devices but num_partitions is {}", n, parts_));
        std::vector<bool> used(names.size(), false);
        std::vector<std::int64_t> order;
        for (const auto& d : dims) {
            std::int64_t t = 1;
            for (std::size_t a : d) {
                if (used[a]) bad(fmt::format("axis '{}' is used twice", names[a]));
                used[a] = true;
                order.push_back(static_cast<std::int64_t>(a));
                t *= sizes[a];
            }
            s.tile.push_back(t);
        }
        for (std::size_t a = 0; a < names.size(); ++a)
            if (!used[a]) {
                order.push_back(static_cast<std::int64_t>(a));
                s.replicate *= sizes[a];
            }
        if (names.empty()) {
            s.kind = Sharding::Kind::Replicated;
            s.tile.clear();
            return;
        }
        iota_of(s, sizes, order);
        if (!ids.empty()) {
            if (static_cast<std::int64_t>(ids.size()) != n)
                bad(fmt::format("device_ids lists {} devices for a mesh of {}", ids.size(), n));
            for (auto& d : s.devices) d = ids[static_cast<std::size_t>(d)];
        }
        check_devices(s);
    }

    std::string quoted() {
        space();
        if (p_ >= v_.size() || v_[p_] != '\'') bad("expected a quoted axis name");
        const std::size_t e = v_.find('\'', p_ + 1);
        if (e == std::string_view::npos) bad("an axis name is not closed");
        std::string a(v_.substr(p_ + 1, e - p_ - 1));
        p_ = e + 1;
        return a;
    }

    void check_devices(const Sharding& s) const {
        std::vector<bool> seen(static_cast<std::size_t>(parts_), false);
        for (std::int64_t d : s.devices) {
            if (d >= parts_) bad(fmt::format("device {} but num_partitions is {}", d, parts_));
            if (seen[static_cast<std::size_t>(d)]) bad(fmt::format("device {} appears twice", d));
            seen[static_cast<std::size_t>(d)] = true;
        }
    }

    // <=[reshape]T(perm): iota(N) reshaped, transposed, flattened.
    void iota(Sharding& s, const std::vector<std::int64_t>& reshape) {
        std::vector<std::int64_t> perm;
        if (eat("T")) perm = bracketed('(', ')');
        iota_of(s, reshape, perm);
    }

    void iota_of(Sharding& s, const std::vector<std::int64_t>& reshape,
                 std::vector<std::int64_t> perm) {
        std::int64_t n = 1;
        for (std::int64_t d : reshape) {
            if (d <= 0) bad("an iota dimension of 0");
            n *= d;
            if (n > (std::int64_t{1} << 24)) bad("too many devices");
        }
        const std::size_t r = reshape.size();
        if (perm.empty())
            for (std::size_t i = 0; i < r; ++i) perm.push_back(static_cast<std::int64_t>(i));
        std::vector<std::int64_t> sorted = perm;
        std::sort(sorted.begin(), sorted.end());
        for (std::size_t i = 0; i < sorted.size(); ++i)
            if (sorted.size() != r || sorted[i] != static_cast<std::int64_t>(i))
                bad("T(...) is not a permutation of the iota dimensions");
        std::vector<std::int64_t> tdims(r), stride(r, 1);
        for (std::size_t i = r; i-- > 1;) stride[i - 1] = stride[i] * reshape[i];
        for (std::size_t i = 0; i < r; ++i) tdims[i] = reshape[static_cast<std::size_t>(perm[i])];
        std::vector<std::int64_t> c(r, 0);
        for (std::int64_t f = 0; f < n; ++f) {
            std::int64_t src = 0;
            for (std::size_t i = 0; i < r; ++i)
                src += c[i] * stride[static_cast<std::size_t>(perm[i])];
            s.devices.push_back(src);
            for (std::size_t i = r; i-- > 0;) {
                if (++c[i] < tdims[i]) break;
                c[i] = 0;
            }
        }
    }

    std::string_view v_;
    const HloModule& m_;
    std::uint32_t at_;
    std::int64_t parts_;
    std::size_t p_ = 0;
};

}  // namespace

Sharding parse_sharding(std::string_view v, const HloModule& m, std::uint32_t at,
                        std::int64_t partitions) {
    return ShardingReader(v, m, at, partitions).read();
}

bool has_tiled_sharding(const HloModule& m) {
    for (const auto& c : m.computations)
        for (const auto& in : c.instrs)
            if (const HloAttr* a = in.attr("sharding"))  // HloSharding's or Shardy's form
                if (a->value.find("devices=") != std::string_view::npos ||
                    a->value.find("{'") != std::string_view::npos)
                    return true;
    return false;
}

}  // namespace tpusim::hlo_spmd
