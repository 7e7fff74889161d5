// Worker processes for a sweep: fork/exec, at most N at a time; wait4 gives each child's exit
// status and peak RSS. A child gets SIGKILL when the driver dies (PR_SET_PDEATHSIG), so a
// killed driver leaves no simulation running on its own.
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <stdexcept>

#include "sweep.h"

namespace tpusim::cli::sweep {

namespace {

using Clock = std::chrono::steady_clock;

pid_t spawn(const Job& job) {
    std::vector<char*> argv;
    for (const auto& a : job.argv) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
    if (pid == 0) {
        // Child: only async-signal-safe calls until exec.
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(127);  // the driver died before the prctl
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        const int fd = open(job.log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
        if (!job.cwd.empty() && chdir(job.cwd.c_str()) != 0) _exit(127);
        execvp(argv[0], argv.data());
        _exit(127);
    }
    return pid;
}

}  // namespace

std::string last_line(const std::string& path) {
    std::ifstream in(path);
    std::string line, last;
    while (std::getline(in, line)) {
        if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
    }
    return last;
}

void run_jobs(const std::vector<Job>& jobs, int workers,
              const std::function<void(std::size_t, const JobResult&)>& on_done,
              const std::function<bool()>& stop) {
    struct Running {
        std::size_t job;
        Clock::time_point t0;
    };
    std::map<pid_t, Running> running;
    std::size_t next = 0;
    bool stopping = false;
    auto fill = [&] {
        while (!stopping && next < jobs.size() && static_cast<int>(running.size()) < workers) {
            running[spawn(jobs[next])] = {next, Clock::now()};
            ++next;
        }
    };
    while (true) {
        if (!stopping && stop()) {
            stopping = true;
            for (const auto& [pid, r] : running) kill(pid, SIGTERM);
        }
        fill();
        if (running.empty()) break;
        int status = 0;
        rusage ru{};
        const pid_t pid = wait4(-1, &status, 0, &ru);
        if (pid < 0) {
            if (errno == EINTR) continue;  // a signal for the driver: check stop() again
            throw std::runtime_error(std::string("wait4: ") + std::strerror(errno));
        }
        const auto it = running.find(pid);
        if (it == running.end()) continue;
        JobResult r;
        r.wall_seconds = std::chrono::duration<double>(Clock::now() - it->second.t0).count();
        r.peak_rss_mib = static_cast<double>(ru.ru_maxrss) / 1024.0;  // KiB on Linux
        if (WIFEXITED(status)) {
            r.exit_status = WEXITSTATUS(status);
        } else if (WIFSIGNALED(status)) {
            r.signal = WTERMSIG(status);
        }
        const std::size_t job = it->second.job;
        running.erase(it);
        fill();  // the next worker starts before the driver spends time recording this one
        if (!stopping || r.exit_status == 0) on_done(job, r);
    }
}

}  // namespace tpusim::cli::sweep
