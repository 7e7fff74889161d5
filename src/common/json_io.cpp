#include "tpusim/common/json_io.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <vector>

#include "tpusim/common/error.h"

namespace tpusim {

namespace {

// Line and column (1-based) of byte offset `pos` in `text`.
std::pair<std::size_t, std::size_t> line_col(const std::string& text, std::size_t pos) {
    std::size_t line = 1, col = 1;
    for (std::size_t i = 0; i < pos && i < text.size(); ++i) {
        if (text[i] == '\n') {
            ++line;
            col = 1;
        } else {
            ++col;
        }
    }
    return {line, col};
}

// The one pass over the text that nlohmann::json does not make for us, since it keeps no
// source positions: nesting depth (checked before parsing, so that a file of a million '['
// cannot exhaust the stack in the parser or in the destructor of the parsed value), the first
// key an object names twice (JSON keeps the last; in a config or a trace that is a mistake, an
// edit that did not take, reported once the text has parsed), and the line on which each
// element of one top-level array begins (`lines`).
struct JsonScan {
    std::size_t duplicate_at = std::string::npos;  // byte offset of the second key
    std::string duplicate_key;
};

JsonScan scan_json(const std::string& text, const std::string& name, JsonLines* lines) {
    struct Frame {
        bool object;
        bool expect_key;
        std::set<std::string> keys;
        std::string last_key;  // the key whose value comes next (objects)
    };
    JsonScan scan;
    std::vector<Frame> stack;
    int line = 1;
    bool in_lines_array = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (c == '\n') {
            ++line;
        } else if (c == '"') {
            const std::size_t start = i;
            std::string raw;
            for (++i; i < text.size() && text[i] != '"'; ++i) {
                if (text[i] == '\\') raw += text[i++];
                if (i < text.size()) {
                    if (text[i] == '\n') ++line;
                    raw += text[i];
                }
            }
            if (stack.empty() || !stack.back().object || !stack.back().expect_key) continue;
            Frame& f = stack.back();
            f.expect_key = false;
            if (!f.keys.insert(raw).second && scan.duplicate_at == std::string::npos) {
                scan.duplicate_at = start;
                scan.duplicate_key = raw;
            }
            f.last_key = std::move(raw);
        } else if (c == '{' || c == '[') {
            if (in_lines_array && stack.size() == 2) lines->element_lines.push_back(line);
            if (lines && c == '[' && stack.size() == 1 && stack.back().object &&
                stack.back().last_key == lines->array_key)
                in_lines_array = true;
            stack.push_back({c == '{', c == '{', {}, {}});
            if (stack.size() > static_cast<std::size_t>(kMaxJsonNesting)) {
                auto [l, col] = line_col(text, i);
                throw InputError(name, fmt::format("line {}, column {}", l, col),
                                 fmt::format("JSON nested deeper than {} levels", kMaxJsonNesting));
            }
        } else if (c == '}' || c == ']') {
            if (!stack.empty()) stack.pop_back();
            if (stack.size() <= 1) in_lines_array = false;
        } else if (c == ',' && !stack.empty() && stack.back().object) {
            stack.back().expect_key = true;
        }
    }
    return scan;
}

}  // namespace

nlohmann::json parse_json_text(const std::string& text, const std::string& name, JsonLines* lines) {
    if (text.find_first_not_of(" \t\r\n") == std::string::npos) {
        throw InputError(name, "", "empty file (expected a JSON object)");
    }
    if (lines) lines->element_lines.clear();
    const JsonScan scan = scan_json(text, name, lines);
    try {
        nlohmann::json j = nlohmann::json::parse(text);
        if (scan.duplicate_at != std::string::npos) {
            auto [l, col] = line_col(text, scan.duplicate_at);
            throw InputError(name, fmt::format("line {}, column {}", l, col),
                             fmt::format("duplicate key \"{}\" (an object names each key once)",
                                         scan.duplicate_key));
        }
        return j;
    } catch (const nlohmann::json::parse_error& e) {
        // e.byte is 1-based; point at the offending byte.
        const std::size_t pos = e.byte > 0 ? e.byte - 1 : 0;
        auto [l, c] = line_col(text, pos);
        std::string what = e.what();
        // nlohmann: "[json.exception.parse_error.101] parse error at line 1, column 2: ..."
        const auto colon = what.find(": ", what.find("parse error"));
        what = colon == std::string::npos ? what : what.substr(colon + 2);
        throw InputError(name, fmt::format("line {}, column {}", l, c), "malformed JSON: " + what);
    } catch (const nlohmann::json::exception& e) {
        // e.g. out_of_range.406 "number overflow parsing '1e400'": valid syntax, but no
        // double holds it. The parser gives no position; the first occurrence of the quoted
        // token is the best location we have.
        std::string what = e.what();
        const auto bracket = what.find("] ");
        what = bracket == std::string::npos ? what : what.substr(bracket + 2);
        std::string where;
        const auto q1 = what.find('\'');
        const auto q2 = q1 == std::string::npos ? q1 : what.find('\'', q1 + 1);
        if (q2 != std::string::npos && q2 > q1 + 1) {
            const auto pos = text.find(what.substr(q1 + 1, q2 - q1 - 1));
            if (pos != std::string::npos) {
                auto [l, c] = line_col(text, pos);
                where = fmt::format("line {}, column {}", l, c);
            }
        }
        throw InputError(name, where, "unrepresentable JSON value: " + what);
    }
}

std::string read_input_file(const std::string& path, std::size_t max_bytes, const char* expected) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) {
        throw InputError(path, "", fmt::format("is a directory (expected {})", expected));
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) throw InputError(path, "", "cannot open file");
    // In chunks up to the cap: the size a file claims is not trusted (a device, a pipe).
    std::string text;
    char chunk[1 << 16];
    while (in.read(chunk, sizeof chunk) || in.gcount() > 0) {
        const auto got = static_cast<std::size_t>(in.gcount());
        if (text.size() + got > max_bytes) {
            throw InputError(path, "",
                             fmt::format("larger than {} MiB (expected {} of at most that size)",
                                         max_bytes >> 20, expected));
        }
        text.append(chunk, got);
    }
    if (in.bad()) throw InputError(path, "", "cannot read file");
    return text;
}

nlohmann::json read_json_file(const std::string& path, std::size_t max_bytes) {
    return parse_json_text(read_input_file(path, max_bytes, "a JSON file"), path);
}

std::string json_pointer_child(const std::string& parent, const std::string& key) {
    std::string k;
    for (char c : key) {
        if (c == '~') {
            k += "~0";
        } else if (c == '/') {
            k += "~1";
        } else {
            k += c;
        }
    }
    return parent + "/" + k;
}

std::string json_type_name(const nlohmann::json& j) {
    switch (j.type()) {
        case nlohmann::json::value_t::null:
            return "null";
        case nlohmann::json::value_t::object:
            return "an object";
        case nlohmann::json::value_t::array:
            return "an array";
        case nlohmann::json::value_t::string:
            return "a string";
        case nlohmann::json::value_t::boolean:
            return "a boolean";
        case nlohmann::json::value_t::number_integer:
        case nlohmann::json::value_t::number_unsigned:
            return "an integer";
        case nlohmann::json::value_t::number_float:
            return "a non-integer number";
        default:
            return "an unsupported value";
    }
}

}  // namespace tpusim
