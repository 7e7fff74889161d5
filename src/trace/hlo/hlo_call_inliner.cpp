// The call inliner (docs/hlo.md, "Passes"): every `call` replaced by the instructions of the
// computation it calls, as XLA's CallInliner (xla/hlo/transforms/simplifiers/call_inliner.cc)
// does at the start of every compilation pipeline, so that the fusion pass sees one graph. A
// JAX `custom_jvp` function (jax.nn.relu, jax.nn.gelu ...) is a `call` in a module written
// before optimisation; left as a call, its body is a computation of its own, and fusion
// cannot cross into it: each ReLU of ResNet-50 was a kernel of its own.
//
// The module is rebuilt instruction by instruction, not printed and parsed again: the copies
// keep their offsets into the original text, so the lines of the ops in reports stay the
// lines of the file the user gave (an inlined op names its line in the called computation).
#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <unordered_map>
#include <unordered_set>

#include "hlo_import.h"

namespace tpusim {

namespace {

class CallInliner {
 public:
    CallInliner(const HloModule& m, std::int64_t max_instructions)
        : m_(m), max_(max_instructions) {}

    // nullopt when the module has no call to inline, one cannot be written inline (a call
    // whose result would be an element of an element of a tuple operand), or inlining would
    // write more than max_instructions (calls that fan out exponentially): then nothing is,
    // and the import walks the calls in place under its own limits.
    std::optional<HloModule> run(std::int64_t& count) {
        // The size of the result first, so that calls that fan out are refused before any copy.
        std::int64_t total = 0;
        for (std::size_t ci = 0; ci < m_.computations.size(); ++ci)
            total = std::min(max_ + 1, total + inlined_size(static_cast<std::int32_t>(ci), 0));
        if (total > max_) return std::nullopt;
        HloModule out = m_;
        count_ = 0;
        for (std::size_t ci = 0; ci < m_.computations.size(); ++ci) {
            const HloComputation& c = m_.computations[ci];
            bool calls = false;
            for (const auto& in : c.instrs) calls = calls || inlinable(in);
            if (!calls) continue;
            used_.clear();
            next_.clear();
            for (const auto& in : c.instrs) used_.insert(std::string(in.name));
            instrs_.clear();
            HloOperand root{};
            if (!rebuild(c, nullptr, root)) return std::nullopt;
            if (root.tuple_index >= 0 || root.instr < 0) return std::nullopt;
            for (auto& in : instrs_) in.root = false;
            instrs_[static_cast<std::size_t>(root.instr)].root = true;
            out.computations[ci].instrs = std::move(instrs_);
            out.computations[ci].root = root.instr;
        }
        if (count_ == 0) return std::nullopt;
        out.owned_names = std::move(names_);
        count = count_;
        return out;
    }

 private:
    bool inlinable(const HloInstr& in) const {
        return in.op == HloOpcode::Call && in.callees.size() == 1;
    }

    // Instructions of computation ci with its calls inlined (its own parameters counted),
    // at most max_ + 1; memoised.
    std::int64_t inlined_size(std::int32_t ci, int depth) {
        if (depth > kMaxHloCallDepth)
            m_.fail(m_.computations[static_cast<std::size_t>(ci)].offset,
                    fmt::format("computations call each other more than {} levels deep",
                                kMaxHloCallDepth));
        if (size_.empty()) size_.assign(m_.computations.size(), -1);
        std::int64_t& s = size_[static_cast<std::size_t>(ci)];
        if (s >= 0) return s;
        std::int64_t n = 0;
        for (const auto& in : m_.computations[static_cast<std::size_t>(ci)].instrs) {
            const std::int64_t k = inlinable(in) ? inlined_size(in.callees[0], depth + 1) : 1;
            n = std::min(max_ + 1, n + k);
        }
        return s = n;
    }

    // Appends the instructions of c to instrs_, its parameters bound to `args` (null: c is the
    // computation being rebuilt, whose parameters stay); `root` receives the value of its root.
    bool rebuild(const HloComputation& c, const std::vector<HloOperand>* args, HloOperand& root) {
        if (++depth_ > kMaxHloCallDepth)
            m_.fail(c.offset, fmt::format("computations call each other more than {} levels deep",
                                          kMaxHloCallDepth));
        std::vector<HloOperand> val(c.instrs.size());
        for (std::size_t i = 0; i < c.instrs.size(); ++i) {
            const HloInstr& in = c.instrs[i];
            if (args && in.op == HloOpcode::Parameter) {
                const std::size_t n = std::strtoull(std::string(in.literal).c_str(), nullptr, 10);
                if (n >= args->size())
                    m_.fail(in.offset,
                            fmt::format("parameter({}) of a computation called with {} operands", n,
                                        args->size()));
                val[i] = (*args)[n];
                continue;
            }
            std::vector<HloOperand> ops;
            for (const auto& o : in.operands) {
                HloOperand v = val[static_cast<std::size_t>(o.instr)];
                if (o.tuple_index >= 0) {
                    if (v.tuple_index >= 0) return false;  // an element of an element
                    v.tuple_index = o.tuple_index;
                }
                ops.push_back(v);
            }
            if (inlinable(in)) {
                ++count_;
                const auto& callee = m_.computations[static_cast<std::size_t>(in.callees[0])];
                if (!rebuild(callee, &ops, val[i])) return false;
                continue;
            }
            HloInstr copy = in;
            copy.operands = std::move(ops);
            // The computation's own instructions keep their names; an inlined one keeps its
            // own where it is free in this computation, else gets a fresh one (name.1, ...).
            if (args && !used_.insert(std::string(in.name)).second) {
                auto name = std::make_shared<const std::string>(fresh(std::string(in.name)));
                copy.name = *name;
                names_.push_back(std::move(name));
            }
            if (++written_ > max_) return false;
            instrs_.push_back(std::move(copy));
            val[i] = {static_cast<std::int32_t>(instrs_.size() - 1), -1};
        }
        --depth_;
        root = val[static_cast<std::size_t>(c.root)];
        return true;
    }

    // A name not used in this computation: base.k, k counted per base from where the last
    // search ended (a name inlined N times costs N tries, not N^2).
    std::string fresh(const std::string& base) {
        int& k = next_[base];
        std::string n;
        do n = fmt::format("{}.{}", base, ++k);
        while (!used_.insert(n).second);
        return n;
    }

    const HloModule& m_;
    std::vector<HloInstr> instrs_;
    std::unordered_map<std::string, int> next_;
    std::vector<std::int64_t> size_;
    std::unordered_set<std::string> used_;
    std::vector<std::shared_ptr<const std::string>> names_;
    std::int64_t max_, written_ = 0;
    std::int64_t count_ = 0;
    int depth_ = 0;
};

}  // namespace

bool has_calls(const HloModule& m) {
    for (const auto& c : m.computations)
        for (const auto& in : c.instrs)
            if (in.op == HloOpcode::Call) return true;
    return false;
}

std::optional<HloModule> inline_calls(const HloModule& m, std::int64_t* calls,
                                      std::int64_t max_instructions) {
    std::int64_t n = 0;
    std::optional<HloModule> out = CallInliner(m, max_instructions).run(n);
    if (calls) *calls = out ? n : 0;
    return out;
}

}  // namespace tpusim
