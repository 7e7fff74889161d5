// The SPMD partitioner (hlo_spmd_partitioner.h): while loops (their state partitioned as the
// loop carries it) and calls (partitioned once per argument layout).
#include "hlo_spmd_partitioner.h"

namespace tpusim::hlo_spmd {

Val Partitioner::loop(Ctx& x, std::int32_t i) {
    const HloInstr& in = x.c->instrs[static_cast<std::size_t>(i)];
    const auto body = m_.find_computation(strip(in.attr("body")));
    const auto cond = m_.find_computation(strip(in.attr("condition")));
    if (body < 0 || cond < 0 || in.operands.size() != 1)
        m_.fail(in.offset,
                fmt::format("while {} needs body=, condition= and one operand", in.name));
    Val init = use(x, in, 0, nullptr);
    init.shape = &in.shape;
    if (init.tuple) init = conform(x, init, init);  // element refs of the operand
    // The state's layout around the loop: the operand's, except where the body makes a
    // replicated element tiled (a scan's stacked outputs, written piece by piece): there
    // the state is tiled from the start (the operand sliced before the loop), as sharding
    // propagation unifies a while's operand, body and result. The body's result is then
    // resharded to the state's layout; a counter stays replicated.
    Val state = init;
    for (int round = 0; round < 4 && state.tuple; ++round) {
        const Snapshot before = snapshot();
        const Result probe = partition(body, {state}, nullptr);
        restore(before);
        bool changed = false;
        for (std::size_t k = 0; k < state.elems.size() && k < probe.root.elems.size(); ++k) {
            Val& e = state.elems[k];
            const Val& r = probe.root.elems[k];
            if (!e.tuple && !r.tuple && e.spec.replicated() && r.spec.dim() >= 0 &&
                r.spec.tile.size() == e.shape->dims.size()) {
                e.spec = r.spec;
                changed = true;
            }
        }
        if (!changed) break;
    }
    if (state.tuple && signature({state}, nullptr) != signature({init}, nullptr)) {
        init = conform(x, init, state);
        init.shape = &in.shape;
    }
    const Result b = partition(body, {init}, &init);
    const Result c = partition(cond, {init}, nullptr);
    Val v = init;
    const std::string ref =
        emit_instr(x, i, {init.ref}, val_shape(init),
                   {{"body", callee_ref(b.name)}, {"condition", callee_ref(c.name)}});
    return v.tuple ? fresh_elements(v, ref) : (v.ref = ref, v);
}

Partitioner::Snapshot Partitioner::snapshot() const {
    return {done_, partitioned_, comp_names_, warned_, adders_, callees_, channel_, st_};
}

void Partitioner::restore(const Snapshot& s) {
    done_ = s.done;
    partitioned_ = s.partitioned;
    comp_names_ = s.comp_names;
    warned_ = s.warned;
    adders_ = s.adders;
    callees_ = s.callees;
    channel_ = s.channel;
    st_ = s.stats;
}

std::string_view Partitioner::strip(const HloAttr* a) {
    std::string_view v = a ? a->value : std::string_view{};
    if (!v.empty() && v.front() == '%') v.remove_prefix(1);
    return v;
}

Val Partitioner::call(Ctx& x, std::int32_t i) {
    const HloInstr& in = x.c->instrs[static_cast<std::size_t>(i)];
    if (in.callees.empty()) m_.fail(in.offset, fmt::format("{} calls no computation", in.opcode));
    std::map<std::string, std::string> repl;
    std::vector<std::string> ops;
    Val result;
    if (in.op == HloOpcode::Call) {
        std::vector<Val> args;
        for (std::size_t k = 0; k < in.operands.size(); ++k) {
            Val a = use(x, in, k, nullptr);
            if (a.tuple) a = conform(x, a, a);
            args.push_back(a);
            ops.push_back(a.ref);
        }
        const Result r = partition(in.callees.front(), args, nullptr);
        result = r.root;
        repl["to_apply"] = callee_ref(r.name);
    } else {  // conditional: branch k reads operand k + 1; every branch returns the layout
              // of the first
        ops.push_back(use(x, in, 0, &result.spec).ref);
        std::vector<std::string> names;
        const Val* first = nullptr;
        Result r0;
        for (std::size_t b = 0; b < in.callees.size(); ++b) {
            std::vector<Val> args;
            if (b + 1 < in.operands.size()) {
                Val a = use(x, in, b + 1, nullptr);
                if (a.tuple) a = conform(x, a, a);
                args.push_back(a);
                ops.push_back(a.ref);
            }
            const Result r = partition(in.callees[b], args, first);
            if (b == 0) {
                r0 = r;
                first = &r0.root;
            }
            names.push_back(callee_ref(r.name));
        }
        result = r0.root;
        if (in.attr("branch_computations"))
            repl["branch_computations"] = fmt::format("{{{}}}", fmt::join(names, ", "));
        if (in.attr("true_computation") && names.size() == 2) {
            repl["true_computation"] = names[0];
            repl["false_computation"] = names[1];
        }
    }
    result.shape = &in.shape;
    const std::string ref = emit_instr(x, i, ops, val_shape(result), repl);
    return result.tuple ? fresh_elements(result, ref) : (result.ref = ref, result);
}

}  // namespace tpusim::hlo_spmd
