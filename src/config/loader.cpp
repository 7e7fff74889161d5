// Config loading: files -> (extends chain, overrides) -> one merged JSON object with the origin
// of every leaf -> typed structs -> range validation. Each step is a visitor over the one field
// list in the structs' visit() members (tpusim/config/visitor.h).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "config_checks.h"
#include "quoted_figures.h"
#include "tpusim/common/error.h"
#include "tpusim/common/json_io.h"
#include "tpusim/common/suggest.h"
#include "tpusim/config/tpu_config.h"

namespace tpusim {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// Checks one source's JSON (a file, or one --set override) against the schema: unknown keys,
// wrong types, string choices. Partial objects are fine; the defaults fill in the rest.
class SchemaChecker : public ConfigVisitor {
 public:
    SchemaChecker(json& root, std::string source, bool lenient_strings)
        : source_(std::move(source)), lenient_strings_(lenient_strings) {
        frames_.push_back({&root, "", {}});
    }

    void finish_root() {
        frames_.back().seen.insert("extends");
        check_unknown(frames_.back());
    }

    void value(const char* key, std::int64_t&, Limits, const char*, const char*) override {
        json* j = find(key);
        if (!j) return;
        if (j->is_number_unsigned() &&
            j->get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)) {
            fail(key, "integer out of range");
        }
        if (!j->is_number_integer()) {
            fail(key, fmt::format("expected an integer, got {}", describe(*j)));
        }
    }
    void value(const char* key, double&, Limits, const char*, const char*) override {
        json* j = find(key);
        if (j && !j->is_number()) fail(key, fmt::format("expected a number, got {}", describe(*j)));
    }
    void value(const char* key, bool&, const char*) override {
        json* j = find(key);
        if (j && !j->is_boolean()) {
            fail(key, fmt::format("expected true or false, got {}", describe(*j)));
        }
    }
    void value(const char* key, std::string&, const std::vector<std::string>& choices,
               const char*) override {
        json* j = find(key);
        if (!j) return;
        if (!j->is_string() && lenient_strings_ && !j->is_object() && !j->is_array()) {
            *j = j->dump();  // --set name=123: the bare text is the string
        }
        if (!j->is_string()) fail(key, fmt::format("expected a string, got {}", describe(*j)));
        if (!choices.empty() &&
            std::find(choices.begin(), choices.end(), j->get<std::string>()) == choices.end()) {
            fail(key, fmt::format("expected one of {}, got \"{}\"", join(choices),
                                  j->get<std::string>()));
        }
    }

 protected:
    bool begin_section(const char* key, const char*) override {
        json* j = find(key);
        if (!j) return false;
        if (!j->is_object()) fail(key, fmt::format("expected an object, got {}", describe(*j)));
        frames_.push_back({j, json_pointer_child(frames_.back().pointer, key), {}});
        return true;
    }
    void end_section() override {
        check_unknown(frames_.back());
        frames_.pop_back();
    }

 private:
    struct Frame {
        json* obj;
        std::string pointer;
        std::set<std::string> seen;
    };

    json* find(const char* key) {
        Frame& f = frames_.back();
        f.seen.insert(key);
        auto it = f.obj->find(key);
        return it == f.obj->end() ? nullptr : &*it;
    }
    void check_unknown(const Frame& f) {
        for (auto it = f.obj->begin(); it != f.obj->end(); ++it) {
            if (!f.seen.count(it.key())) {
                std::vector<std::string> known(f.seen.begin(), f.seen.end());
                known.erase(std::remove(known.begin(), known.end(), "extends"), known.end());
                // A trace given where a configuration belongs: say where it goes.
                const bool trace =
                    f.pointer.empty() && (f.obj->contains("ops") || f.obj->contains("format"));
                throw InputError(
                    source_, json_pointer_child(f.pointer, it.key()),
                    fmt::format(
                        "unknown key \"{}\"{} (known keys: {}){}", it.key(),
                        trace ? "" : did_you_mean(it.key(), known), join(known),
                        trace ? " (this looks like a tpusim trace: give it with --trace)" : ""));
            }
        }
    }
    [[noreturn]] void fail(const char* key, const std::string& what) {
        throw InputError(source_, json_pointer_child(frames_.back().pointer, key), what);
    }
    static std::string describe(const json& j) {
        if (j.is_object() || j.is_array()) return json_type_name(j);
        return fmt::format("{} ({})", json_type_name(j),
                           j.dump(-1, ' ', false, json::error_handler_t::replace));
    }
    static std::string join(const std::vector<std::string>& v) {
        std::string s;
        for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
        return s;
    }

    std::string source_;
    bool lenient_strings_;
    std::vector<Frame> frames_;
};

// Copies values from the merged (already type-checked) JSON into the structs.
class Applier : public ConfigVisitor {
 public:
    explicit Applier(const json& root) { stack_.push_back(&root); }
    void value(const char* key, std::int64_t& v, Limits, const char*, const char*) override {
        if (auto* j = find(key)) v = j->get<std::int64_t>();
    }
    void value(const char* key, double& v, Limits, const char*, const char*) override {
        if (auto* j = find(key)) v = j->get<double>();
    }
    void value(const char* key, bool& v, const char*) override {
        if (auto* j = find(key)) v = j->get<bool>();
    }
    void value(const char* key, std::string& v, const std::vector<std::string>&,
               const char*) override {
        if (auto* j = find(key)) v = j->get<std::string>();
    }

 protected:
    bool begin_section(const char* key, const char*) override {
        const json* j = find(key);
        if (!j) return false;
        stack_.push_back(j);
        return true;
    }
    void end_section() override { stack_.pop_back(); }

 private:
    const json* find(const char* key) {
        auto it = stack_.back()->find(key);
        return it == stack_.back()->end() ? nullptr : &*it;
    }
    std::vector<const json*> stack_;
};

// Checks every value of the final structs against its Limits; names the source that set it.
class RangeValidator : public ConfigVisitor {
 public:
    explicit RangeValidator(const std::map<std::string, std::string>& origin) : origin_(origin) {
        path_.push_back("");
    }
    void value(const char* key, std::int64_t& v, Limits lim, const char*, const char*) override {
        check(key, static_cast<double>(v), lim, true, fmt::format("{}", v));
    }
    void value(const char* key, double& v, Limits lim, const char*, const char*) override {
        check(key, v, lim, false, fmt::format("{}", v));
    }
    void value(const char*, bool&, const char*) override {}
    void value(const char*, std::string&, const std::vector<std::string>&, const char*) override {}

 protected:
    bool begin_section(const char* key, const char*) override {
        path_.push_back(json_pointer_child(path_.back(), key));
        return true;
    }
    void end_section() override { path_.pop_back(); }

 private:
    void check(const char* key, double v, const Limits& lim, bool integer,
               const std::string& shown) {
        const std::string expected = lim.violation(v, integer);
        if (expected.empty()) return;
        const std::string ptr = json_pointer_child(path_.back(), key);
        throw InputError(config_origin(origin_, ptr), ptr,
                         fmt::format("expected {}, got {}", expected, shown));
    }
    const std::map<std::string, std::string>& origin_;
    std::vector<std::string> path_;
};

// Records `source` for every leaf under `ptr` (a whole section may arrive as one value), so that
// a leaf nobody set resolves to the defaults rather than to the file that set its section.
void record_origin(const json& value, const std::string& ptr, const std::string& source,
                   std::map<std::string, std::string>& origin) {
    if (value.is_object() && !value.empty()) {
        for (auto it = value.begin(); it != value.end(); ++it) {
            record_origin(*it, json_pointer_child(ptr, it.key()), source, origin);
        }
    } else {
        origin[ptr] = source;
    }
}

// Deep merge of `over` into `base`; records which source set each leaf.
void merge(json& base, const json& over, const std::string& pointer, const std::string& source,
           std::map<std::string, std::string>& origin) {
    for (auto it = over.begin(); it != over.end(); ++it) {
        if (pointer.empty() && it.key() == "extends") continue;
        const std::string ptr = json_pointer_child(pointer, it.key());
        auto bit = base.find(it.key());
        if (it->is_object() && bit != base.end() && bit->is_object()) {
            merge(*bit, *it, ptr, source, origin);
        } else {
            base[it.key()] = *it;
            record_origin(*it, ptr, source, origin);
        }
    }
}

json load_chain(const std::string& path, std::vector<std::string>& stack,
                std::map<std::string, std::string>& origin, QuoteBases& quotes) {
    std::error_code ec;
    const std::string canonical = fs::weakly_canonical(path, ec).string();
    const std::string key = ec ? path : canonical;
    if (std::find(stack.begin(), stack.end(), key) != stack.end()) {
        std::string cycle;
        for (const auto& s : stack) cycle += s + " -> ";
        throw InputError(path, "/extends", "extends cycle: " + cycle + key);
    }
    if (stack.size() > 16) throw InputError(path, "/extends", "extends chain deeper than 16");
    json doc = read_json_file(path);
    if (!doc.is_object()) {
        throw InputError(path, "",
                         "expected a JSON object at the top level, got " + json_type_name(doc));
    }
    TpuConfig probe;
    SchemaChecker checker(doc, path, false);
    probe.visit(checker);
    checker.finish_root();

    json merged = json::object();
    if (auto it = doc.find("extends"); it != doc.end()) {
        if (!it->is_string() || it->get<std::string>().empty()) {
            throw InputError(path, "/extends", "expected a file name relative to this file");
        }
        const fs::path base = fs::path(path).parent_path() / it->get<std::string>();
        // A config names only files: a device or a pipe (/dev/zero, /dev/stdin) could block.
        if (fs::exists(base, ec) && !fs::is_regular_file(base, ec)) {
            throw InputError(path, "/extends",
                             fmt::format("names {}, which is not a regular file", base.string()));
        }
        if (!fs::exists(base, ec)) {
            // The referring file and its key: "cannot open tpu_v3_9.json" alone does not say
            // where the name came from.
            std::vector<std::string> siblings;
            for (const auto& e :
                 fs::directory_iterator(base.parent_path().empty() ? "." : base.parent_path(), ec))
                if (e.path().extension() == ".json")
                    siblings.push_back(e.path().filename().string());
            std::sort(siblings.begin(), siblings.end());
            throw InputError(path, "/extends",
                             fmt::format("names {}, which does not exist{}", base.string(),
                                         did_you_mean(base.filename().string(), siblings)));
        }
        stack.push_back(key);
        merged = load_chain(base.string(), stack, origin, quotes);
        stack.pop_back();
    }
    merge(merged, doc, "", path, origin);
    // The file's name, not its path: a note (and the hash of the config in a sweep's results)
    // must not depend on where the repository sits.
    quotes.note(doc, merged, fs::path(path).filename().string());
    return merged;
}

json parse_override(const std::string& text, std::string& source) {
    // A command-line argument is any bytes; the value ends up in JSON (the report echoes the
    // config), which holds UTF-8 only.
    try {
        (void)json(text).dump();
    } catch (const json::type_error&) {
        throw InputError("--set", "", "the override is not valid UTF-8");
    }
    source = "--set " + text;
    const auto eq = text.find('=');
    if (eq == std::string::npos || eq == 0) {
        throw InputError(source, "", "expected dotted.key=value (e.g. mxu.rows=256)");
    }
    const std::string key = text.substr(0, eq);
    const std::string raw = text.substr(eq + 1);
    std::vector<std::string> parts;
    std::string pointer;
    for (std::size_t start = 0;;) {
        const auto dot = key.find('.', start);
        parts.push_back(key.substr(start, dot == std::string::npos ? dot : dot - start));
        if (parts.back().empty()) {
            throw InputError(source, "", "empty component in key \"" + key + "\"");
        }
        pointer = json_pointer_child(pointer, parts.back());
        if (dot == std::string::npos) break;
        start = dot + 1;
    }
    json value;
    try {
        value = raw.empty() ? json(raw) : json::parse(raw);
    } catch (const json::parse_error&) {
        value = raw;  // a bare word: a string
    } catch (const json::exception&) {
        // Valid JSON syntax that no double can hold (1e400).
        throw InputError(source, pointer, "expected a number within the range of a double");
    }
    json root = json::object();
    json* cur = &root;
    for (std::size_t i = 0; i + 1 < parts.size(); ++i) cur = &(*cur)[parts[i]];
    (*cur)[parts.back()] = value;
    return root;
}

}  // namespace

std::string config_origin(const std::map<std::string, std::string>& origin,
                          const std::string& pointer) {
    // The closest enclosing pointer that some source set; defaults otherwise.
    std::string p = pointer;
    while (!p.empty()) {
        if (auto it = origin.find(p); it != origin.end()) return it->second;
        p = p.substr(0, p.rfind('/'));
    }
    return "<defaults>";
}

TpuConfig load_config(const std::string& path, const std::vector<std::string>& overrides) {
    std::map<std::string, std::string> origin;
    std::vector<std::string> stack;
    QuoteBases quotes;
    quotes.peak = quotes.memory = json::object();  // no file quotes: the defaults' figures
    quotes.peak_source = quotes.memory_source = "<defaults>";
    json merged = load_chain(path, stack, origin, quotes);
    for (const auto& text : overrides) {
        std::string source;
        json over = parse_override(text, source);
        TpuConfig probe;
        SchemaChecker checker(over, source, true);
        probe.visit(checker);
        checker.finish_root();
        if (over.contains("extends")) throw InputError(source, "/extends", "cannot be overridden");
        merge(merged, over, "", source, origin);
        quotes.note(over, merged, source);
    }
    TpuConfig cfg;
    Applier applier(merged);
    cfg.visit(applier);
    drop_stale_quotes(cfg, quotes, [](const json& merged) {
        TpuConfig c;
        Applier a(merged);
        c.visit(a);
        return c;
    });
    RangeValidator validator(origin);
    cfg.visit(validator);
    check_relations(cfg, origin);
    return cfg;
}

}  // namespace tpusim
