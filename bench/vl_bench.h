/*  vl_bench: what volley's benchmarks share: --quick and --help, a checksum
    to verify output before a figure is printed, and best-of-runs timing. */
#ifndef VL_BENCH_H
#define VL_BENCH_H

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* How many timed runs of how many seconds each; the best run counts. */
typedef struct {
    int runs;
    double run_s;
} vl_bench_plan_t;

/* Returns CLOCK_MONOTONIC in seconds. */
static inline double vl_bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Returns the best ms per call of fn(arg) over runs timed runs of at least
   run_s seconds each, after one warm-up call. */
static inline double vl_bench_best_ms(int runs, double run_s, void (*fn)(void *), void *arg)
{
    fn(arg);
    double best = INFINITY;
    for (int r = 0; r < runs; r++) {
        int calls = 0;
        double t0 = vl_bench_now(), dt;
        do {
            fn(arg);
            calls++;
            dt = vl_bench_now() - t0;
        } while (dt < run_s);
        best = fmin(best, dt * 1e3 / calls);
    }
    return best;
}

/* Parses the flags every benchmark takes: --quick (the quick plan, for
   tests) and --help. Sets *plan. Returns 0 to run, 1 after printing usage
   for --help (exit 0), 2 after an unknown flag (exit 2). */
static inline int vl_bench_parse(int argc, char **argv, const char *name, void (*usage)(FILE *),
                                 vl_bench_plan_t full, vl_bench_plan_t quick, vl_bench_plan_t *plan)
{
    *plan = full;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            *plan = quick;
        } else if (strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 1;
        } else {
            fprintf(stderr, "%s: unknown argument '%s'\n", name, argv[i]);
            usage(stderr);
            return 2;
        }
    }
    return 0;
}

/* Returns a 64-bit checksum of n bytes (FNV-1a over 8-byte words), to check
   a benchmark's output before its figure is printed. */
static inline uint64_t vl_bench_checksum(const void *data, size_t n)
{
    const uint8_t *p = data;
    uint64_t h = 0xcbf29ce484222325ull, w;
    for (; n >= 8; n -= 8, p += 8) {
        memcpy(&w, p, 8);
        h = (h ^ w) * 0x100000001b3ull;
    }
    for (; n > 0; n--, p++)
        h = (h ^ *p) * 0x100000001b3ull;
    return h ^ (h >> 29);
}

/* Sleeps s seconds (nothing when s <= 0), through signal interruptions.
   Async-signal-safe. */
static inline void vl_bench_sleep(double s)
{
    if (s <= 0)
        return;
    struct timespec ts = {.tv_sec = (time_t)s, .tv_nsec = (long)(fmod(s, 1) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* Reaps child pid (already signalled), SIGKILLing it after wait_s. Returns
   its wait status. Async-signal-safe. */
static inline int vl_bench_reap(pid_t pid, double wait_s)
{
    int status = 0;
    for (double waited = 0; waited < wait_s; waited += 0.01) {
        if (waitpid(pid, &status, WNOHANG) != 0) // reaped, or not ours (-1)
            return status;
        vl_bench_sleep(0.01);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return status;
}

/* The cleanup a bench with children registered, and the bench's own pid. */
static void (*vl_bench_cleanup_fn)(void);
static pid_t vl_bench_self;

/* Cleans up and dies of the signal, as if it had not been caught. */
static inline void vl_bench_on_signal(int sig)
{
    if (getpid() != vl_bench_self) // a child between fork and exec
        _exit(127);
    if (vl_bench_cleanup_fn)
        vl_bench_cleanup_fn();
    signal(sig, SIG_DFL);
    raise(sig);
}

/* Makes SIGINT, SIGTERM and SIGHUP run cleanup (stop children, remove
   files) before the bench dies of them. */
static inline void vl_bench_catch_signals(void (*cleanup)(void))
{
    vl_bench_cleanup_fn = cleanup;
    vl_bench_self = getpid();
    struct sigaction sa = {.sa_handler = vl_bench_on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
}

/* Runs a benchmark's PyTorch side, `$PYTHON script args` (PYTHON defaults to
   /usr/bin/python3) with OpenMP's and OpenBLAS's pools capped at threads,
   echoes its "torch version=" line and hands every other line to
   line(text, arg), which returns 1 for a figure it took. Returns 0 when the
   script exited 0 with at least want figures, else -1 after printing why. */
static inline int vl_bench_torch(const char *script, int threads, const char *args, int want,
                                 int (*line)(const char *, void *), void *arg)
{
    const char *python = getenv("PYTHON") ? getenv("PYTHON") : "/usr/bin/python3";
    char cmd[8192];
    // torch.set_num_threads sets each figure's threads; the variables cap what
    // the OpenMP and BLAS pools start with.
    snprintf(cmd, sizeof cmd, "OMP_NUM_THREADS=%d OPENBLAS_NUM_THREADS=%d '%s' '%s' %s", threads,
             threads, python, script, args);
    FILE *p = popen(cmd, "r");
    if (!p) {
        printf("torch: cannot start %s\n", python);
        return -1;
    }
    char text[512];
    int got = 0;
    while (fgets(text, sizeof text, p)) {
        if (strncmp(text, "torch version=", 14) == 0)
            printf("%s", text);
        else
            got += line(text, arg) == 1;
    }
    int status = pclose(p);
    if (status != 0 || got < want) {
        printf("torch: %s %s gave %d of %d figures (exit status %d): PyTorch missing? "
               "On Debian: apt-get install python3-torch\n",
               python, script, got, want, status);
        return -1;
    }
    return 0;
}

/* Prints a figure's row: its name, volley's ms, PyTorch's and their ratio
   ("-" where PyTorch gave none), without ending the line. */
static inline void vl_bench_row(int width, const char *name, double ms, double torch_ms)
{
    printf("%-*s %10.3f", width, name, ms);
    if (torch_ms > 0)
        printf(" %10.3f %8.2fx", torch_ms, torch_ms / ms);
    else
        printf(" %10s %9s", "-", "-");
}

#endif
