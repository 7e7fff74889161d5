// Expansion of a lowered vector loop into instructions, the reference simulation, and the
// steady-state fast path that the tensor core calls for every vector op chunk.
#include "tpusim/arch/vpu/vector_cost.h"

#include <iterator>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>

#include "tpusim/config/tpu_config.h"

namespace tpusim {

// The steady state of one loop under one config. snapshots[k]: the VPU after the prologue
// and chunks 0 .. k-1 of the endless listing. Once found, the state relative to the front
// cycle after `start + period` chunks equals the one after `start`, `delta` cycles and
// `delta_counts` later; the period is a multiple of the register rotation and both points lie
// past the pipeline fill, so the listing ahead repeats too and the VPU evolves identically
// from both.
struct VectorSteadyState {
    VectorLoop loop;
    std::vector<VpuTiming> snapshots;
    bool found = false;
    std::size_t start = 0, period = 0;
    Cycle delta = 0;
    VpuCounters delta_counts;
};

namespace {

VectorOpCost to_cost(Cycle cycles, const VpuCounters& c) {
    VectorOpCost r;
    r.cycles = cycles;
    r.vmem_bytes_loaded = c.vmem_bytes_loaded;
    r.vmem_bytes_stored = c.vmem_bytes_stored;
    r.busy_cycles = c.busy_cycles;
    r.instructions = c.instructions;
    return r;
}

// Chunks are listed as for a loop that never ends: chunk g then holds the same instructions
// whatever the real iteration count N >= g + 1, so one probe serves every N.
constexpr std::int64_t kEndless = std::int64_t{1} << 40;

void run_chunk(VpuTiming& m, const VectorLoop& loop, std::int64_t g, std::int64_t iterations) {
    for (const VInstr& in : emit_chunk(loop, g, iterations)) m.issue(in);
}

// Instructions the probe may simulate while looking for a repeating state before giving up
// on extrapolation (then the rest of the loop is simulated: exact, only slower).
constexpr std::uint64_t kProbeInstructionBudget = std::uint64_t{1} << 18;

std::unique_ptr<const VectorSteadyState> find_steady_state(VectorLoop lp, const VpuConfig& vpu,
                                                           const VmemConfig& vmem) {
    auto st = std::make_unique<VectorSteadyState>();
    st->loop = std::move(lp);
    const VectorLoop& loop = st->loop;
    VpuTiming m(vpu, vmem);
    for (const VInstr& in : loop.prologue) m.issue(in);
    st->snapshots.push_back(m);
    // Only from snapshot `stages - 1` on does every chunk ahead hold all stages. The chunk
    // index modulo the register rotation is part of the key: equal keys mean equal listings
    // ahead as well as equal machine states.
    const auto fill = static_cast<std::size_t>(loop.stages() - 1);
    std::map<std::vector<std::int64_t>, std::size_t> seen;
    for (std::size_t k = 1;; ++k) {
        run_chunk(m, loop, static_cast<std::int64_t>(k) - 1, kEndless);
        st->snapshots.push_back(m);
        if (k >= fill) {
            std::vector<std::int64_t> key = m.relative_state();
            key.push_back(static_cast<std::int64_t>(k % static_cast<std::size_t>(loop.reg_sets)));
            auto [it, fresh] = seen.emplace(std::move(key), k);
            if (!fresh) {
                const std::size_t k0 = it->second;
                st->found = true;
                st->start = k0;
                st->period = k - k0;
                st->delta = m.front_cycle() - st->snapshots[k0].front_cycle();
                st->delta_counts = m.counters();
                st->delta_counts -= st->snapshots[k0].counters();
                return st;
            }
        }
        if (m.counters().instructions > kProbeInstructionBudget && k > fill) return st;
    }
}

}  // namespace

VectorOpCost simulate_vector_op(const VectorOpDesc& d, const VpuConfig& vpu,
                                const VmemConfig& vmem) {
    VpuTiming m(vpu, vmem);
    m.run(lower_vector_op(d, vpu, vmem));
    return to_cost(m.finish_cycle(), m.counters());
}

bool VectorCostModel::BodyKey::operator<(const BodyKey& o) const {
    return std::tie(op, saved_mask, row_cols, in_bytes, out_bytes) <
           std::tie(o.op, o.saved_mask, o.row_cols, o.in_bytes, o.out_bytes);
}

bool VectorCostModel::ShapeKey::operator==(const ShapeKey& o) const {
    return std::tie(op, saved_mask, rows, cols, in_bytes, out_bytes) ==
           std::tie(o.op, o.saved_mask, o.rows, o.cols, o.in_bytes, o.out_bytes);
}

std::size_t VectorCostModel::ShapeHash::operator()(const ShapeKey& k) const {
    std::uint64_t h = static_cast<std::uint64_t>(k.op) * 2 + (k.saved_mask ? 1 : 0);
    for (const std::int64_t v : {k.rows, k.cols, k.in_bytes, k.out_bytes})
        h = (h ^ static_cast<std::uint64_t>(v)) * 0x100000001b3ULL;  // FNV-1a style mixing
    return static_cast<std::size_t>(h ^ (h >> 29));
}

std::shared_ptr<VectorCostModel::Memory> VectorCostModel::shared_memory(const VpuConfig& vpu,
                                                                        const VmemConfig& vmem) {
    // The two sections as the report echoes them (config_to_json): equal text, equal configs
    // (doubles are written with every digit they need to read back the same).
    TpuConfig c;
    c.vpu = vpu;
    c.vmem = vmem;
    const nlohmann::json j = config_to_json(c);
    const std::string key = j.at("vpu").dump() + j.at("vmem").dump();
    // Per thread: a model is never shared between threads (sweeps run points on several).
    thread_local std::map<std::string, std::weak_ptr<Memory>> registry;
    for (auto it = registry.begin(); it != registry.end();)  // configs no model uses now
        it = it->second.expired() ? registry.erase(it) : std::next(it);
    std::weak_ptr<Memory>& slot = registry[key];
    std::shared_ptr<Memory> mem = slot.lock();
    if (!mem) {
        mem = std::make_shared<Memory>();
        slot = mem;
    }
    return mem;
}

VectorCostModel::VectorCostModel(const VpuConfig& vpu, const VmemConfig& vmem)
    : vpu_(vpu), vmem_(vmem), memory_(shared_memory(vpu, vmem)) {}

VectorCostModel::~VectorCostModel() = default;

const VectorSteadyState& VectorCostModel::steady_state(const VectorOpDesc& d) {
    BodyKey key{d.op, d.saved_mask, is_row_vector_op(d.op) ? d.cols : 0, d.in_bytes, d.out_bytes};
    auto& bodies = memory_->bodies;
    if (auto it = bodies.find(key); it != bodies.end()) return *it->second;
    auto st = find_steady_state(scheduled_vector_loop(d, vpu_, vmem_), vpu_, vmem_);
    // Bound memory over programs of many bodies (an entry holds the snapshots of its probe).
    if (bodies.size() >= 256) bodies.clear();
    return *bodies.emplace(key, std::move(st)).first->second;
}

const VectorOpCost& VectorCostModel::cost(const VectorOpDesc& d) {
    ShapeKey key{d.op, d.saved_mask, d.rows, d.cols, d.in_bytes, d.out_bytes};
    auto& costs = memory_->costs;
    if (auto it = costs.find(key); it != costs.end()) return it->second;
    const auto n = static_cast<std::size_t>(vector_loop_iterations(d, vpu_));  // validates d
    const VectorSteadyState* st = &steady_state(d);
    const VectorLoop& loop = st->loop;

    // The VPU after chunks 0 .. n-1 (the listing of an endless loop up to there), as a
    // snapshot `periods` steady-state periods earlier; then the drain chunks of the real loop.
    std::size_t from = n;
    std::uint64_t periods = 0;
    VpuTiming m = st->snapshots[std::min(n, st->snapshots.size() - 1)];
    if (n >= st->snapshots.size()) {
        if (st->found) {
            periods = (n - st->start) / st->period;
            from = st->start + (n - st->start) % st->period;
            m = st->snapshots[from];
        } else {
            for (std::size_t g = st->snapshots.size() - 1; g < n; ++g) {
                run_chunk(m, loop, static_cast<std::int64_t>(g), kEndless);
            }
        }
    }
    const auto k = static_cast<std::int64_t>(from);
    for (std::int64_t g = k; g < k + loop.stages() - 1; ++g) run_chunk(m, loop, g, k);
    VpuCounters c = m.counters();
    c += st->delta_counts.scaled(periods);
    return costs.emplace(key, to_cost(m.finish_cycle() + periods * st->delta, c)).first->second;
}

VectorOpCost vector_op_cost(const VectorOpDesc& d, const VpuConfig& vpu, const VmemConfig& vmem) {
    VectorCostModel model(vpu, vmem);
    return model.cost(d);
}

}  // namespace tpusim
