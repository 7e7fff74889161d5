#pragma once
// XLA HLO text: the reader (a syntax tree of the module, docs/hlo.md) and the import that turns
// a module into a trace (format v1), which the program layer lowers like any other trace.
//
// Contract: parse_hlo returns a module whose operands and called computations all resolve,
// whose call graph from ENTRY has no cycle and whose shapes have at most 2^40 elements per
// dimension and 2^62 per array; anything else is an InputError located
// "<file>:<line>:<column>" (the `file` of the error; `where` is empty). The grammar follows
// XLA's parser (xla/hlo/parser/hlo_parser.cc); nothing of it is copied here.
#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tpusim/trace/trace.h"

namespace tpusim {

// XLA's primitive types, by their spelling in HLO text.
struct HloType {
    std::string_view name;  // "f32", "bf16", "pred", "token", ...
    int bits = 0;           // storage bits of one element (pred: 8, token: 0)
    bool is_float = false;
};

struct HloShape {
    bool tuple = false;
    HloType type;
    std::vector<std::int64_t> dims;            // dynamic dims (<=N) count at their bound
    std::vector<HloShape> elements;            // tuple elements
    std::vector<std::int64_t> minor_to_major;  // the layout's dimension order, if written
    int memory_space = 0;   // S(n) in the layout: 1 is VMEM on a TPU, 5 host memory
    bool tiled = false;     // the layout has a T(..) tiling: the TPU compiler chose it
    std::string_view text;  // an array shape as written (type, dims, layout); empty if inferred
    std::int64_t elements_count() const;  // array elements (1 for a scalar, 0 for a tuple)
    std::int64_t bytes() const;           // array or every tuple leaf, rounded up per array
};

// The HLO opcodes the import knows, by their spelling in HLO text ("get-tuple-element" is
// GetTupleElement); Unknown for any other. One row per opcode in src/trace/hlo/hlo_opcode.cpp
// gives its spelling, how the import treats it and how it is costed.
enum class HloOpcode : std::uint8_t {
    Parameter,
    Constant,
    Tuple,
    GetTupleElement,
    Bitcast,
    Reshape,
    AfterAll,
    PartitionId,
    ReplicaId,
    OptBarrier,
    AddDependency,
    Domain,
    GetDimensionSize,
    SetDimensionSize,
    RngGetAndUpdateState,
    CopyStart,
    SendDone,
    RecvDone,
    InfeedDone,
    OutfeedDone,
    Broadcast,
    Iota,
    Add,
    Subtract,
    Multiply,
    Divide,
    Maximum,
    Minimum,
    Remainder,
    Power,
    Atan2,
    And,
    Or,
    Xor,
    ShiftLeft,
    ShiftRightLogical,
    ShiftRightArithmetic,
    Compare,
    Complex,
    Select,
    Clamp,
    Negate,
    Abs,
    Exponential,
    ExponentialMinusOne,
    Log,
    LogPlusOne,
    Tanh,
    Logistic,
    Sqrt,
    Cbrt,
    Rsqrt,
    Sine,
    Cosine,
    Tan,
    Acos,
    Asin,
    Atan,
    Acosh,
    Asinh,
    Atanh,
    Cosh,
    Sinh,
    Erf,
    Floor,
    Ceil,
    RoundNearestAfz,
    RoundNearestEven,
    Sign,
    Not,
    Popcnt,
    CountLeadingZeros,
    IsFinite,
    Real,
    Imag,
    ReducePrecision,
    StochasticConvert,
    Convert,
    BitcastConvert,
    Map,
    Rng,
    RngBitGenerator,
    Copy,
    Transpose,
    Slice,
    DynamicSlice,
    DynamicUpdateSlice,
    Concatenate,
    Pad,
    Reverse,
    Gather,
    Scatter,
    Dot,
    Convolution,
    TriangularSolve,
    Cholesky,
    Fft,
    Reduce,
    ReduceWindow,
    SelectAndScatter,
    BatchNormTraining,
    BatchNormInference,
    BatchNormGrad,
    Sort,
    Topk,
    Scan,
    AllReduce,
    AllReduceStart,
    AllGather,
    AllGatherStart,
    ReduceScatter,
    AllToAll,
    RaggedAllToAll,
    CollectivePermute,
    CollectivePermuteStart,
    CollectiveBroadcast,
    Infeed,
    Outfeed,
    Send,
    Recv,
    Call,
    While,
    Conditional,
    Fusion,
    AsyncStart,
    AllReduceDone,
    AllGatherDone,
    CollectivePermuteDone,
    AsyncDone,
    AsyncUpdate,
    CopyDone,
    CustomCall,
    Unknown,
};

struct HloAttr {
    std::string_view name, value;  // raw text of the value, as written
    std::uint32_t offset = 0;      // of the name, for error messages
};

struct HloOperand {
    std::int32_t instr = -1;        // index in the computation
    std::int32_t tuple_index = -1;  // %name#i: element i of a tuple-shaped operand
};

struct HloInstr {
    std::string_view name;    // without the leading %
    std::string_view opcode;  // as written
    HloOpcode op = HloOpcode::Unknown;
    HloShape shape;
    std::vector<HloOperand> operands;
    std::vector<HloAttr> attrs;
    std::string_view literal;           // constant(...), parameter(n), ...: the raw text inside
    std::vector<std::int32_t> callees;  // computations named by calls=, to_apply=, body= ...
    std::uint32_t offset = 0;           // of the name
    bool root = false;
    const HloAttr* attr(std::string_view name) const;
};

struct HloComputation {
    std::string_view name;
    std::vector<HloInstr> instrs;
    std::int32_t root = -1;
    std::uint32_t offset = 0;
};

struct HloModule {
    std::string path;                         // for messages
    std::shared_ptr<const std::string> text;  // owns what every string_view points into
    std::string_view name;
    std::vector<HloAttr> attrs;  // of the HloModule line
    std::vector<HloComputation> computations;
    std::int32_t entry = -1;
    std::unordered_map<std::string_view, std::int32_t> by_name;  // computations
    // Names that passes made (the call inliner's fresh names), which string_views point into.
    std::vector<std::shared_ptr<const std::string>> owned_names;
    std::int32_t find_computation(std::string_view name) const;  // -1 if none
    const HloAttr* attr(std::string_view name) const;
    // "<path>:<line>:<column>" of a byte offset into the text.
    std::string location(std::uint32_t offset) const;
    [[noreturn]] void fail(std::uint32_t offset, const std::string& what) const;
};

// Throws InputError as described above.
HloModule parse_hlo(std::string text, const std::string& path);
HloModule read_hlo(const std::string& path);

// The module as HLO text that parse_hlo reads back to the same computations, instructions,
// shapes (as written), operands, attributes and literals (hlo_print.cpp). Computations written
// in place (calls={...}) stay in their attribute; metadata tables are not written.
std::string print_hlo(const HloModule& m);

// Whether the module is another backend's optimised module (docs/hlo.md, "Passes"): it has
// fusions, its HloModule line carries entry_computation_layout (XLA wrote it) and no layout
// has a TPU tiling, and no fusion carries frontend_attributes={tpusim_fusion_pass="true"} (the
// mark of apply_fusion_pass's fusions). The import inlines its fusions back (defuse_hlo) and
// runs its own passes.
bool is_foreign_fused(const HloModule& m);
// Every fusion replaced by its fused computation's instructions (parameters bound to the
// fusion's operands, users reading the fused root, get-tuple-element of a tuple root reading
// that element); `fusions` counts them. The result owns new text (print + parse).
HloModule defuse_hlo(const HloModule& m, std::int64_t* fusions = nullptr);

// Whether the module has a `call` instruction.
bool has_calls(const HloModule& m);
// XLA's CallInliner: every `call` replaced by the instructions of the computation it calls,
// their parameters bound to its operands, its users reading the called root; an inlined
// instruction keeps its name where the caller has no instruction of that name, else gets a
// fresh one (name.1, ...), and keeps its offset into the text (its line). `calls` counts the
// calls inlined. nullopt when there is no call, one cannot be written inline (a value that
// would be an element of an element of a tuple), or the inlined module would have more than
// `max_instructions` (calls that fan out): then nothing is inlined.
std::optional<HloModule> inline_calls(const HloModule& m, std::int64_t* calls = nullptr,
                                      std::int64_t max_instructions = std::int64_t{1} << 20);
// Whether a module still needs XLA's SPMD partitioner (docs/hlo.md, "SPMD and collectives"):
// NotSharded: num_partitions is 1 or absent, or no instruction has a tiled sharding (in the
// HloSharding form `devices=` or Shardy's `{mesh[...], [{'axis'}, ...]}`); Partitioned: it
// carries tpusim's mark (frontend_attributes={tpusim_spmd_partitioned="true"}), is a
// compiler's output (is_scheduled=true, fusions, TPU tiled layouts), or holds a collective,
// partition-id or replica-id without shard_map regions (SPMDFullToShardShape), as XLA's
// partitioned output does; Global: shapes are global, shardings say how to split them.
enum class SpmdState { NotSharded, Global, Partitioned };
SpmdState spmd_state(const HloModule& m);
struct HloImportStats;
// The per-device module XLA's SpmdPartitioner would write for a Global module (hlo_spmd.cpp):
// per-device shapes, all-gather / all-reduce / all-to-all / dynamic-slice where layouts
// differ, the mark above. Bad shardings are InputErrors located at the instruction.
HloModule spmd_partition(const HloModule& m, HloImportStats* stats = nullptr);

// Limits of the import (docs/limits.md): how deep computations may call each other (the import
// recurses once per level), and how many instructions it visits by default, counting a loop
// body once per trip and a computation once per call (so that a while loop of 10^12 trips or
// calls that fan out exponentially fail with a located error instead of running for ever).
inline constexpr int kMaxHloCallDepth = 64;
inline constexpr std::int64_t kMaxHloInstructions = std::int64_t{1} << 20;
// Trips of one while loop (a trace loop's `trips` is at most this too).
inline constexpr std::int64_t kMaxHloTrips = std::int64_t{1} << 40;

// What the import does besides translating opcodes (docs/hlo.md, "Passes").
struct HloImportOptions {
    bool call_inliner = true;  // inline every `call` first (XLA's CallInliner)
    // Partition a module written before XLA's SPMD partitioner (global shapes, tiled
    // shardings) into the per-device program (spmd_partition).
    bool spmd_partitioner = true;
    bool fusion = true;        // fuse producers into consumers in modules that have no fusions
    bool tile_padding = true;  // pad the minor two dimensions to the (8, 128) tile in bytes
    // A fusion is a graph: a value that a member computes for another member as its second
    // operand stays in registers (not written to HBM and read back), as in XLA's kernel.
    bool kernel_graphs = true;
    // Producer-consumer multi-output fusion: a fusion takes an operand on chip from the
    // kernel that computes it when that kernel stores it for other readers anyway.
    bool producer_fusion = true;
    // 2-D convolutions without dilation as `conv2d` (the input read once, the taps applied in
    // VMEM) instead of their implicit GEMM (an im2col matrix streamed from HBM).
    bool direct_convolutions = true;
    // Run a fused computation's kernels in the order XLA's default memory scheduler picks
    // (the lowest peak of live buffers of its list, DFS and post-order schedules), not in the
    // module's text order; modules XLA scheduled (is_scheduled=true) keep theirs.
    bool memory_scheduler = true;
    std::int64_t while_trips = 0;  // trips of a while whose count cannot be found; 0: error
    // Write every trip of a while loop out as trace ops ("<name>@t"), as before trace loops;
    // otherwise a loop of 2 or more trips is one trace loop (its body once).
    bool unroll_loops = false;
    // The MXU array (mxu.rows x mxu.cols of the config): grouped convolutions pack as many
    // groups into one pass as it holds, as XLA's block-diagonal packing does.
    std::int64_t mxu_rows = 128, mxu_cols = 128;
    std::int64_t max_instructions = kMaxHloInstructions;  // visited; more is an InputError
};

// Parses "--hlo-passes" values: "all", "none" or a comma list of the names hlo_pass_names
// gives. Throws InputError("--hlo-passes", "", ...) for an unknown name.
void apply_hlo_passes(const std::string& list, HloImportOptions& opts);
// The pass names "--hlo-passes" takes, comma-separated ("direct-convolutions, fusion, ...").
std::string hlo_pass_names();

// The fusion pass written out (hlo_print.cpp): each fusion cluster of the computations the
// import walks becomes a fusion calling fused_computation.N, duplicated producers inside each
// of them, broadcasts / iotas / constants cloned in, no-op copies removed.
// Each computation's instructions are written in memory_schedule's order when
// `memory_scheduler` (and the module is not is_scheduled), the order the import runs them in.
HloModule apply_fusion_pass(const HloModule& m, bool memory_scheduler = true);
// The module as tpusim runs it under opts: defused when is_foreign_fused, SPMD-partitioned when
// opts.spmd_partitioner and spmd_state is Global, then the fusion pass
// when opts.fusion and it has no fusions (what `--after-passes FILE` writes, printed).
HloModule hlo_after_passes(const HloModule& m, const HloImportOptions& opts);

struct HloImportStats {
    std::int64_t instructions = 0;  // HLO instructions visited (a trace loop's body twice;
                                    // unrolled loops once per trip)
    std::int64_t free_instructions = 0;
    std::int64_t while_trips = 0;
    std::int64_t unmodelled_custom_calls = 0;  // as visited (see `instructions`)
    std::int64_t multi_output_fusions = 0;     // pass-made fusions that joined a sibling's kernel
    std::int64_t producer_fusions = 0;  // kernels that take an operand from its producer's tiles
    std::int64_t inlined_calls = 0;     // calls replaced by their computations (call-inliner)
    std::int64_t defused_fusions = 0;   // fusions of another backend's module inlined back
    // The memory scheduler on the entry computation: its algorithm ("list", "dfs",
    // "post-order"; empty when it did not run) and the peak of live HBM buffers in its order
    // and in the text's (the scheduler's own count: results only, no fragmentation).
    std::string entry_schedule;
    std::int64_t entry_schedule_peak_bytes = 0, entry_text_peak_bytes = 0;
    bool spmd_partitioned = false;               // the SPMD partitioning pass ran
    std::int64_t spmd_collectives_inserted = 0;  // collectives it wrote
    std::int64_t spmd_fallbacks = 0;             // values it replicated (located warnings)
    std::vector<std::string> warnings;           // located, one line per instruction (custom-calls)
};

// The module as a trace: op ids are HLO instruction names. A while loop of 2 or more trips is a
// trace loop (format version 2) whose body holds its ops once, unless it lies inside another
// such loop or opts.unroll_loops: then its ops of trip t > 0 are "<name>@t". board_cores: the
// board's TensorCores; the program needs num_partitions (or the devices its replica groups name)
// and fails naming the config when the board has fewer.
Trace hlo_to_trace(const HloModule& m, const HloImportOptions& opts, std::int64_t board_cores,
                   HloImportStats* stats = nullptr);

// The trace as format v1 JSON (what `tpusim import hlo` writes, one op per line), and as the
// JSON object that parse_trace validates (`tpusim run --hlo` goes through it, so that a run
// of the HLO and a run of its imported trace lower the same ops).
std::string trace_to_json(const Trace& t);
nlohmann::json trace_to_json_object(const Trace& t);

// read_hlo + hlo_to_trace + the trace reader's validation: what `run --hlo`, `import hlo` and
// `trace check --hlo` use.
Trace read_hlo_trace(const std::string& path, const HloImportOptions& opts,
                     std::int64_t board_cores, HloImportStats* stats = nullptr);
// The same for a module already parsed (read_hlo_trace without the read).
Trace hlo_to_checked_trace(const HloModule& m, const HloImportOptions& opts,
                           std::int64_t board_cores, HloImportStats* stats = nullptr);

}  // namespace tpusim
