// XLA's HloSharding as HLO text writes it (xla/hlo/ir/hlo_sharding.cc, ToString; the parser's
// ParseSharding in xla/hlo/parser/hlo_parser.cc): {replicated}, {manual}, {maximal device=k},
// {devices=[a,b,...]d0,d1,...} and the iota form {devices=[a,b]<=[n]} or <=[x,y]T(1,0), with
// last_tile_dim_replicate, and tuples {{...}, {...}}. Shardy's {mesh[...], ...} form and
// subgroup shardings (last_tile_dims={manual}) are kept as Kind::Other.
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
    void space() {
        while (p_ < v_.size() && std::isspace(static_cast<unsigned char>(v_[p_])) != 0) ++p_;
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
            } else if (w == "mesh") {  // Shardy's form: not read
                s.kind = Sharding::Kind::Other;
                s.other = "a Shardy mesh sharding";
                int depth = 0;  // the rest of this sharding, up to its closing brace
                for (; p_ < v_.size(); ++p_) {
                    const char c = v_[p_];
                    if (c == '{' || c == '[' || c == '(') ++depth;
                    if (c == '}' || c == ']' || c == ')') {
                        if (depth == 0) break;
                        --depth;
                    }
                }
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
            std::vector<bool> seen(static_cast<std::size_t>(parts_), false);
            for (std::int64_t d : s.devices) {
                if (d >= parts_) bad(fmt::format("device {} but num_partitions is {}", d, parts_));
                if (seen[static_cast<std::size_t>(d)])
                    bad(fmt::format("device {} appears twice", d));
                seen[static_cast<std::size_t>(d)] = true;
            }
        }
        return s;
    }

    // <=[reshape]T(perm): iota(N) reshaped, transposed, flattened.
    void iota(Sharding& s, const std::vector<std::int64_t>& reshape) {
        std::vector<std::int64_t> perm;
        if (eat("T")) perm = bracketed('(', ')');
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
            if (const HloAttr* a = in.attr("sharding"))
                if (a->value.find("devices=") != std::string_view::npos) return true;
    return false;
}

}  // namespace tpusim::hlo_spmd
