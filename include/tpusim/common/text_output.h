#pragma once
// Writing what a command produces (a report, a CSV, a trace, a module's text) to a file or
// to stdout.
#include <string>

namespace tpusim {

// Writes `text` to the file `path`, or to stdout when `path` is "-". Throws
// InputError(path, "", "cannot write <what>") when the file cannot be opened and
// "error while writing <what>" when writing it fails.
void write_text(const std::string& path, const std::string& text, const std::string& what = "file");

}  // namespace tpusim
