#include "tpusim/common/error.h"

namespace tpusim {

static std::string join_error(const std::string& file, const std::string& where,
                              const std::string& what) {
    std::string s = file.empty() ? std::string("<input>") : file;
    if (!where.empty()) s += ": " + where;
    return s + ": " + what;
}

InputError::InputError(std::string file, std::string where, std::string what)
    : std::runtime_error(join_error(file, where, what)),
      file_(std::move(file)),
      where_(std::move(where)),
      what_(std::move(what)) {}

}  // namespace tpusim
