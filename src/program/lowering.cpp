// Trace ops -> per-core instruction streams. See tpusim/program/lowering.h for the strategy.
#include "tpusim/program/lowering.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>

#include "core_lowering.h"
#include "instr_stream.h"
#include "tpusim/common/error.h"
#include "tpusim/program/fusion.h"
#include "tpusim/program/vector_lowering.h"

namespace tpusim {

const char* unit_name(Unit u) {
    switch (u) {
        case Unit::Dma:
            return "DMA";
        case Unit::Mxu:
            return "MXU";
        case Unit::Vpu:
            return "VPU";
        case Unit::Ici:
            return "ICI";
        case Unit::Host:
            return "host";
    }
    return "?";
}

namespace {

// Instructions a streamed program's lowering runs ahead of its slowest reader: far more than
// a core holds in flight (unit queues, DMA descriptors), so the lowering never waits on
// the cores for long; about 10 MB.
constexpr std::size_t kStreamWindow = std::size_t{1} << 16;

// What makes core c's stream differ from another core's: per op, -1 where the op does not run
// on c, -2 for a collective with replica groups none of which holds c, else 0. The cores of
// different replica groups share a stream: its collective lists every group and each core
// takes its own at issue (CollectiveInstr::group_of), as it takes its HBM share.
// `grouped[i]`: the cores the replica groups of op i hold (empty without groups).
std::vector<std::int64_t> program_signature(const std::vector<OpSpec>& ops,
                                            const std::vector<std::vector<bool>>& grouped,
                                            std::int64_t c) {
    std::vector<std::int64_t> key(ops.size(), 0);
    for (std::size_t i = 0; i < ops.size(); ++i) {
        const OpSpec& op = ops[i];
        if (!op.cores.empty() && std::find(op.cores.begin(), op.cores.end(), c) == op.cores.end()) {
            key[i] = -1;
            continue;
        }
        if (op.replica_groups.empty()) continue;
        const auto& in = grouped[i];
        if (c < 0 || static_cast<std::size_t>(c) >= in.size() || !in[static_cast<std::size_t>(c)])
            key[i] = -2;
    }
    return key;
}

// Per op, the cores its replica groups hold (replica_group_of >= 0), for program_signature.
std::vector<std::vector<bool>> grouped_cores(const std::vector<OpSpec>& ops) {
    std::vector<std::vector<bool>> out(ops.size());
    for (std::size_t i = 0; i < ops.size(); ++i) {
        for (const auto& g : ops[i].replica_groups) {
            for (std::int64_t c : g) {
                if (c < 0) continue;
                auto& in = out[i];
                if (static_cast<std::size_t>(c) >= in.size())
                    in.resize(static_cast<std::size_t>(c) + 1, false);
                in[static_cast<std::size_t>(c)] = true;
            }
        }
    }
    return out;
}

// What a streamed program's lowering reads again while the simulation runs: copies shared by
// the streams of one program (made when the first stream is).
struct StreamInputs {
    std::shared_ptr<const std::vector<OpSpec>> ops;
    std::shared_ptr<const TpuConfig> cfg;
    std::shared_ptr<const std::vector<OpInfo>> infos;
};

// Core c's stream lowered again on demand; `count` instructions, as the first lowering found.
// The producer lowers into a private copy of the op infos (it notes fusions there again).
SharedInstrs streamed(StreamInputs& in, const std::vector<OpSpec>& ops, const TpuConfig& cfg,
                      const std::vector<OpInfo>& infos, const LoweringOptions& opts, std::int64_t c,
                      const std::string& trace_name, std::size_t count) {
    if (!in.ops) {
        in.ops = std::make_shared<const std::vector<OpSpec>>(ops);
        in.cfg = std::make_shared<const TpuConfig>(cfg);
        in.infos = std::make_shared<const std::vector<OpInfo>>(infos);
    }
    auto produce = [in, opts, c, trace_name](const InstrStream::Push& push) {
        std::vector<OpInfo> own = *in.infos;
        CoreLowering lowering(*in.cfg, opts, c, *in.ops, trace_name);
        lowering.set_sink(push);
        lowering.run(own);
    };
    return SharedInstrs(std::make_shared<InstrStream>(produce, kStreamWindow, count), count);
}

Program lower_ops_once(const std::vector<OpSpec>& ops, const TpuConfig& cfg,
                       const LoweringOptions& opts, const std::string& trace_name) {
    Program prog;
    prog.name = trace_name;
    for (const auto& op : ops) {
        OpInfo info;
        info.id = op.id;
        info.kind = op.kind;
        if (op.kind == OpKind::Matmul) {
            info.flops = 2.0 * static_cast<double>(op.batch) * static_cast<double>(op.m) *
                         static_cast<double>(op.k) * static_cast<double>(op.n);
        } else if (op.kind == OpKind::Vector) {
            info.flops = op.vector_flops;
        }
        info.cores = op.cores;
        info.deps = op.deps;
        prog.ops.push_back(std::move(info));
    }
    for (std::size_t li = 0; li < opts.loops.size(); ++li) {
        const auto& l = opts.loops[li];
        prog.loops.push_back(ProgramLoop{l.first, l.count, l.trips, l.lowered()});
        for (std::size_t i = l.first; i < l.first + l.count; ++i) {
            prog.ops[i].loop = static_cast<std::int64_t>(li);
            prog.ops[i].trips = l.trips;
            prog.ops[i].flops *= static_cast<double>(l.trips);
        }
    }
    for (auto& info : prog.ops) {
        if (info.cores.empty()) {
            for (std::int64_t c = 0; c < opts.cores; ++c) info.cores.push_back(c);
        }
    }
    // Vector ops the VPU cannot run are input errors, located at the op (not mid-simulation).
    for (const auto& op : ops) {
        if (op.kind != OpKind::Vector) continue;
        try {
            vector_loop_iterations(
                VectorOpDesc{op.vop, op.saved_mask, std::max<std::int64_t>(op.rows, 1),
                             std::max<std::int64_t>(op.cols, 1), vpu_element_bytes(op.in_bytes),
                             vpu_element_bytes(op.out_bytes)},
                cfg.vpu);
        } catch (const InputError& e) {
            throw InputError(trace_name, fmt::format("op \"{}\"", op.id), e.what_only());
        }
    }
    // A `fused` flag the layer cannot honour is said, never dropped silently.
    const auto first_fused = first_fused_consumers(ops);
    for (std::size_t i = 0; i < ops.size(); ++i) {
        if (!ops[i].fused) continue;
        const std::string why = fusion_blocker(ops, i, first_fused, cfg);
        if (why.empty()) continue;
        prog.warnings.push_back(
            fmt::format("{}: op \"{}\": \"fused\" has no effect: {}; its operand goes through HBM",
                        trace_name, ops[i].id, why));
    }
    // Lower once per distinct per-core program: cores that run the same ops in the same
    // collective groups get the same stream (addresses are relative to the core's HBM share),
    // shared read-only. An op's per-core HBM bytes come from the first core that runs it.
    struct Stream {
        SharedInstrs instrs;
        std::vector<LoopTrips> loops;
        std::shared_ptr<const std::vector<CollectiveInstr>> collectives;
    };
    std::map<std::vector<std::int64_t>, Stream> streams;
    const auto grouped = grouped_cores(ops);
    StreamInputs shared{nullptr, nullptr, nullptr};
    std::vector<bool> counted(ops.size(), false);
    const Bytes hbm_share = cfg.hbm.capacity_bytes() / static_cast<Bytes>(cfg.chip.cores_per_chip);
    for (std::int64_t c = 0; c < opts.cores; ++c) {
        CoreProgram cp;
        cp.core = c;
        cp.hbm_base = static_cast<Addr>(c % cfg.chip.cores_per_chip) * hbm_share;
        auto key = program_signature(ops, grouped, c);
        auto it = streams.find(key);
        if (it == streams.end()) {
            CoreLowering lowering(cfg, opts, c, ops, trace_name);
            lowering.hold_at_most(static_cast<std::size_t>(cfg.sim.stream_above_instructions));
            InstrList held = lowering.run(prog.ops);
            prog.refused_loop_reuse |= lowering.stopped();
            SharedInstrs s = lowering.overflowed() ? streamed(shared, ops, cfg, prog.ops, opts, c,
                                                              trace_name, lowering.count())
                                                   : SharedInstrs(std::move(held));
            for (std::size_t i = 0; i < ops.size(); ++i) {
                if (key[i] < 0 || counted[i]) continue;
                counted[i] = true;
                prog.ops[i].hbm_bytes = lowering.hbm_bytes(i);
                prog.ops[i].trip_hbm_bytes = lowering.trip_hbm_bytes(i);
                if (prog.ops[i].loop >= 0) {
                    // The trips not lowered move what the last lowered one did.
                    const LoopSpec& l = opts.loops[static_cast<std::size_t>(prog.ops[i].loop)];
                    prog.ops[i].hbm_bytes +=
                        static_cast<Bytes>(l.trips - l.lowered()) * lowering.trip_hbm_bytes(i);
                }
            }
            auto collectives = std::make_shared<std::vector<CollectiveInstr>>();
            for (std::size_t i = 0; i < ops.size(); ++i)
                if (key[i] != -1 && is_collective(ops[i].kind))
                    collectives->push_back(collective_instr(ops[i], i, c, opts.cores));
            it = streams
                     .emplace(std::move(key),
                              Stream{std::move(s), lowering.loop_trips(), std::move(collectives)})
                     .first;
        }
        cp.instrs = it->second.instrs;
        cp.loops = it->second.loops;
        cp.collectives = it->second.collectives;
        prog.cores.push_back(std::move(cp));
    }
    return prog;
}

// The most times one matmul's tile budget is halved before its VMEM error stands.
constexpr int kMaxVmemHalvings = 4;

// The matmul whose pipeline made the allocation of op `i`: the op itself, or the producer a
// fused consumer takes its tiles from; -1 for none.
std::ptrdiff_t pipeline_owner(const std::vector<OpSpec>& ops, std::size_t i) {
    for (std::size_t guard = 0; guard < ops.size() && i < ops.size(); ++guard) {
        if (ops[i].kind == OpKind::Matmul) return static_cast<std::ptrdiff_t>(i);
        if (!ops[i].fused || ops[i].deps.empty()) return -1;
        i = ops[i].deps[0];
    }
    return -1;
}

}  // namespace

Program lower_ops(const std::vector<OpSpec>& ops, const TpuConfig& cfg, const LoweringOptions& opts,
                  const std::string& trace_name) {
    // The ring of VMEM buffers places each pipeline's pinned accumulators and weight tiles where
    // its head is, and they can leave no room of the size a later buffer of the same pipeline
    // needs, although the tile plan's budget fits VMEM. Then the op is lowered again with its
    // budget halved, as a compiler picks smaller tiles for a kernel whose buffers do not fit.
    // Programs that lower at once are untouched.
    std::vector<OpSpec> adjusted;
    const std::vector<OpSpec>* cur = &ops;
    for (;;) {
        try {
            Program prog = lower_ops_once(*cur, cfg, opts, trace_name);
            for (const OpSpec& op : *cur) {
                if (op.vmem_halvings == 0) continue;
                prog.warnings.push_back(fmt::format(
                    "{}: op \"{}\": its tiles take 1/{} of the VMEM budget of a matmul "
                    "(lowering.matmul_vmem_fraction): at the full budget its pipeline's buffers "
                    "did not fit beside the ones it held (docs/program.md, VMEM)",
                    trace_name, op.id, std::int64_t{1} << op.vmem_halvings));
            }
            return prog;
        } catch (const VmemExhausted& e) {
            const std::ptrdiff_t m = pipeline_owner(*cur, e.op());
            if (m < 0 || (*cur)[static_cast<std::size_t>(m)].vmem_halvings >= kMaxVmemHalvings)
                throw;
            if (adjusted.empty()) adjusted = ops;
            ++adjusted[static_cast<std::size_t>(m)].vmem_halvings;
            cur = &adjusted;
        }
    }
}

}  // namespace tpusim
