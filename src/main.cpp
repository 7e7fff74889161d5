// The `tpusim` command. Exit status: 0 success; 2 bad input (usage, config, trace) with one
// line "error: <file>: <where>: <what>"; 1 internal error.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <systemc>

#include "cli/common.h"
#include "tpusim/common/error.h"
#include "tpusim/common/sanitizer.h"
#include "tpusim/common/suggest.h"
#include "tpusim/stats/report.h"

namespace {

// A word where a subcommand belongs that names none ("tpusim runn", "tpusim bench mxx"): CLI11
// would say only that a subcommand is required. Throws InputError naming the closest command.
void check_command_words(CLI::App& app, int argc, char* argv[]) {
    CLI::App* at = &app;
    std::string path = "tpusim";
    for (int i = 1; i < argc; ++i) {
        const std::string word = argv[i];
        const auto subs = at->get_subcommands([](const CLI::App*) { return true; });
        // Only where a subcommand is required: `sweep SPEC` takes a file where `sweep merge` is
        // also possible.
        if (word.empty() || word[0] == '-' || subs.empty() || at->get_require_subcommand_min() == 0)
            return;
        std::vector<std::string> names;
        for (const CLI::App* s : subs) names.push_back(s->get_name());
        if (std::find(names.begin(), names.end(), word) == names.end())
            throw tpusim::InputError(path, "",
                                     "unknown command \"" + word + "\"" +
                                         tpusim::did_you_mean(word, names) + " (see " + path +
                                         " --help)");
        at = at->get_subcommand(word);
        path += " " + word;
    }
}

int run_cli(int argc, char* argv[]) {
    CLI::App app{"tpusim: cycle-accurate simulator of Cloud TPU v2-8 and v3-8 boards"};
    app.set_version_flag("--version", std::string("tpusim ") + tpusim::ToolInfo::version() + " (" +
                                          tpusim::ToolInfo::git_revision() + ")");
    app.require_subcommand(1);
    tpusim::cli::add_info_command(app);
    tpusim::cli::add_config_command(app);
    tpusim::cli::add_run_command(app);
    tpusim::cli::add_train_command(app);
    tpusim::cli::add_trace_command(app);
    tpusim::cli::add_import_command(app);
    tpusim::cli::add_sweep_command(app);
    tpusim::cli::add_compare_command(app);
    tpusim::cli::add_report_command(app);
    auto* bench = app.add_subcommand("bench", "microbenchmarks run through the simulator");
    bench->require_subcommand(1);
    tpusim::cli::add_bench_commands(*bench);
    try {
        check_command_words(app, argc, argv);
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        std::cerr << "error: tpusim: " << e.what() << " (see tpusim --help)\n";
        return 2;
    } catch (const tpusim::cli::CliExit& e) {
        return e.status;
    } catch (const tpusim::InputError& e) {
        std::cerr << "error: " << e.what() << "\n";
        return 2;
    } catch (const std::bad_alloc&) {
        std::cerr << "error: out of memory\n";
        return 1;
    } catch (const std::exception& e) {
        std::cerr << "internal error: " << e.what() << "\n";
        return 1;
    }
    return 0;
}

}  // namespace

int sc_main(int argc, char* argv[]) {
    const int status = run_cli(argc, argv);
    // Back on the main stack after the last sc_start: see sanitizer.h for why ASan must be told.
    tpusim::announce_main_stack_to_sanitizers();
    return status;
}

int main(int argc, char* argv[]) {
    // The SystemC banner would precede every report on stdout.
    setenv("SC_COPYRIGHT_MESSAGE", "DISABLE", 0);
    return sc_core::sc_elab_and_sim(argc, argv);
}
