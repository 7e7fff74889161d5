// libsystemc.so defines main() and calls sc_main(), so every program that links it must define
// sc_main. In the libFuzzer executables libFuzzer's main() runs instead and this is never
// called; it says so if it ever is. (C linkage, as sysc/kernel/sc_externs.h declares it.)
#include <cstdio>

extern "C" int sc_main(int, char**) {
    std::fputs("fuzz: sc_main called: libFuzzer's main() was expected to run instead\n", stderr);
    return 1;
}
