#pragma once
// Helpers shared by the tests: paths into the source tree and temporary files.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

namespace tpusim::test {

inline std::string source_dir() {
    const char* d = std::getenv("TPUSIM_SOURCE_DIR");
    return d ? d : TPUSIM_SOURCE_DIR;
}
inline std::string config_path(const std::string& name) {
    return source_dir() + "/configs/" + name;
}

// A file in a per-process temporary directory, removed with the directory at exit.
class TempDir {
 public:
    TempDir() {
        path_ = std::filesystem::temp_directory_path() /
                ("tpusim_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter()++));
        std::filesystem::create_directories(path_);
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    std::string write(const std::string& name, const std::string& text) const {
        const auto p = path_ / name;
        std::ofstream(p, std::ios::binary) << text;
        return p.string();
    }
    std::string path(const std::string& name) const { return (path_ / name).string(); }

 private:
    static int& counter() {
        static int c = 0;
        return c;
    }
    std::filesystem::path path_;
};

}  // namespace tpusim::test
