// `tpusim bench ...`: each microbenchmark registers itself here.
#include "common.h"

namespace tpusim::cli {

void add_bench_commands(CLI::App& bench) {
    add_bench_peak_command(bench);
    add_bench_mxu_command(bench);
    add_bench_hbm_command(bench);
    add_bench_ici_command(bench);
    add_bench_vpu_command(bench);
}

}  // namespace tpusim::cli
