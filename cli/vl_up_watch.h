/*  vl_up_watch: what `volley up` does while a run goes: reads the learner's
    progress reports one by one, prints a progress line a second, judges
    each report against --until and the budgets, notices a child that
    stopped, and (--deterministic) keeps the checksum of every weights
    version published, to print the solving weights' at the end. */
#ifndef VL_UP_WATCH_H
#define VL_UP_WATCH_H

#include <stdint.h>
#include <sys/types.h>

#include "vl_up_config.h"

/* How a watched run ended, beyond its exit code. */
typedef struct {
    int stopped; // the child (index in pids) that stopped on its own, -1: none
    int status;  // its wait status
    int fed;     // 1: a segment reached the learner (a report counted one)
    double secs; // how long the run was watched
} vl_up_end_t;

/* Watches the run whose reports (and, deterministic, weights) arrive on
   sub until it is done (0), its budget is spent or a child stopped (1), or
   Ctrl-C (130). pids[0] is the broker, pids[1] the learner, then actors.
   When done, last holds the last line to print once the processes have
   stopped cleanly ("solved: ..." or "done: ..."). A child that stops, or
   a run that no segment reached by the end of a clock budget (and a few
   seconds more for a first one), ends it 1 unsaid: end says which, for the
   caller's line naming the log to read. */
int vl_up_watch(const vl_up_config_t *c, void *sub, pid_t *pids, int n, int64_t start_ns,
                char *last, size_t last_size, vl_up_end_t *end);

#endif
