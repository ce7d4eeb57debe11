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

/* Watches the run whose reports (and, deterministic, weights) arrive on
   sub until it is done (0), its budget is spent or a child stopped (1), or
   Ctrl-C (130). pids[0] is the broker, pids[1] the learner, then actors.
   When done, last holds the last line to print once the processes have
   stopped cleanly ("solved: ..." or "done: ..."). */
int vl_up_watch(const vl_up_config_t *c, void *sub, pid_t *pids, int n, int64_t start_ns,
                char *last, size_t last_size);

#endif
