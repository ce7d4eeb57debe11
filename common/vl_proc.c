/*  vl_proc: signals and children. */
#include "vl_proc.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "vl_log.h"

volatile sig_atomic_t vl_interrupted = 0;

static void s_on_signal(int sig)
{
    vl_interrupted = sig;
}

void vl_proc_catch_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = s_on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

pid_t vl_proc_spawn(char *const argv[])
{
    return vl_proc_spawn_to(argv, -1);
}

pid_t vl_proc_spawn_to(char *const argv[], int out_fd)
{
    return vl_proc_spawn_exec("/proc/self/exe", argv, out_fd);
}

pid_t vl_proc_spawn_exec(const char *path, char *const argv[], int out_fd)
{
    pid_t pid = fork();
    if (pid == 0) {
        if (out_fd >= 0 && (dup2(out_fd, STDOUT_FILENO) < 0 || dup2(out_fd, STDERR_FILENO) < 0))
            _exit(127);
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        execvp(path, argv);
        fprintf(stderr, "volley: cannot start %s (%s): %s\n", argv[1] ? argv[1] : argv[0], path,
                strerror(errno));
        _exit(127);
    }
    return pid;
}

int vl_proc_reap(pid_t *pids, int n, int *status)
{
    for (int i = 0; i < n; i++) {
        if (pids[i] > 0 && waitpid(pids[i], status, WNOHANG) == pids[i]) {
            pids[i] = 0;
            return i;
        }
    }
    return -1;
}

int vl_proc_stop_one(pid_t *pid, int grace_ms, int *status)
{
    int st = 0;
    int *out = status ? status : &st;
    if (*pid <= 0)
        return -1;
    kill(*pid, SIGTERM);
    struct timespec tick = {0, 10 * 1000 * 1000};
    for (int waited = 0; waited < grace_ms; waited += 10) {
        if (waitpid(*pid, out, WNOHANG) == *pid) {
            *pid = 0;
            return WIFEXITED(*out) ? WEXITSTATUS(*out) : -1;
        }
        nanosleep(&tick, NULL);
    }
    kill(*pid, SIGKILL);
    waitpid(*pid, out, 0);
    *pid = 0;
    return -1;
}

const char *vl_proc_describe(int status, char *out, size_t size)
{
    const char *abbrev = NULL;
    int sig = WIFSIGNALED(status) ? WTERMSIG(status) : WIFSTOPPED(status) ? WSTOPSIG(status) : 0;
    if (sig)
        abbrev = sigabbrev_np(sig); // glibc's "SEGV"; NULL for a number it does not know
    if (WIFEXITED(status))
        snprintf(out, size, "exit %d", WEXITSTATUS(status));
    else if (sig)
        snprintf(out, size, "%s by signal %d (SIG%s)", WIFSIGNALED(status) ? "killed" : "stopped",
                 sig, abbrev ? abbrev : "?");
    else
        snprintf(out, size, "wait status %d", status);
    return out;
}

void vl_proc_stop(pid_t *pids, int n, int grace_ms)
{
    vl_proc_stop_all(pids, n, grace_ms, NULL);
}

/* Reaps, without waiting, each child of pids that exited, keeping its wait
   status in status[i] (when status is not NULL). Returns how many run on. */
static int s_reap_each(pid_t *pids, int n, int *status)
{
    int st, running = 0;
    for (int i = 0; i < n; i++) {
        if (pids[i] > 0 && waitpid(pids[i], &st, WNOHANG) == pids[i]) {
            pids[i] = 0;
            if (status)
                status[i] = st;
        }
        running += pids[i] > 0;
    }
    return running;
}

void vl_proc_stop_all(pid_t *pids, int n, int grace_ms, int *status)
{
    for (int i = 0; i < n; i++) {
        if (status)
            status[i] = 0;
        if (pids[i] > 0)
            kill(pids[i], SIGTERM);
    }
    struct timespec tick = {0, 10 * 1000 * 1000};
    for (int waited = 0; waited < grace_ms && s_reap_each(pids, n, status); waited += 10)
        nanosleep(&tick, NULL);
    for (int i = 0; i < n; i++) {
        if (pids[i] > 0) {
            int st = 0;
            kill(pids[i], SIGKILL);
            waitpid(pids[i], &st, 0);
            if (status)
                status[i] = st;
            pids[i] = 0;
        }
    }
}

unsigned long long vl_proc_rss_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long long size = 0, resident = 0;
    if (!f)
        return 0;
    int n = fscanf(f, "%llu %llu", &size, &resident);
    fclose(f);
    long page = sysconf(_SC_PAGESIZE);
    return n == 2 && page > 0 ? resident * (unsigned long long)page : 0;
}

void vl_proc_sleep_until(int64_t deadline_ns)
{
    int64_t left = deadline_ns - vl_now_ns();
    if (left <= 0 || vl_interrupted)
        return;
    struct timespec ts = {(time_t)(left / 1000000000), (long)(left % 1000000000)};
    nanosleep(&ts, NULL); // EINTR on SIGINT/SIGTERM
}
