#pragma once
// The producers of an HLO value during import (hlo_importer.h): the trace ops that produce
// it, one Value per element for tuples so that get-tuple-element follows the element's
// producers only.
#include <cstdint>
#include <vector>

namespace tpusim::hlo_detail {

struct Value {
    std::vector<std::uint32_t> ops;
    std::vector<Value> elems;
    bool tuple = false;
    std::uint32_t nodes = 1, depth = 0;  // of the tree of elements: bounded (tuple_of)
};

// A tuple instruction's value. Tuples of tuples could otherwise grow without bound (each level
// copying the one below twice doubles it); past a small tree the producers are merged into one
// flat value, which only makes get-tuple-element wait for more producers than it needs.
constexpr std::uint32_t kMaxValueNodes = 4096, kMaxValueDepth = 32;

// Appends every producer of `v` and of its elements to `out`.
void flatten(const Value& v, std::vector<std::uint32_t>& out);
// Drops repeated entries, keeping the first of each.
void unique_keep_order(std::vector<std::uint32_t>& v);
// One flat value with the sorted, distinct producers of all of `vs`.
Value merged(const std::vector<const Value*>& vs);
// Producers in [from, to) move down by `delta` (ops dropped from the trace before them).
void remap(Value& v, std::uint32_t from, std::uint32_t to, std::uint32_t delta);

}  // namespace tpusim::hlo_detail
