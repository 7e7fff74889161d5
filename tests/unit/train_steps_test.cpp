// device_step (the step program without its infeed), repeat_steps (the lowered step repeated
// with the same buffers and a barrier per step) and measure_steps; no SystemC kernel.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tpusim/trace/trace.h"
#include "tpusim/train/step_program.h"

using namespace tpusim;

TEST_CASE("train: repeated steps keep their buffers and wait for the previous step", "[train]") {
    Program step;
    for (const char* id : {"load", "mm", "ar"}) {
        OpInfo o;
        o.id = id;
        step.ops.push_back(o);
    }
    CoreProgram core;
    Instr dma;
    dma.unit = Unit::Dma;
    dma.dma().hbm_addr = 4096;
    Instr mm;
    mm.unit = Unit::Mxu;
    mm.op = 1;
    mm.waits = {0};
    Instr ar;
    ar.unit = Unit::Ici;
    ar.op = 2;
    CollectiveInstr coll;
    coll.instance = 2;
    ar.coll = std::make_shared<const CollectiveInstr>(coll);
    core.instrs = SharedInstrs(InstrList{dma, mm, ar});
    CoreProgram twin = core;  // a second core running the same SPMD stream
    twin.core = 1;
    step.cores = {core, twin};

    const Program p = repeat_steps(step, 3);
    REQUIRE(p.ops.size() == 9);
    CHECK(p.ops[4].id == "mm@step1");
    const auto& in = p.cores.at(0).instrs;
    REQUIRE(in.size() == 9);
    // Step 1 starts after the instructions nothing in step 0 waits for (mm, ar: 1 and 2).
    CHECK(in[3].waits == std::vector<std::uint32_t>{1, 2});
    CHECK(in[6].waits == std::vector<std::uint32_t>{4, 5});
    CHECK(in[4].waits == std::vector<std::uint32_t>{3});
    CHECK(in[4].op == 4);
    CHECK(in[6].dma().hbm_addr == 4096);  // the same executable, the same buffers
    // Each step's collective is a new instance (instances 0..2 per step).
    CHECK(in[2].coll->instance == 2);
    CHECK(in[5].coll->instance == 5);
    CHECK(in[8].coll->instance == 8);
    // Cores that shared the step's stream share the repeated one.
    CHECK(p.cores.at(1).instrs.same_as(p.cores.at(0).instrs));
    CHECK(p.cores.at(1).core == 1);
}

TEST_CASE("train: steps are measured from the end of the previous step", "[train]") {
    RunResult r;
    auto op = [](std::string id, OpKind kind, Cycle s, Cycle e) {
        OpResult o;
        o.id = std::move(id);
        o.kind = kind;
        o.start_cycle = s;
        o.end_cycle = e;
        o.cores_ran = 1;
        o.busy[static_cast<int>(Unit::Mxu)] = o.kind == OpKind::Matmul ? e - s : 0;
        return o;
    };
    // Step 0: a matmul 0-100 and an all-reduce 80-150 (70 cycles, 50 of them exposed).
    // Step 1: the same shifted by 160 (a 10-cycle barrier gap counts in step 1).
    r.ops = {op("mm@step0", OpKind::Matmul, 0, 100), op("ar@step0", OpKind::AllReduce, 80, 150),
             op("mm@step1", OpKind::Matmul, 160, 260), op("ar@step1", OpKind::AllReduce, 240, 310)};
    const auto s = measure_steps(r, 2);
    REQUIRE(s.size() == 2);
    CHECK(s[0].cycles == 150);
    CHECK(s[1].cycles == 160);
    CHECK(s[0].exposed_ici == 50);
    CHECK(s[1].exposed_ici == 50);
    CHECK(s[0].mxu_busy == 100);
}

TEST_CASE("train: training and eval steps run in the run's order with a barrier", "[train]") {
    // Training step: load -> mm (2 ops, 2 instructions); eval step: one matmul (1 op).
    Program train, eval;
    for (const char* id : {"load", "mm"}) {
        OpInfo o;
        o.id = id;
        train.ops.push_back(o);
    }
    OpInfo fwd;
    fwd.id = "fwd";
    eval.ops.push_back(fwd);
    Instr dma;
    dma.unit = Unit::Dma;
    Instr mm;
    mm.unit = Unit::Mxu;
    mm.op = 1;
    mm.waits = {0};
    Instr f;
    f.unit = Unit::Mxu;
    CoreProgram tc, ec;
    tc.instrs = SharedInstrs(InstrList{dma, mm});
    ec.instrs = SharedInstrs(InstrList{f});
    train.cores = {tc};
    eval.cores = {ec};

    // train, eval, eval, train: instructions 0-1, 2, 3, 4-5; ops 0-1, 2, 3, 4-5.
    const Program p = sequence_steps({&train, &eval}, {0, 1, 1, 0});
    REQUIRE(p.ops.size() == 6);
    CHECK(p.ops[2].id == "fwd@step1");
    CHECK(p.ops[3].id == "fwd@step2");
    CHECK(p.ops[5].id == "mm@step3");
    const auto& in = p.cores.at(0).instrs;
    REQUIRE(in.size() == 6);
    // Each step's first instruction waits for the sinks of the step before: the training
    // step's mm (1), then the eval step's only instruction (2, then 3).
    CHECK(in[2].waits == std::vector<std::uint32_t>{1});
    CHECK(in[2].op == 2);
    CHECK(in[3].waits == std::vector<std::uint32_t>{2});
    CHECK(in[3].op == 3);
    CHECK(in[4].waits == std::vector<std::uint32_t>{3});
    CHECK(in[5].waits == std::vector<std::uint32_t>{4});  // mm after its own load
    CHECK(in[5].op == 5);
}

TEST_CASE("train: the device step keeps the declared parameters and the operands' sources",
          "[train]") {
    // The infeed's batch (4 KiB per core) joins the declared parameters; "m" read the infeed
    // as its lhs and "w" as its rhs: without the infeed its lhs is a parameter and its rhs
    // still reads "w", now its first dep.
    const auto j = nlohmann::json::parse(R"({"format": "tpusim.trace", "version": 1,
        "name": "t", "cores": 2, "parameter_bytes": 1000000, "ops": [
        {"id": "in", "kind": "infeed", "bytes": 4096},
        {"id": "w", "kind": "vector", "op": "relu", "rows": 64, "cols": 128},
        {"id": "m", "kind": "matmul", "m": 64, "k": 128, "n": 128, "deps": ["in", "w"]},
        {"id": "r", "kind": "vector", "op": "relu", "rows": 64, "cols": 128, "deps": ["m"]}]})");
    const Trace t = parse_trace(j, "t.json", 8);
    const StepProgram s = device_step(t);
    REQUIRE(s.trace.ops.size() == 3);
    CHECK(s.infeed_bytes == 2 * 4096);
    CHECK(s.trace.parameter_bytes == 1000000 + 4096);
    const TraceOp& m = s.trace.ops[1];
    CHECK(m.deps == std::vector<std::size_t>{0});
    CHECK(m.operands == std::vector<int>{-1, 0});
    CHECK(op_operand_dep(m, 0) < 0);
    CHECK(op_operand_dep(m, 1) == 0);
    CHECK(s.trace.ops[2].operands.empty());  // unchanged: still reads deps[0]
    // Undeclared stays undeclared (every operand without a producer counts).
    Trace u = t;
    u.parameter_bytes = -1;
    CHECK(device_step(u).trace.parameter_bytes == -1);
}
