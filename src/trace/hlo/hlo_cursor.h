#pragma once
// The token level of the HLO reader: a cursor over the module text that skips white space and
// comments, reads names, numbers, strings, balanced groups and shapes, and fails with the
// position of what it could not read.
#include <cstdint>
#include <string>
#include <string_view>

#include "tpusim/trace/hlo.h"

namespace tpusim::hlo_detail {

// Array dimensions and element counts beyond these are "huge" (bad input, not a tensor).
inline constexpr std::int64_t kMaxDim = std::int64_t{1} << 40;
inline constexpr std::int64_t kMaxElements = std::int64_t{1} << 62;
// Tuple shapes nest at most this deep (XLA's own modules nest a few levels): the reader
// recurses once per level, so the cap bounds its stack (docs/limits.md).
inline constexpr int kMaxTupleDepth = 64;

// The element type named `name`, or nullptr.
const HloType* find_type(std::string_view name);

class Cursor {
 public:
    Cursor(std::string_view text, const HloModule& m) : text_(text), m_(m) {}

    std::uint32_t pos() const { return static_cast<std::uint32_t>(p_); }
    void seek(std::size_t p) { p_ = p; }
    bool at_end() {
        skip_space();
        return p_ >= text_.size();
    }
    // Next significant character (after white space and comments), '\0' at the end.
    char peek() {
        skip_space();
        return p_ < text_.size() ? text_[p_] : '\0';
    }
    char peek_raw() const { return p_ < text_.size() ? text_[p_] : '\0'; }
    bool accept(char c) {
        if (peek() != c) return false;
        ++p_;
        return true;
    }
    void expect(char c, const char* what);
    bool accept_word(std::string_view w);  // a whole name equal to w

    // A name: [%]letters, digits, '_', '.', '-', '$'; returned without '%'. Empty if none.
    std::string_view name();
    std::string_view expect_name(const char* what);
    std::int64_t integer(const char* what);  // optionally signed decimal
    std::string_view string_literal();       // "..." with escapes, returned with its quotes
    // A balanced (...), [...] or {...} starting at the cursor, returned whole.
    std::string_view group();
    // An attribute value: glued atoms (groups, strings, runs of other characters) up to white
    // space, ',' or an unmatched closing bracket.
    std::string_view value();
    HloShape shape();

    [[noreturn]] void fail(const std::string& what) const { m_.fail(pos(), what); }
    [[noreturn]] void fail_at(std::size_t p, const std::string& what) const {
        m_.fail(static_cast<std::uint32_t>(p), what);
    }
    std::string found() const;  // what is at the cursor, for messages

 private:
    void skip_space();
    void layout(HloShape& s);

    std::string_view text_;
    const HloModule& m_;
    std::size_t p_ = 0;
    int shape_depth_ = 0;  // tuple shapes open at the cursor
};

// Helpers for attribute values (hlo_attrs.cpp). Each throws through m.fail at `at`.
std::vector<std::int64_t> int_list(std::string_view v, const HloModule& m, std::uint32_t at);
std::vector<std::vector<std::int64_t>> replica_groups(std::string_view v, const HloModule& m,
                                                      std::uint32_t at);
std::vector<std::pair<std::int64_t, std::int64_t>> pairs_list(std::string_view v,
                                                              const HloModule& m, std::uint32_t at);

}  // namespace tpusim::hlo_detail
