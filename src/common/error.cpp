#include "tpusim/common/error.h"

namespace tpusim {

namespace {

// Error text echoes pieces of the input (keys, ids, file names). Control characters and bytes
// that are not UTF-8 are written as \xNN, so that the one-line message stays one printable line.
std::string printable(const std::string& s) {
    std::string out;
    const auto* p = reinterpret_cast<const unsigned char*>(s.data());
    const std::size_t n = s.size();
    auto hex = [&](unsigned char c) {
        static const char* digits = "0123456789abcdef";
        out += "\\x";
        out += digits[c >> 4];
        out += digits[c & 15];
    };
    for (std::size_t i = 0; i < n;) {
        const unsigned char c = p[i];
        if (c < 0x80) {
            if (c < 0x20 || c == 0x7f) {
                hex(c);
            } else {
                out += static_cast<char>(c);
            }
            ++i;
            continue;
        }
        // A well-formed UTF-8 sequence (no overlongs, no surrogates, <= U+10FFFF) is kept.
        std::size_t len = c >= 0xc2 && c <= 0xdf   ? 2
                          : c >= 0xe0 && c <= 0xef ? 3
                          : c >= 0xf0 && c <= 0xf4 ? 4
                                                   : 0;
        bool ok = len > 0 && i + len <= n;
        for (std::size_t k = 1; ok && k < len; ++k) ok = (p[i + k] & 0xc0) == 0x80;
        if (ok && len == 3) {
            ok = !(c == 0xe0 && p[i + 1] < 0xa0) && !(c == 0xed && p[i + 1] >= 0xa0);
        }
        if (ok && len == 4)
            ok = !(c == 0xf0 && p[i + 1] < 0x90) && !(c == 0xf4 && p[i + 1] >= 0x90);
        if (!ok) {
            hex(c);
            ++i;
            continue;
        }
        out.append(s, i, len);
        i += len;
    }
    return out;
}

std::string join_error(const std::string& file, const std::string& where, const std::string& what) {
    std::string s = file.empty() ? std::string("<input>") : file;
    if (!where.empty()) s += ": " + where;
    return printable(s + ": " + what);
}

}  // namespace

InputError::InputError(std::string file, std::string where, std::string what)
    : std::runtime_error(join_error(file, where, what)),
      file_(std::move(file)),
      where_(std::move(where)),
      what_(std::move(what)) {}

}  // namespace tpusim
