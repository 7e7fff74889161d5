#pragma once
// Builds one loop iteration of a lowered vector op with unlimited virtual registers, then
// allocates them onto vregs (linear scan, freed registers reused in FIFO order so that reuse
// is spread out and does not serialise neighbouring instructions).
#include <cstdint>
#include <vector>

#include "tpusim/program/vector_isa.h"
#include "tpusim/program/vector_lowering.h"

namespace tpusim {

// A value: a constant (splatted once in the prologue) or a per-iteration temporary.
struct VVal {
    int id = -1;
    bool is_const = false;
};

class BodyBuilder {
 public:
    VVal konst();
    VVal load(std::uint32_t bytes);
    // A partial (sublane-masked) load that merges `bytes` into the lanes of `prev`: the
    // result depends on prev (a row-addressed gather assembling a tile row by row).
    VVal load_into(std::uint32_t bytes, VVal prev);
    VVal op(VOp op, VVal a, VVal b = {}, VVal c = {});
    void store(VVal v, std::uint32_t bytes);

    // Allocates registers and returns the loop, not yet scheduled. Throws std::logic_error when one
    // iteration needs more vregs than exist.
    VectorLoop finish(std::int64_t iterations, std::int64_t vregs, bool row_op) const;

 private:
    struct Ins {
        VOp op;
        VVal dst;
        VVal src[3];
        std::uint32_t bytes = 0;
        Addr addr = 0;
    };
    std::vector<Ins> ins_;
    int consts_ = 0;
    int temps_ = 0;
    Addr load_off_ = 0;
    Addr store_off_ = 0;
};

}  // namespace tpusim
