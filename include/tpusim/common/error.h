#pragma once
// Errors are exceptions carried to the CLI, which prints one line and exits.
//   InputError: bad input (usage, config, trace) -> exit 2, printed as
//               "error: <file>: <where>: <what>".
//   anything else escaping to main is an internal error -> exit 1.
#include <stdexcept>
#include <string>

namespace tpusim {

class InputError : public std::runtime_error {
 public:
  // `where` is a JSON pointer, "line L, column C", "op \"id\"" or empty.
  InputError(std::string file, std::string where, std::string what);
  const std::string& file() const { return file_; }
  const std::string& where() const { return where_; }
  const std::string& what_only() const { return what_; }

 private:
  std::string file_, where_, what_;
};

}  // namespace tpusim
