// The host / input-pipeline timing class of `tpusim train`, stepped without SystemC. Expected
// cycles follow from the rules in include/tpusim/train/input_pipeline.h.
#include <catch2/catch.hpp>

#include "tpusim/common/error.h"
#include "tpusim/config/tpu_config.h"
#include "tpusim/train/input_pipeline.h"

using namespace tpusim;

namespace {

RunDescription run_of(std::int64_t samples, std::int64_t batch, std::int64_t epochs) {
    RunDescription r;
    r.samples = samples;
    r.global_batch = batch;
    r.epochs = epochs;
    r.infeed_bytes_per_sample = 1;
    return r;
}

// 4 training steps, and after every 2nd an eval pass of 2 steps (3 samples in batches of 2,
// the last padded). Infeed 10 per training batch and 20 per eval batch, dispatch 5 before
// every step, batches from memory at no CPU cost.
HostTiming eval_host() {
    HostTiming h;
    h.infeed_per_batch = 10;
    h.eval_infeed_per_batch = 20;
    h.dispatch = 5;
    return h;
}

RunDescription eval_run() {
    RunDescription run = run_of(4, 1, 1);
    run.eval.samples = 3;
    run.eval.global_batch = 2;
    run.eval.every_steps = 2;
    return run;
}

}  // namespace

TEST_CASE("train: an input-bound run is paced by the producer", "[train]") {
    // 2 workers, 100 cycles per sample, 8 samples per batch: a batch takes 8/2 x 100 = 400.
    HostTiming h;
    h.workers = 2;
    h.cpu_per_sample = 100;
    h.prefetch = 1;
    h.infeed_per_batch = 10;
    const RunDescription run = run_of(32, 8, 1);
    const PipelineResult p = simulate_pipeline(h, run, [](std::int64_t) { return Cycle{50}; });
    // Step 0 starts after its batch (400) and infeed (10); every later batch is produced 400
    // after the previous one (the producer never stalls: 400 > 10 + 50), so the run is
    // 4 x 400 + 10 + 50.
    CHECK(p.total == 4 * 400 + 10 + 50);
    CHECK(p.device == 4 * 50);
    CHECK(p.infeed_wait == p.total - p.device);
    CHECK(p.dispatch == 0);
    REQUIRE(p.first_steps.size() == 4);
    CHECK(p.first_steps[1].start == 810);
    CHECK(p.first_steps[1].wait_infeed == 810 - 460);
}

TEST_CASE("train: compile, dispatch and a compute-bound steady state", "[train]") {
    HostTiming h;  // batches come from memory at no CPU cost
    h.infeed_per_batch = 10;
    h.dispatch = 5;
    h.compile = 1000;
    const RunDescription run = run_of(3, 1, 2);
    const PipelineResult p = simulate_pipeline(h, run, [](std::int64_t) { return Cycle{100}; });
    // Epoch 0: the compile (1000) hides the first infeed and launch; then each step follows
    // the previous one's end by the dispatch (its infeed overlapped the previous step):
    // 1000 + 100 + 2 x (5 + 100). Epoch 1 restarts the pipeline: the first batch's infeed (10)
    // is exposed, 5 of it under the dispatch: 10 + 100 + 2 x (5 + 100).
    REQUIRE(p.epoch_cycles.size() == 2);
    CHECK(p.epoch_cycles[0] == 1000 + 100 + 2 * (5 + 100));
    CHECK(p.epoch_cycles[1] == 10 + 100 + 2 * (5 + 100));
    CHECK(p.compile == 1000);
    CHECK(p.dispatch == 2 * 5 + 3 * 5);
    CHECK(p.infeed_wait == 5);
    CHECK(p.total == p.device + p.compile + p.dispatch + p.infeed_wait);
}

TEST_CASE("train: prefetch depth bounds how far the producer runs ahead", "[train]") {
    // A fast producer (10 per batch) and a slow device (1000): with prefetch P the producer
    // starts batch k only once batch k - P has left the host, i.e. its infeed started.
    HostTiming h;
    h.cpu_per_sample = 10;
    h.prefetch = 2;
    const RunDescription run = run_of(6, 1, 1);
    const PipelineResult p = simulate_pipeline(h, run, [](std::int64_t) { return Cycle{1000}; });
    // Batch 2's infeed waits for step 1 to start (at 1010, the board holds one batch beyond
    // the running step), so batch 4, two behind it, is produced from then on: ready 1010 + 10.
    CHECK(p.first_steps[2].infeed_start == 1010);
    CHECK(p.first_steps[4].ready == 1010 + 10);
    CHECK(p.total == 10 + 6 * 1000);
}

TEST_CASE("train: a cache makes later epochs cheaper to produce", "[train]") {
    HostTiming h;
    h.workers = 4;
    h.cpu_per_sample = 400;
    h.cpu_per_sample_cached = 100;
    h.cache = true;
    // A partial last batch (3 of 4 samples) costs ceil(3 / 4) rounds like a full one.
    CHECK(h.produce(4, 0) == 400);
    CHECK(h.produce(3, 0) == 400);
    CHECK(h.produce(8, 1) == 200);
    h.cache = false;
    CHECK(h.produce(8, 1) == 800);
}

TEST_CASE("train: host costs from the config and the run", "[train]") {
    HostConfig host;
    host.vcpus = 2;
    host.pcie_bandwidth_gbps = 16;
    host.network_bandwidth_gbps = 1;
    host.dispatch_us = 100;
    host.compile_base_s = 1;
    host.compile_ms_per_op = 2;
    RunDescription run = run_of(1024, 1024, 1);
    run.parallel_calls = 8;
    run.infeed_bytes_per_sample = 1000;
    run.preprocess_ms_per_sample = 1;
    const double mhz = 1000;  // 1 cycle = 1 ns
    HostTiming h = host_timing(host, run, 4, 500, mhz);
    CHECK(h.workers == 2);  // parallel calls beyond the vCPUs share them
    CHECK(h.cpu_per_sample == 1000000);
    CHECK(h.dispatch == 100000);
    CHECK(h.compile == 2000000000);  // 1 s + 500 x 2 ms
    // TPU VM: each of 4 chips takes 1/4 of 1,024,000 bytes at 16 GB/s = 16,000 ns.
    CHECK(h.infeed_per_batch == 16000);
    // TPU Node: the whole batch crosses a 1 GB/s network first: 1,024,000 ns.
    host.access = HostAccess::Node;
    h = host_timing(host, run, 4, 500, mhz);
    CHECK(h.infeed_per_batch == 1024000);
    // Four programs compiled in the first epoch (train, a partial batch, two validation
    // shapes: Keras on TPU), each 1 s + 500 x 2 ms: 8 s.
    run.compiled_programs = 4;
    h = host_timing(host, run, 4, 500, mhz);
    CHECK(h.compile == 8000000000);
}

TEST_CASE("train: a TPU Node batch goes at the slower of the network and the runtime's path",
          "[train]") {
    HostConfig host;
    host.access = HostAccess::Node;
    host.pcie_bandwidth_gbps = 16;
    host.network_bandwidth_gbps = 0.5;
    RunDescription run = run_of(256, 256, 1);
    run.infeed_bytes_per_sample = 96 * 96 * 8 * 4;  // float32 96x96, 6 input + 2 target planes
    run.eval = {};
    run.eval.samples = 100;
    run.eval.global_batch = 100;
    run.eval.infeed_bytes_per_sample = 1000;
    const double mhz = 1000;                             // 1 cycle = 1 ns
    const double batch_bytes = 256.0 * 96 * 96 * 8 * 4;  // 75,497,472 B
    // No runtime rate set: the 0.5 GB/s network alone, 75,497,472 / 0.5 = 150,994,944 ns.
    HostTiming h = host_timing(host, run, 4, 1, mhz);
    CHECK(h.infeed_per_batch == static_cast<Cycle>(std::llround(batch_bytes / 0.5)));
    // The runtime's path at 0.112 GB/s is slower than the network: it decides, and each batch
    // transfer call adds its 1,000 us: 1,000,000 + 75,497,472 / 0.112 = 675,084,571 ns.
    host.node_transfer_gbps = 0.112;
    host.node_transfer_latency_us = 1000;
    h = host_timing(host, run, 4, 1, mhz);
    CHECK(h.infeed_per_batch == static_cast<Cycle>(std::llround(1e6 + batch_bytes / 0.112)));
    // Eval batches take the same path: 1,000,000 + 100 x 1,000 / 0.112 = 1,892,857 ns.
    CHECK(h.eval_infeed_per_batch == static_cast<Cycle>(std::llround(1e6 + 1e5 / 0.112)));
    // A runtime path faster than the network leaves the network in charge (latency still paid).
    host.node_transfer_gbps = 10;
    h = host_timing(host, run, 4, 1, mhz);
    CHECK(h.infeed_per_batch == static_cast<Cycle>(std::llround(1e6 + batch_bytes / 0.5)));
    // A TPU VM has no Node leg: each of 4 chips' quarter over 16 GB/s PCIe.
    host.access = HostAccess::Vm;
    h = host_timing(host, run, 4, 1, mhz);
    CHECK(h.infeed_per_batch == static_cast<Cycle>(std::llround(batch_bytes / 4 / 16)));
}

TEST_CASE("train: a run past 2^62 cycles is a located error, not a wrapped time", "[train]") {
    // One batch of 2^40 samples at 2^40 cycles each on one worker: 2^80 cycles, which an int64
    // product would wrap. The producer's cost saturates and the step's end is refused.
    HostTiming h;
    h.cpu_per_sample = Cycle{1} << 40;
    RunDescription run = run_of(std::int64_t{1} << 40, std::int64_t{1} << 40, 1);
    run.path = "run.json";
    CHECK_THROWS_WITH(simulate_pipeline(h, run, [](std::int64_t) { return Cycle{1}; }),
                      Catch::Contains("run.json: /epochs: the run would last more than 2^62"));
}

TEST_CASE("train: the pipeline keeps a ring of prefetch + 1 steps, same times as one per step",
          "[train]") {
    // 1,000 steps with prefetch 3: step k waits for step k - 3's infeed. A producer of 100
    // cycles per batch, an infeed of 30 and a device step of 120: the device paces the run once
    // the prefetch is full, so every step after the first starts 120 after the previous one.
    HostTiming h;
    h.cpu_per_sample = 100;
    h.prefetch = 3;
    h.infeed_per_batch = 30;
    const PipelineResult p =
        simulate_pipeline(h, run_of(1000, 1, 1), [](std::int64_t) { return Cycle{120}; });
    // Step 0: batch at 100, infeed to 130, runs 130..250; then 999 more steps of 120.
    CHECK(p.total == 130 + 1000 * 120);
    CHECK(p.device == 1000 * 120);
}

TEST_CASE("train: an evaluation pass runs between training steps", "[train]") {
    // eval_run on eval_host: training steps of 100 cycles, eval steps of 30.
    HostTiming h = eval_host();
    RunDescription run = eval_run();
    const PipelineResult p = simulate_pipeline(
        h, run, [](std::int64_t) { return Cycle{100}; }, [](std::int64_t) { return Cycle{30}; });
    // Step 0: infeed 0..10, start max(0 + 5, 10) = 10, end 110. Step 1: its infeed (10..20)
    // overlapped step 0; start 110 + 5 = 115, end 215.
    // Eval pass at 215 (a new iterator): eval batch 0 infed 215..235, start max(220, 235) =
    // 235, end 265; batch 1 infed 235..255 (behind batch 0's infeed), start 265 + 5 = 270, end
    // 300: the pass takes 300 - 215 = 85.
    // Step 2 waits for the pass: start 300 + 5 = 305 (its batch was infed at 115..125), end
    // 405; step 3 starts 410, ends 510; the second pass takes 85 again: 510 + 85 = 595.
    CHECK(p.total == 595);
    CHECK(p.eval == 2 * 85);
    CHECK(p.eval_passes == 2);
    CHECK(p.eval_steps == 4);
    CHECK(p.device == 4 * 100);
    CHECK(p.dispatch == 4 * 5);
    CHECK(p.infeed_wait == 5);  // step 0: 5 of its 10-cycle infeed beyond the dispatch
    CHECK(p.total == p.device + p.compile + p.dispatch + p.infeed_wait + p.eval);
    REQUIRE(p.first_steps.size() == 8);
    CHECK(p.first_steps[2].eval);
    CHECK(p.first_steps[2].start == 235);
    CHECK(p.first_steps[3].start == 270);
    CHECK(p.first_steps[4].index == 2);
    CHECK(p.first_steps[4].start == 305);

    // Not pipelined (keras_to_tpu_model's test_loop): eval batch 1 is infed only after eval
    // step 0 ends, 265..285; it starts max(265 + 5, 285) = 285 and ends 315. A pass takes
    // 315 - 215 = 100, 15 more, twice: 595 + 30 = 625.
    run.eval.pipelined = false;
    const PipelineResult q = simulate_pipeline(
        h, run, [](std::int64_t) { return Cycle{100}; }, [](std::int64_t) { return Cycle{30}; });
    CHECK(q.eval == 2 * 100);
    CHECK(q.total == 625);
    CHECK(q.first_steps[3].infeed_start == 265);
    CHECK(q.first_steps[3].start == 285);
}

TEST_CASE("train: eval passes every N steps or every N epochs", "[train]") {
    RunDescription run = run_of(5, 2, 3);  // 3 steps per epoch (the last padded)
    run.eval.samples = 1;
    run.eval.global_batch = 1;
    run.eval.every_epochs = 2;  // after epoch 2 of 3 only
    CHECK(run.evals_in_epoch(0) == 0);
    CHECK(run.evals_in_epoch(1) == 1);
    CHECK(run.eval_after(1, 2));
    CHECK_FALSE(run.eval_after(1, 1));
    CHECK(run.evals_in_epoch(2) == 0);
    // Every 2 steps over the run's steps 0..8: after steps 1 and 3, 5 and 7: 1, 2, 1 passes.
    run.eval.every_steps = 2;
    CHECK(run.evals_in_epoch(0) == 1);
    CHECK(run.evals_in_epoch(1) == 2);
    CHECK(run.evals_in_epoch(2) == 1);
    CHECK(run.eval_after(1, 0));  // global step 3
    CHECK_FALSE(run.eval_after(1, 1));
}

TEST_CASE("train: a checkpoint holds the next step back by its transfer", "[train]") {
    // The eval run above (595 cycles) with a save of 40 cycles after every eval pass and after
    // every 3rd step of the run: saves after steps 1 (its pass), 2 (every 3rd) and 3 (its
    // pass). The training step after a save waits for it; the next batch's infeed does not.
    HostTiming h = eval_host();
    h.checkpoint = 40;
    RunDescription run = eval_run();
    run.checkpoint.bytes = 1;
    run.checkpoint.after_eval = true;
    run.checkpoint.every_steps = 3;
    CHECK_FALSE(run.checkpoint_after(0, 0));
    CHECK(run.checkpoint_after(0, 1));  // after the first eval pass
    CHECK(run.checkpoint_after(0, 2));  // global step 3: every_steps
    CHECK(run.checkpoint_after(0, 3));  // the second eval pass
    const PipelineResult p = simulate_pipeline(
        h, run, [](std::int64_t) { return Cycle{100}; }, [](std::int64_t) { return Cycle{30}; });
    // Steps 0, 1 and the first pass as without saves: the pass ends at 300; the save takes
    // 300..340. Step 2 starts 345, ends 445; save 445..485. Step 3 starts 490, ends 590; its
    // pass takes 85 (590..675); the last save 675..715.
    CHECK(p.checkpoints == 3);
    CHECK(p.checkpoint == 3 * 40);
    CHECK(p.total == 715);
    CHECK(p.total == p.device + p.compile + p.dispatch + p.infeed_wait + p.eval + p.checkpoint);
    REQUIRE(p.first_steps.size() == 8);
    CHECK(p.first_steps[4].start == 345);  // training step 2
    CHECK(p.first_steps[5].start == 490);  // training step 3
    // Each save is on its step's record (the timeline draws it): after step 1's pass, after
    // step 2, after step 3's pass; step 0 has none.
    CHECK(p.first_steps[0].checkpoint_end == p.first_steps[0].checkpoint_start);
    CHECK(p.first_steps[1].checkpoint_start == 300);
    CHECK(p.first_steps[1].checkpoint_end == 340);
    CHECK(p.first_steps[4].checkpoint_start == 445);
    CHECK(p.first_steps[5].checkpoint_start == 675);
    CHECK(p.first_steps[5].checkpoint_end == 715);

    // The save's cost: the bytes from one chip (not split over the chips as a batch is).
    HostConfig host;
    host.pcie_bandwidth_gbps = 16;
    RunDescription r = run_of(1, 1, 1);
    r.checkpoint.bytes = 16000;
    r.checkpoint.every_epochs = 1;
    CHECK(host_timing(host, r, 4, 1, 1000).checkpoint == 1000);  // 16,000 B at 16 GB/s
    host.access = HostAccess::Node;
    host.network_bandwidth_gbps = 1;
    host.node_transfer_gbps = 0.5;
    host.node_transfer_latency_us = 2;
    CHECK(host_timing(host, r, 4, 1, 1000).checkpoint == 2000 + 32000);
}

TEST_CASE("train: the weights go to the board before the first step and back after the last",
          "[train]") {
    // The compute-bound run above (2 epochs of 3 steps, compile 1000) with an upload of 300
    // and a download of 70: the first step waits for the compile and then the upload; the
    // download follows the last step and belongs to no epoch.
    HostTiming h;
    h.infeed_per_batch = 10;
    h.dispatch = 5;
    h.compile = 1000;
    h.weights_upload = 300;
    h.weights_download = 70;
    RunDescription run = run_of(3, 1, 2);
    run.weights.bytes = 1;
    const PipelineResult p = simulate_pipeline(h, run, [](std::int64_t) { return Cycle{100}; });
    REQUIRE(p.epoch_cycles.size() == 2);
    CHECK(p.epoch_cycles[0] == 1000 + 300 + 100 + 2 * (5 + 100));
    CHECK(p.epoch_cycles[1] == 10 + 100 + 2 * (5 + 100));  // as without the weights
    REQUIRE(p.first_steps.size() == 6);
    CHECK(p.first_steps[0].start == 1300);
    CHECK(p.first_steps[0].wait_compile == 1000);
    CHECK(p.first_steps[0].wait_upload == 300);
    CHECK(p.first_steps[1].wait_upload == 0);
    // The download starts when the last epoch ends.
    CHECK(p.total == p.epoch_cycles[0] + p.epoch_cycles[1] + 70);
    CHECK(p.weights == 300 + 70);
    CHECK(p.total == p.device + p.compile + p.dispatch + p.infeed_wait + p.weights);

    // The transfers take the checkpoint's path: one replica from (to) one chip.
    HostConfig host;
    host.pcie_bandwidth_gbps = 16;
    RunDescription r = run_of(1, 1, 1);
    r.weights.bytes = 16000;
    r.weights.download = false;
    const HostTiming t = host_timing(host, r, 4, 1, 1000);
    CHECK(t.weights_upload == 1000);  // 16,000 B at 16 GB/s
    CHECK(t.weights_download == 0);
    host.access = HostAccess::Node;
    host.network_bandwidth_gbps = 1;
    host.node_transfer_gbps = 0.5;
    host.node_transfer_latency_us = 2;
    r.weights.download = true;
    CHECK(host_timing(host, r, 4, 1, 1000).weights_download == 2000 + 32000);
}
