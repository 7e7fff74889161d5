// Expansion of a lowered vector loop into instructions, the reference simulation, and the
// steady-state fast path that the program layer calls for every vector op chunk.
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "tpusim/program/vector_lowering.h"

namespace tpusim {

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

void run_group(VpuTiming& m, const VectorLoop& loop, std::int64_t first, int count) {
    for (const VInstr& in : emit_group(loop, first, count)) m.issue(in);
}

// Every config value that can change the lowering or the timing, in visit() order: the cache
// key, so that two configs share an entry only when they would simulate identically.
class KeyCollector : public ConfigVisitor {
 public:
    std::vector<double> values;
    void value(const char*, std::int64_t& v, Limits, const char*, const char*) override {
        values.push_back(static_cast<double>(v));
    }
    void value(const char*, double& v, Limits, const char*, const char*) override {
        values.push_back(v);
    }
    void value(const char*, bool& v, const char*) override { values.push_back(v ? 1 : 0); }
    void value(const char*, std::string&, const std::vector<std::string>&, const char*) override {}

 protected:
    bool begin_section(const char*, const char*) override { return true; }
    void end_section() override {}
};

// The steady state of one loop body under one config: machine snapshots after the prologue
// and each of the first groups, and (once found) a period of `period` groups from group
// `start` after which the relative state repeats, adding `delta` cycles and `delta_counts`.
struct SteadyState {
    std::vector<VpuTiming> snapshots;  // snapshots[g]: after the prologue and g full groups
    bool found = false;
    std::size_t start = 0, period = 0;
    Cycle delta = 0;
    VpuCounters delta_counts;
};

// Groups simulated while looking for a repeating state before giving up on extrapolation
// (then the whole loop is simulated, which is exact but slower).
constexpr std::size_t kMaxProbeGroups = 64;
constexpr std::size_t kMaxPeriod = 8;

std::shared_ptr<const SteadyState> find_steady_state(const VectorLoop& loop, const VpuConfig& vpu,
                                                     const VmemConfig& vmem) {
    auto st = std::make_shared<SteadyState>();
    VpuTiming m(vpu, vmem);
    for (const VInstr& in : loop.prologue) m.issue(in);
    st->snapshots.push_back(m);
    std::vector<std::vector<std::int64_t>> states{m.relative_state()};
    for (std::size_t g = 1; g <= kMaxProbeGroups; ++g) {
        run_group(m, loop, 0, loop.unroll);  // groups are identical but for VMEM addresses
        st->snapshots.push_back(m);
        states.push_back(m.relative_state());
        for (std::size_t p = 1; p <= kMaxPeriod && p <= g; ++p) {
            if (states[g] == states[g - p]) {
                st->found = true;
                st->start = g - p;
                st->period = p;
                st->delta = m.issue_cycle() - st->snapshots[g - p].issue_cycle();
                st->delta_counts = m.counters();
                st->delta_counts -= st->snapshots[g - p].counters();
                return st;
            }
        }
    }
    return st;
}

struct CacheKey {
    std::string body;  // op (and cols for row ops), element sizes
    std::vector<double> config;
    bool operator<(const CacheKey& o) const {
        return std::tie(body, config) < std::tie(o.body, o.config);
    }
};

std::shared_ptr<const SteadyState> cached_steady_state(const VectorOpDesc& d, const VectorLoop& loop,
                                                       const VpuConfig& vpu,
                                                       const VmemConfig& vmem) {
    static std::mutex mu;
    static std::map<CacheKey, std::shared_ptr<const SteadyState>> cache;
    KeyCollector kc;
    VpuConfig v = vpu;
    VmemConfig w = vmem;
    v.visit(kc);
    w.visit(kc);
    CacheKey key{d.op + "/" + std::to_string(loop.row_op ? d.cols : 0) + "/" +
                     std::to_string(d.in_bytes) + "/" + std::to_string(d.out_bytes),
                 std::move(kc.values)};
    {
        std::lock_guard<std::mutex> lock(mu);
        if (auto it = cache.find(key); it != cache.end()) return it->second;
    }
    auto st = find_steady_state(loop, vpu, vmem);
    std::lock_guard<std::mutex> lock(mu);
    if (cache.size() > 4096) cache.clear();  // bound memory over long sweeps
    cache.emplace(std::move(key), st);
    return st;
}

}  // namespace

std::vector<VInstr> emit_group(const VectorLoop& loop, std::int64_t first, int count) {
    Bytes load_bytes = 0, store_bytes = 0;
    for (const VInstr& in : loop.body) {
        if (in.op == VOp::Load) load_bytes += in.bytes;
        if (in.op == VOp::Store) store_bytes += in.bytes;
    }
    std::vector<VInstr> out;
    out.reserve(loop.body.size() * static_cast<std::size_t>(count));
    for (const VInstr& in : loop.body) {
        for (int s = 0; s < count; ++s) {
            VInstr x = in;
            const auto off = static_cast<std::int16_t>(s * loop.body_regs);
            if (x.dst >= loop.const_regs) x.dst = static_cast<std::int16_t>(x.dst + off);
            for (auto& r : x.src) {
                if (r >= loop.const_regs) r = static_cast<std::int16_t>(r + off);
            }
            const auto iter = static_cast<Addr>(first + s);
            if (x.op == VOp::Load) x.addr += iter * load_bytes;
            if (x.op == VOp::Store) x.addr += iter * store_bytes;
            out.push_back(x);
        }
    }
    return out;
}

VectorProgram lower_vector_op(const VectorOpDesc& d, const VpuConfig& vpu) {
    const VectorLoop loop = lower_vector_loop(d, vpu);
    VectorProgram p;
    p.instrs = loop.prologue;
    for (std::int64_t i = 0; i < loop.iterations; i += loop.unroll) {
        const int n = static_cast<int>(std::min<std::int64_t>(loop.unroll, loop.iterations - i));
        std::vector<VInstr> g = emit_group(loop, i, n);
        p.instrs.insert(p.instrs.end(), g.begin(), g.end());
    }
    return p;
}

VectorOpCost simulate_vector_op(const VectorOpDesc& d, const VpuConfig& vpu,
                                const VmemConfig& vmem) {
    VpuTiming m(vpu, vmem);
    m.run(lower_vector_op(d, vpu));
    return to_cost(m.finish_cycle(), m.counters());
}

VectorOpCost vector_op_cost(const VectorOpDesc& d, const VpuConfig& vpu, const VmemConfig& vmem) {
    const VectorLoop loop = lower_vector_loop(d, vpu);
    const auto st = cached_steady_state(d, loop, vpu, vmem);
    const auto full = static_cast<std::size_t>(loop.iterations / loop.unroll);
    const int tail = static_cast<int>(loop.iterations % loop.unroll);

    // Start from the snapshot whose state equals the one after `full` groups up to a shift of
    // `periods` x delta cycles (exact: equal relative states evolve identically).
    std::size_t from = full;
    std::uint64_t periods = 0;
    if (full >= st->snapshots.size()) {
        if (!st->found) {
            VpuTiming m = st->snapshots.back();  // no steady state found: simulate the rest
            for (std::size_t g = st->snapshots.size() - 1; g < full; ++g) {
                run_group(m, loop, static_cast<std::int64_t>(g) * loop.unroll, loop.unroll);
            }
            if (tail) run_group(m, loop, static_cast<std::int64_t>(full) * loop.unroll, tail);
            return to_cost(m.finish_cycle(), m.counters());
        }
        periods = (full - st->start) / st->period;
        from = st->start + (full - st->start) % st->period;
    }
    VpuTiming m = st->snapshots[from];
    if (tail) run_group(m, loop, static_cast<std::int64_t>(full) * loop.unroll, tail);
    VpuCounters c = m.counters();
    c += st->delta_counts.scaled(periods);
    return to_cost(m.finish_cycle() + periods * st->delta, c);
}

}  // namespace tpusim
