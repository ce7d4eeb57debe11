/*  vl_proc: process plumbing every volley command shares: a SIGINT/SIGTERM
    flag instead of dying mid-write, and starting and stopping children. */
#ifndef VL_PROC_H
#define VL_PROC_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Set to the signal number by SIGINT or SIGTERM once vl_proc_catch_signals
   ran; long-running loops check it and wind down. */
extern volatile sig_atomic_t vl_interrupted;

/* Installs the SIGINT/SIGTERM handler (without SA_RESTART, so blocking
   calls return EINTR) and ignores SIGPIPE. */
void vl_proc_catch_signals(void);

/* Starts this executable again with argv (argv[0] is ignored; NULL-ended).
   Returns the child's pid, or -1. */
pid_t vl_proc_spawn(char *const argv[]);

/* As vl_proc_spawn, with the child's stdout and stderr on out_fd (-1: ours). */
pid_t vl_proc_spawn_to(char *const argv[], int out_fd);

/* Starts the program at path (a name without '/' is looked up on PATH) with
   argv, its stdout and stderr on out_fd (-1: ours). Returns its pid, or -1. */
pid_t vl_proc_spawn_exec(const char *path, char *const argv[], int out_fd);

/* Sends SIGTERM to each running child in order, waits up to grace_ms for
   all, then SIGKILLs the rest and reaps them. Entries are set to 0 once
   reaped. */
void vl_proc_stop(pid_t *pids, int n, int grace_ms);

/* Stops the n children as vl_proc_stop does, all at once. When status is
   not NULL, status[i] gets child i's wait status: how it ended, SIGKILL's
   when it had to be killed, 0 for an entry that was not running. */
void vl_proc_stop_all(pid_t *pids, int n, int grace_ms, int *status);

/* Stops one child as vl_proc_stop does. Returns its exit code, or -1 when
   a signal ended it (or it had to be killed); *pid becomes 0. When status is
   not NULL it gets the child's wait status (SIGKILL's when it was killed). */
int vl_proc_stop_one(pid_t *pid, int grace_ms, int *status);

/* Reaps any child that exited. Returns the index in pids of one that did
   (its entry set to 0 and *status set), or -1 if none has. */
int vl_proc_reap(pid_t *pids, int n, int *status);

/* Writes a wait status as words: "exit 2", "killed by signal 11 (SIGSEGV)",
   "stopped by signal 19 (SIGSTOP)". Returns out. */
const char *vl_proc_describe(int status, char *out, size_t size);

/* Sleeps until the monotonic time deadline_ns (vl_now_ns), or until a
   signal such as SIGINT arrives (the caller's loop then sees
   vl_interrupted). Returns at once when the deadline has passed. */
void vl_proc_sleep_until(int64_t deadline_ns);

/* Returns this process's resident memory in bytes (/proc/self/statm), or 0
   where that cannot be read. */
unsigned long long vl_proc_rss_bytes(void);

#endif
