#include "tpusim/arch/mxu/mxu_block.h"

#include <algorithm>
#include <stdexcept>

namespace tpusim {

namespace {

class TileBlockTimer final : public MxuBlockTimer {
 public:
    explicit TileBlockTimer(const MxuConfig& cfg) : mxu_(cfg) {}

    MxuBlockTiming run(const std::vector<MxuTile>& tiles, Cycle now,
                       const MxuBlockOperands& /*ops*/) override {
        MxuBlockTiming b;
        const Cycle busy_before = mxu_.busy_cycles();
        const auto useful_before = mxu_.useful_macs();
        const auto array_before = mxu_.padded_macs();
        const auto passes_before = mxu_.passes();
        b.first_weights_start = ~Cycle{0};
        for (const MxuTile& tile : tiles) {
            const MxuPassTiming t = mxu_.schedule(tile.pass, now, now);
            b.first_weights_start = std::min(b.first_weights_start, t.weights_start);
            b.lhs_end = t.lhs_end;
            b.results_end = t.results_end;
        }
        b.busy_cycles = mxu_.busy_cycles() - busy_before;
        b.useful_macs = mxu_.useful_macs() - useful_before;
        b.array_macs = mxu_.padded_macs() - array_before;
        b.passes = mxu_.passes() - passes_before;
        return b;
    }

 private:
    MxuTiming mxu_;
};

// Steps the PE array. The array must never run past a cycle at which a later block could be
// issued, so it is stepped only to the last pass's lhs_start (the lane issues the next block
// at lhs_end or later); the remaining drain is read from a copy of the array run to the end.
// The copy writes the results still in the array; the array itself then writes none.
class PeBlockTimer final : public MxuBlockTimer {
 public:
    explicit PeBlockTimer(const MxuConfig& cfg) : pe_(cfg) {}

    MxuBlockTiming run(const std::vector<MxuTile>& tiles, Cycle now,
                       const MxuBlockOperands& ops) override {
        if (tiles.empty()) throw std::invalid_argument("MXU block without passes");
        advance_to(now);
        const std::size_t first = pe_.passes_submitted();
        for (const MxuTile& tile : tiles) pe_.submit(tile.pass, now, now, tile_operands(tile, ops));
        const std::size_t last = pe_.passes_submitted() - 1;
        while (pe_.lhs_start(last) == MxuPeArray::kNever) pe_.step();
        MxuPeArray tail = pe_;
        pe_.discard_outputs();
        while (tail.passes_completed() <= last) tail.step();

        MxuBlockTiming b;
        b.first_weights_start = tail.timing(first).weights_start;
        b.lhs_end = tail.timing(last).lhs_end;
        b.results_end = tail.timing(last).results_end;
        for (std::size_t i = first; i <= last; ++i) {
            const MxuPassTiming& t = tail.timing(i);
            // Union of [weights_start, results_end): passes start in order, so only the part
            // after everything counted so far is new.
            const Cycle from = std::max(t.weights_start, busy_until_);
            if (t.results_end > from) b.busy_cycles += t.results_end - from;
            busy_until_ = std::max(busy_until_, t.results_end);
            const MxuPass& p = tiles[i - first].pass;
            b.useful_macs += static_cast<std::uint64_t>(p.m * p.k * p.n);
            b.array_macs += static_cast<std::uint64_t>(p.m * pe_.rows() * pe_.cols());
            ++b.passes;
        }
        return b;
    }

 private:
    void advance_to(Cycle t) {
        while (pe_.now() < t) {
            if (pe_.passes_completed() == pe_.passes_submitted() && pe_.quiescent())
                pe_.skip_to(t);
            else
                pe_.step();
        }
    }

    MxuPeArray pe_;
    Cycle busy_until_ = 0;
};

}  // namespace

MxuPeOperands tile_operands(const MxuTile& tile, const MxuBlockOperands& ops) {
    MxuPeOperands p;
    if (ops.a != nullptr && ops.b != nullptr) {
        p.weights = ops.b + tile.k0 * ops.ldb + tile.n0;
        p.ldw = ops.ldb;
        p.lhs = ops.a + tile.k0;
        p.ldl = ops.lda;
    }
    if (ops.c != nullptr) {
        p.out = ops.c + tile.n0;
        p.ldo = ops.ldc;
        p.accumulate = true;
    }
    return p;
}

std::unique_ptr<MxuBlockTimer> make_mxu_block_timer(const MxuConfig& cfg, MxuFidelity fidelity) {
    if (fidelity == MxuFidelity::Pe) return std::make_unique<PeBlockTimer>(cfg);
    return std::make_unique<TileBlockTimer>(cfg);
}

}  // namespace tpusim
