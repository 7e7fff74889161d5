#pragma once
// Reading JSON input files (configs, traces) with located, one-line errors: missing or
// unreadable file, empty file, absurd nesting, malformed JSON or bad UTF-8 (line and column).
#include <nlohmann/json.hpp>
#include <string>

namespace tpusim {

inline constexpr int kMaxJsonNesting = 64;

// Throws InputError(path, "line L, column C" or "", what).
nlohmann::json read_json_file(const std::string& path);
// Throws InputError(path, "", "is a directory ...") for a directory.
void check_regular_file(const std::string& path);
nlohmann::json parse_json_text(const std::string& text, const std::string& name);

// "/a/b" for {"a","b"}; escapes '~' and '/' per RFC 6901.
std::string json_pointer_child(const std::string& parent, const std::string& key);

// A short description of a JSON value's type for error messages ("a string", "an array").
std::string json_type_name(const nlohmann::json& j);

}  // namespace tpusim
