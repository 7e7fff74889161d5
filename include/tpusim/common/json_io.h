#pragma once
// Reading JSON input files (configs, traces) with located, one-line errors: missing or
// unreadable file, empty file, absurd nesting, malformed JSON or bad UTF-8 (line and column).
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tpusim {

inline constexpr int kMaxJsonNesting = 64;
// The largest input files read (docs/limits.md): a config, and a trace or HLO module. Reading
// stops at the cap, so a path such as /dev/zero fails instead of filling the memory.
inline constexpr std::size_t kMaxConfigFileBytes = std::size_t{16} << 20;
inline constexpr std::size_t kMaxProgramFileBytes = std::size_t{1} << 30;

// The whole file as bytes, at most max_bytes. Throws InputError(path, "", what) for a missing,
// unreadable or larger file and for a directory; `expected` names the content ("a JSON file").
std::string read_input_file(const std::string& path, std::size_t max_bytes, const char* expected);

// Throws InputError(path, "line L, column C" or "", what). At most max_bytes are read.
nlohmann::json read_json_file(const std::string& path, std::size_t max_bytes = kMaxConfigFileBytes);
// Where parse_json_text also reports the 1-based line on which each element (object or
// array) of the top-level object's array `array_key` begins: nlohmann::json keeps no source
// positions, and a trace's errors name an op's line.
struct JsonLines {
    std::string array_key;
    std::vector<int> element_lines;
};
nlohmann::json parse_json_text(const std::string& text, const std::string& name,
                               JsonLines* lines = nullptr);

// "/a/b" for {"a","b"}; escapes '~' and '/' per RFC 6901.
std::string json_pointer_child(const std::string& parent, const std::string& key);

// A short description of a JSON value's type for error messages ("a string", "an array").
std::string json_type_name(const nlohmann::json& j);

}  // namespace tpusim
