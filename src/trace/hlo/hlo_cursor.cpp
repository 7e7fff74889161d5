// Token level of the HLO reader (hlo_cursor.h).
#include "hlo_cursor.h"

#include <fmt/format.h>

#include <array>
#include <cctype>

namespace tpusim::hlo_detail {

namespace {

// clang-format off
constexpr std::array<HloType, 31> kTypes = {{
    {"pred", 8, false}, {"s2", 2, false}, {"s4", 4, false}, {"s8", 8, false},
    {"s16", 16, false}, {"s32", 32, false}, {"s64", 64, false}, {"u2", 2, false},
    {"u4", 4, false}, {"u8", 8, false}, {"u16", 16, false}, {"u32", 32, false},
    {"u64", 64, false}, {"f16", 16, true}, {"bf16", 16, true}, {"f32", 32, true},
    {"f64", 64, true}, {"c64", 64, true}, {"c128", 128, true}, {"f4e2m1fn", 4, true},
    {"f8e5m2", 8, true}, {"f8e4m3", 8, true}, {"f8e4m3fn", 8, true}, {"f8e4m3b11fnuz", 8, true},
    {"f8e5m2fnuz", 8, true}, {"f8e4m3fnuz", 8, true}, {"f8e3m4", 8, true},
    {"f8e8m0fnu", 8, true}, {"token", 0, false}, {"opaque", 0, false}, {"s1", 1, false},
}};
// clang-format on

bool name_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-' ||
           c == '$';
}

}  // namespace

const HloType* find_type(std::string_view name) {
    for (const auto& t : kTypes)
        if (t.name == name) return &t;
    return nullptr;
}

void Cursor::skip_space() {
    while (p_ < text_.size()) {
        const char c = text_[p_];
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
            ++p_;
        } else if (c == '/' && p_ + 1 < text_.size() && text_[p_ + 1] == '/') {
            while (p_ < text_.size() && text_[p_] != '\n') ++p_;
        } else if (c == '/' && p_ + 1 < text_.size() && text_[p_ + 1] == '*') {
            const std::size_t end = text_.find("*/", p_ + 2);
            if (end == std::string_view::npos) fail("unterminated /* comment");
            p_ = end + 2;
        } else {
            return;
        }
    }
}

std::string Cursor::found() const {
    if (p_ >= text_.size()) return "the end of the file";
    std::size_t n = 0;
    while (p_ + n < text_.size() && n < 24 && text_[p_ + n] != '\n' &&
           (n == 0 || name_char(text_[p_ + n])))
        ++n;
    return fmt::format("\"{}\"", text_.substr(p_, n));
}

void Cursor::expect(char c, const char* what) {
    if (!accept(c)) fail(fmt::format("expected '{}' {}, found {}", c, what, found()));
}

bool Cursor::accept_word(std::string_view w) {
    const std::size_t save = p_;
    skip_space();
    if (text_.substr(p_, w.size()) == w &&
        (p_ + w.size() >= text_.size() || !name_char(text_[p_ + w.size()]))) {
        p_ += w.size();
        return true;
    }
    p_ = save;
    return false;
}

std::string_view Cursor::name() {
    skip_space();
    std::size_t q = p_;
    if (q < text_.size() && text_[q] == '%') ++q;
    const std::size_t start = q;
    while (q < text_.size() && name_char(text_[q])) ++q;
    if (q == start) return {};
    p_ = q;
    return text_.substr(start, q - start);
}

std::string_view Cursor::expect_name(const char* what) {
    const std::string_view n = name();
    if (n.empty()) fail(fmt::format("expected {}, found {}", what, found()));
    return n;
}

std::int64_t Cursor::integer(const char* what) {
    skip_space();
    std::size_t q = p_;
    bool neg = false;
    if (q < text_.size() && (text_[q] == '-' || text_[q] == '+')) neg = text_[q++] == '-';
    if (q >= text_.size() || !std::isdigit(static_cast<unsigned char>(text_[q])))
        fail(fmt::format("expected {} (an integer), found {}", what, found()));
    std::int64_t v = 0;
    while (q < text_.size() && std::isdigit(static_cast<unsigned char>(text_[q]))) {
        if (v > (kMaxElements - 9) / 10) fail(fmt::format("{} is absurdly large", what));
        v = v * 10 + (text_[q++] - '0');
    }
    p_ = q;
    return neg ? -v : v;
}

std::string_view Cursor::string_literal() {
    skip_space();
    const std::size_t start = p_;
    if (peek_raw() != '"') fail(fmt::format("expected a string, found {}", found()));
    std::size_t q = p_ + 1;
    while (q < text_.size() && text_[q] != '"') q += text_[q] == '\\' ? 2 : 1;
    if (q >= text_.size()) fail("unterminated string (missing '\"')");
    p_ = q + 1;
    return text_.substr(start, p_ - start);
}

std::string_view Cursor::group() {
    skip_space();
    const std::size_t start = p_;
    std::string stack;
    std::size_t q = p_;
    do {
        if (q >= text_.size())
            fail_at(start, fmt::format("unbalanced '{}': the file ends before its '{}'",
                                       text_[start], stack.back()));
        const char c = text_[q];
        if (c == '"') {
            p_ = q;
            string_literal();
            q = p_;
            continue;
        }
        if (c == '(') stack.push_back(')');
        if (c == '[') stack.push_back(']');
        if (c == '{') stack.push_back('}');
        if (c == ')' || c == ']' || c == '}') {
            if (stack.empty() || stack.back() != c) {
                p_ = q;
                fail(fmt::format("unbalanced brackets: expected '{}', found '{}'",
                                 stack.empty() ? ' ' : stack.back(), c));
            }
            stack.pop_back();
        }
        ++q;
    } while (!stack.empty());
    p_ = q;
    return text_.substr(start, q - start);
}

std::string_view Cursor::value() {
    skip_space();
    const std::size_t start = p_;
    while (p_ < text_.size()) {
        const char c = text_[p_];
        if (c == '(' || c == '[' || c == '{') {
            group();
        } else if (c == '"') {
            string_literal();
        } else if (c == ',' || c == ')' || c == ']' || c == '}' || c == ' ' || c == '\n' ||
                   c == '\t' || c == '\r') {
            break;
        } else {
            ++p_;
        }
    }
    if (p_ == start) fail(fmt::format("expected an attribute value, found {}", found()));
    // Mesh replica groups are two parts: mesh['x'=4,'y'=2] {'x'}.
    if (text_.substr(start, 5) == "mesh[") {
        std::size_t q = p_;
        while (q < text_.size() && text_[q] == ' ') ++q;
        if (q < text_.size() && text_[q] == '{') {
            p_ = q;
            group();
        }
    }
    return text_.substr(start, p_ - start);
}

HloShape Cursor::shape() {
    HloShape s;
    if (accept('(')) {
        if (shape_depth_ >= kMaxTupleDepth)
            fail(fmt::format("tuple shapes nested deeper than {} levels", kMaxTupleDepth));
        s.tuple = true;
        if (accept(')')) return s;
        ++shape_depth_;
        do {
            s.elements.push_back(shape());
        } while (accept(','));
        --shape_depth_;
        expect(')', "to close a tuple shape");
        return s;
    }
    const std::size_t at = pos();
    const std::string_view tn = name();
    const HloType* t = find_type(tn);
    if (!t)
        fail_at(at, fmt::format("expected a shape (an element type such as f32 or bf16, or a "
                                "tuple), found {}",
                                tn.empty() ? found() : "\"" + std::string(tn) + "\""));
    s.type = *t;
    if (peek_raw() != '[') fail(fmt::format("expected '[' after the element type {}", tn));
    ++p_;
    std::int64_t elements = 1;
    if (!accept(']')) {
        do {
            if (accept('?')) {  // unbounded dynamic: its size is unknown, counted as 1
                s.dims.push_back(1);
                continue;
            }
            if (accept('<')) expect('=', "after '<' in a bounded dimension");
            const std::size_t at = pos();
            const std::int64_t d = integer("a dimension");
            if (d < 0) fail_at(at, fmt::format("negative dimension {}", d));
            if (d > kMaxDim)
                fail_at(at, fmt::format("dimension {} is absurdly large (at most 2^40)", d));
            if (d > 0 && elements > kMaxElements / d) fail("the shape has more than 2^62 elements");
            elements *= d;
            s.dims.push_back(d);
        } while (accept(','));
        expect(']', "to close the dimensions");
    }
    if (peek_raw() == '{') layout(s);
    s.text = text_.substr(static_cast<std::size_t>(tn.data() - text_.data()),
                          p_ - static_cast<std::size_t>(tn.data() - text_.data()));
    return s;
}

// {minor_to_major[:T(..)(..)S(n)...]}: the memory space and whether a tiling is written (a
// layout the TPU compiler chose) matter to the timing; the rest is checked for balance.
void Cursor::layout(HloShape& s) {
    const std::size_t start = p_;
    const std::string_view g = group();
    const std::size_t colon = g.find(':');
    std::int64_t cur = -1;
    for (std::size_t i = 1; i + 1 <= g.size() && i <= std::min(colon, g.size() - 1); ++i) {
        const char c = i < colon && i + 1 < g.size() ? g[i] : ',';
        if (std::isdigit(static_cast<unsigned char>(c)) != 0) {
            cur = (cur < 0 ? 0 : cur * 10) + (c - '0');
            if (cur >= static_cast<std::int64_t>(s.dims.size()))
                fail_at(start + i, "layout dimension outside the shape");
        } else if (c == ',' || c == ' ') {
            if (cur >= 0) s.minor_to_major.push_back(cur);
            cur = -1;
        } else {
            fail_at(start + i,
                    "expected the layout: minor-to-major dimensions, then "
                    "':' and tiling or memory space, in {...}");
        }
    }
    if (colon == std::string_view::npos) return;
    for (std::size_t i = colon; i + 2 < g.size(); ++i) {
        if (g[i] == 'T' && g[i + 1] == '(' && (g[i - 1] == ')' || g[i - 1] == ':')) s.tiled = true;
        if (g[i] == 'S' && g[i + 1] == '(' && (g[i - 1] == ')' || g[i - 1] == ':')) {
            int v = 0;
            std::size_t j = i + 2;
            while (j < g.size() && std::isdigit(static_cast<unsigned char>(g[j])) && v <= 255)
                v = v * 10 + (g[j++] - '0');
            if (j >= g.size() || g[j] != ')' || v > 255)
                fail_at(start + j, "expected S(<memory space>) in the layout");
            s.memory_space = v;
        }
    }
}

}  // namespace tpusim::hlo_detail
