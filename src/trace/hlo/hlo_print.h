#pragma once
// The HLO text writer's pieces (private to src/trace/hlo), shared by the writer
// (hlo_print.cpp), the defusion of another backend's module (hlo_defuse.cpp) and the fusion pass
// written as fusions (hlo_after_passes.cpp). Named, not anonymous: the layer compiles in unity
// batches.
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "hlo_import.h"

namespace tpusim::hlo_print {

// The frontend attribute that marks the fusions apply_fusion_pass makes: a module whose fusions
// carry it is tpusim's own, not another backend's (is_foreign_fused).
inline constexpr const char* kTpusimFusion = "tpusim_fusion_pass";

void put_shape(std::string& out, const HloShape& s);
std::string shape_text(const HloShape& s);

// One instruction line, "  [ROOT ]%name = shape opcode(operands), attrs".
struct Line {
    std::string name;
    std::string body;  // "= shape opcode(...)..." without the name
    bool root = false;
    bool parameter = false;
    std::int64_t parameter_number = 0;
    std::string shape;
};
// The line of `in` named `name` reading `operands` (written references), with its own shape
// unless `shape` is given.
Line make_line(const HloInstr& in, std::string name, const std::vector<std::string>& operands,
               std::string shape = {});
// A computation: "[ENTRY ]%name (params) -> result {", its lines, "}".
void put_computation(std::string& out, std::string_view name, bool entry,
                     const std::vector<Line>& lines);
// The HloModule line with its attributes as written.
void put_header(std::string& out, const HloModule& m);
// "%name", or "%name#i" for element i of a tuple.
std::string operand_ref(std::string_view name, std::int32_t tuple_index);
// Written in place (calls={...}): printed inside its attribute, not on its own.
bool in_place(const HloComputation& c);
// The computation's instructions as written.
std::vector<Line> plain_lines(const HloComputation& c);
// Whether the shape or one of its elements has a TPU tiling.
bool any_tiled(const HloShape& s);
// A name not in `used`, `base` if free; added to `used`.
std::string fresh(std::unordered_set<std::string>& used, const std::string& base);

}  // namespace tpusim::hlo_print
