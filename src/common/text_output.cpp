#include "tpusim/common/text_output.h"

#include <fstream>
#include <iostream>

#include "tpusim/common/error.h"

namespace tpusim {

void write_text(const std::string& path, const std::string& text, const std::string& what) {
    if (path == "-") {
        std::cout << text;
        return;
    }
    std::ofstream out(path);
    if (!out) throw InputError(path, "", "cannot write " + what);
    out << text;
    if (!out) throw InputError(path, "", "error while writing " + what);
}

}  // namespace tpusim
