#include "tpusim/train/step_program.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "tpusim/common/error.h"

namespace tpusim {

namespace {

constexpr const char* kStepSuffix = "@step";

void add_unique(std::vector<std::size_t>& v, std::size_t x) {
    if (std::find(v.begin(), v.end(), x) == v.end()) v.push_back(x);
}

// Total length of the union of [start, end) intervals.
struct Interval {
    Cycle start, end;
};
std::vector<Interval> merged(std::vector<Interval> v) {
    std::sort(v.begin(), v.end(), [](auto& a, auto& b) { return a.start < b.start; });
    std::vector<Interval> out;
    for (const Interval& i : v) {
        if (i.end <= i.start) continue;
        if (!out.empty() && i.start <= out.back().end) {
            out.back().end = std::max(out.back().end, i.end);
        } else {
            out.push_back(i);
        }
    }
    return out;
}

// Length of `a` not covered by `b` (both merged).
Cycle uncovered(const std::vector<Interval>& a, const std::vector<Interval>& b) {
    Cycle total = 0;
    std::size_t j = 0;
    for (const Interval& i : a) {
        Cycle at = i.start;
        while (j < b.size() && b[j].end <= at) ++j;
        for (std::size_t k = j; k < b.size() && b[k].start < i.end; ++k) {
            if (b[k].start > at) total += b[k].start - at;
            at = std::max(at, b[k].end);
            if (at >= i.end) break;
        }
        if (at < i.end) total += i.end - at;
    }
    return total;
}

// The operands of `op` (TraceOp::operands) over its new `deps`: an operand that read a dep
// still in the program reads it at its new place; one that read a removed infeed is a
// parameter (-1). Empty when nothing moved (the default mapping still holds).
std::vector<int> remapped_operands(const TraceOp& op, const std::vector<std::size_t>& deps,
                                   const std::vector<std::ptrdiff_t>& new_index) {
    bool same = deps.size() == op.deps.size();
    for (std::size_t k = 0; same && k < deps.size(); ++k)
        same = new_index[op.deps[k]] == static_cast<std::ptrdiff_t>(deps[k]);
    if (same) return op.operands;
    std::vector<int> out;
    const std::size_t n = op_operand_bytes(op).size();
    for (std::size_t j = 0; j < n; ++j) {
        const int k = op.operands.empty()      ? static_cast<int>(j)
                      : j < op.operands.size() ? op.operands[j]
                                               : -1;
        int now = -1;
        if (k >= 0 && static_cast<std::size_t>(k) < op.deps.size()) {
            const std::ptrdiff_t d = new_index[op.deps[static_cast<std::size_t>(k)]];
            const auto at = std::find(deps.begin(), deps.end(), static_cast<std::size_t>(d));
            if (d >= 0 && at != deps.end()) now = static_cast<int>(at - deps.begin());
        }
        out.push_back(now);
    }
    return out;
}

}  // namespace

StepProgram device_step(const Trace& step) {
    StepProgram p;
    p.ops = step.ops.size();
    p.trace.name = step.name;
    p.trace.version = step.version;
    p.trace.cores = step.cores;
    p.trace.path = step.path;
    // Declared parameters stay declared (the HBM check counts each once); the batch the
    // removed infeed ops held in HBM becomes one more resident input.
    p.trace.parameter_bytes = step.parameter_bytes;
    // new_index[i]: op i's index in the device program; an infeed maps to its own deps.
    std::vector<std::ptrdiff_t> new_index(step.ops.size(), -1);
    std::vector<std::vector<std::size_t>> infeed_deps(step.ops.size());
    for (std::size_t i = 0; i < step.ops.size(); ++i) {
        const TraceOp& op = step.ops[i];
        std::vector<std::size_t> deps;
        for (std::size_t d : op.deps) {
            if (new_index[d] >= 0) {
                add_unique(deps, static_cast<std::size_t>(new_index[d]));
            } else {
                for (std::size_t x : infeed_deps[d]) add_unique(deps, x);
            }
        }
        if (op.kind == OpKind::Infeed) {
            const auto cores =
                op.cores.empty() ? step.cores : static_cast<std::int64_t>(op.cores.size());
            std::int64_t bytes = 0;
            if (__builtin_mul_overflow(op.bytes, cores, &bytes) ||
                __builtin_add_overflow(p.infeed_bytes, bytes, &p.infeed_bytes))
                throw InputError(step.path, "/ops/" + std::to_string(i) + "/bytes",
                                 "the step's infeed ops move more than 2^63 bytes in all; "
                                 "expected a step program's input");
            infeed_deps[i] = deps;
            if (p.trace.parameter_bytes >= 0) p.trace.parameter_bytes += op.bytes;
            continue;
        }
        TraceOp copy = op;
        copy.deps = deps;
        copy.operands = remapped_operands(op, deps, new_index);
        // The primary operand no longer arrives from a producer on chip if that was the infeed.
        if (copy.fused && copy.deps.empty()) copy.fused = false;
        new_index[i] = static_cast<std::ptrdiff_t>(p.trace.ops.size());
        p.trace.ops.push_back(std::move(copy));
    }
    return p;
}

void resolve_step_inputs(RunDescription& run, const StepProgram& step,
                         const std::string& program_path) {
    if (run.infeed_bytes_per_sample == 0) {
        if (step.infeed_bytes == 0)
            throw InputError(run.path, "/dataset/infeed_bytes_per_sample",
                             "missing, and the step program has no infeed op to take it "
                             "from; give the input bytes of one sample");
        // Rounded up: a padded batch is infed whole. No overflow: infeed_bytes < 2^63.
        run.infeed_bytes_per_sample =
            step.infeed_bytes / run.global_batch + (step.infeed_bytes % run.global_batch != 0);
        if (run.stored_bytes_per_sample == 0)
            run.stored_bytes_per_sample = run.infeed_bytes_per_sample;
    }
    if (step.trace.ops.empty())
        throw InputError(program_path, "",
                         "the step program has nothing but infeed; expected device work");
}

namespace {

// One core's streams (one per program) run in `order`: waits and op indices shifted per step,
// each step's collectives new instances, and the first instruction of a step waiting for the
// instructions nothing in the step before waits for (that step is over when they are).
SharedInstrs sequence_stream(const std::vector<const SharedInstrs*>& streams,
                             const std::vector<std::uint8_t>& order,
                             const std::vector<std::uint32_t>& op_base, std::uint64_t instances) {
    std::vector<std::vector<std::uint32_t>> sinks(streams.size());
    for (std::size_t p = 0; p < streams.size(); ++p) {
        const SharedInstrs& step = *streams[p];
        std::vector<bool> waited_on(step.size(), false);
        for (const Instr& in : step)
            for (std::uint32_t w : in.waits) waited_on[w] = true;
        for (std::uint32_t i = 0; i < step.size(); ++i)
            if (!waited_on[i]) sinks[p].push_back(i);
    }
    InstrList out;
    std::vector<std::uint32_t> prev_sinks;  // absolute indices of the last non-empty step's
    for (std::size_t k = 0; k < order.size(); ++k) {
        const SharedInstrs& step = *streams[order[k]];
        const auto base = static_cast<std::uint32_t>(out.size());
        for (std::uint32_t i = 0; i < step.size(); ++i) {
            Instr in = step[i];
            in.op += op_base[k];
            for (std::uint32_t& w : in.waits) w += base;
            if (i == 0)
                for (std::uint32_t s : prev_sinks) in.waits.push_back(s);
            if (in.coll && k > 0) {
                auto c = std::make_shared<CollectiveInstr>(*in.coll);
                c->instance += instances * static_cast<std::uint64_t>(k);
                in.coll = std::move(c);
            }
            out.push_back(std::move(in));
        }
        if (step.size() > 0) {
            prev_sinks.clear();
            for (std::uint32_t s : sinks[order[k]]) prev_sinks.push_back(base + s);
        }
    }
    return SharedInstrs(std::move(out));
}

}  // namespace

Program repeat_steps(const Program& step, std::int64_t n) {
    return sequence_steps({&step}, std::vector<std::uint8_t>(static_cast<std::size_t>(n), 0));
}

Program sequence_steps(const std::vector<const Program*>& programs,
                       const std::vector<std::uint8_t>& order) {
    const Program& first = *programs.at(0);
    Program p;
    p.name = first.name;
    for (const Program* g : programs)
        p.warnings.insert(p.warnings.end(), g->warnings.begin(), g->warnings.end());
    std::uint64_t instances = 0;
    for (const Program* g : programs) {
        if (g->cores.size() != first.cores.size())
            throw std::logic_error("sequence_steps: programs on different cores");
        for (const CoreProgram& c : g->cores)
            for (const Instr& in : c.instrs)
                if (in.coll) instances = std::max(instances, in.coll->instance + 1);
    }
    std::vector<std::uint32_t> op_base(order.size());
    for (std::size_t k = 0; k < order.size(); ++k) {
        op_base[k] = static_cast<std::uint32_t>(p.ops.size());
        for (const OpInfo& op : programs[order[k]]->ops) {
            OpInfo o = op;
            o.id += fmt::format("{}{}", kStepSuffix, k);
            if (!o.fused_into.empty()) o.fused_into += fmt::format("{}{}", kStepSuffix, k);
            p.ops.push_back(std::move(o));
        }
    }
    // Cores that share their streams (SPMD, lowered once) share their sequence too.
    std::vector<std::pair<std::size_t, SharedInstrs>> done;
    for (std::size_t ci = 0; ci < first.cores.size(); ++ci) {
        CoreProgram out = first.cores[ci];
        const auto same = [&](std::size_t other) {
            for (const Program* g : programs)
                if (!g->cores[other].instrs.same_as(g->cores[ci].instrs)) return false;
            return true;
        };
        const auto it =
            std::find_if(done.begin(), done.end(), [&](const auto& d) { return same(d.first); });
        if (it != done.end()) {
            out.instrs = it->second;
        } else {
            std::vector<const SharedInstrs*> streams;
            for (const Program* g : programs) streams.push_back(&g->cores[ci].instrs);
            out.instrs = sequence_stream(streams, order, op_base, instances);
            done.emplace_back(ci, out.instrs);
        }
        p.cores.push_back(std::move(out));
    }
    return p;
}

std::vector<StepMeasure> measure_steps(const RunResult& r, std::int64_t n) {
    std::vector<StepMeasure> s(static_cast<std::size_t>(n));
    std::vector<Cycle> end(static_cast<std::size_t>(n), 0);
    std::vector<std::vector<Interval>> coll(s.size()), other(s.size());
    for (const OpResult& op : r.ops) {
        const auto at = op.id.rfind(kStepSuffix);
        if (at == std::string::npos) throw std::logic_error("op without a step: " + op.id);
        const auto k = static_cast<std::size_t>(std::stoll(op.id.substr(at + 5)));
        StepMeasure& m = s.at(k);
        m.mxu_busy += op.busy[static_cast<int>(Unit::Mxu)];
        if (op.kind == OpKind::Matmul) m.mxu_flops += op.flops;
        if (op.cores_ran == 0) continue;
        end[k] = std::max(end[k], op.end_cycle);
        const bool collective = is_collective(op.kind);
        (collective ? coll : other)[k].push_back({op.start_cycle, op.end_cycle});
    }
    Cycle prev = 0;
    for (std::size_t k = 0; k < s.size(); ++k) {
        end[k] = std::max(end[k], prev);
        s[k].cycles = end[k] - prev;
        s[k].exposed_ici = uncovered(merged(coll[k]), merged(other[k]));
        prev = end[k];
    }
    return s;
}

}  // namespace tpusim
