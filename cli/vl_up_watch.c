/*  vl_up_watch: a run's reports, judged one by one. */
#include "vl_up_watch.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

#include "../common/vl_log.h"
#include "../common/vl_opts.h"
#include "../common/vl_proc.h"
#include "../messages/vl_codec.h"

#define S_SUMS       64         // weights versions whose checksums are kept
#define S_MAX_WEIGHT (16 << 20) // bytes of a weights message up reads
#define S_FIRST_S    3.0        // seconds past a clock budget an unfed run waits for a segment

/* What a run has seen of the learner's reports. */
typedef struct {
    vl_stats_t last;
    int have;
    int fed;                               // a report counted a segment of this run
    uint64_t first_steps;                  // env steps in the first report: a resumed run's start
    uint64_t prev_steps;                   // env steps at the previous progress line
    double prev_uptime;                    // the learner's uptime then, in seconds
    uint64_t version[S_SUMS], sum[S_SUMS]; // checksums of published weights, a ring
    int n_sums;
    uint8_t *body;   // a received message
    char *last_line; // the caller's
    size_t last_size;
} s_watch_t;

/* Writes a report's drops as "0", or "50560 (87%)": their share of what
   reached the learner since it started (all of it while it reports no
   arrivals: a learner from before they were counted). */
static const char *s_dropped(const vl_stats_t *s, char *buf, size_t size)
{
    if (!s->segments_dropped)
        snprintf(buf, size, "0");
    else
        snprintf(buf, size, "%llu (%.0f%%)", (unsigned long long)s->segments_dropped,
                 s->segments_arrived >= s->segments_dropped
                     ? 100.0 * (double)s->segments_dropped / (double)s->segments_arrived
                     : 100.0);
    return buf;
}

/* Prints one progress line from the newest report; steps/s over the
   learner's own clock, between the reports the last two lines came from. */
static void s_progress(s_watch_t *w)
{
    const vl_stats_t *s = &w->last;
    double dt = s->uptime_s - w->prev_uptime;
    double sps = dt > 0 ? (double)(s->env_steps - w->prev_steps) / dt : 0;
    char stamp[16], dropped[48];
    time_t now = time(NULL);
    struct tm tm;
    strftime(stamp, sizeof stamp, "%H:%M:%S", localtime_r(&now, &tm));
    printf("%s steps=%llu sps=%.0f episodes=%llu return=%.1f lag=%u/%u/%u version=%llu "
           "loss_pi=%.4f loss_v=%.3f entropy=%.3f dropped=%s\n",
           stamp, (unsigned long long)s->env_steps, sps, (unsigned long long)s->episodes,
           s->mean_return, s->lag_min, s->lag_median, s->lag_max, (unsigned long long)s->version,
           s->policy_loss, s->value_loss, s->entropy, s_dropped(s, dropped, sizeof dropped));
    fflush(stdout);
    w->prev_steps = s->env_steps;
    w->prev_uptime = s->uptime_s;
}

/* Returns the checksum of weights version v if seen (*found 1). */
static uint64_t s_sum_of(const s_watch_t *w, uint64_t v, int *found)
{
    for (int i = 0; i < S_SUMS && i < w->n_sums; i++)
        if (w->version[i] == v) {
            *found = 1;
            return w->sum[i];
        }
    *found = 0;
    return 0;
}

/* Keeps the checksum of a weights message of the run's policy. */
static void s_note_weights(s_watch_t *w, const uint8_t *body, size_t size)
{
    vl_limits_t lim = vl_limits_default();
    vl_weights_t *wt = NULL;
    if (vl_weights_decode(body, size, &lim, &wt) != VL_OK)
        return;
    int found;
    s_sum_of(w, wt->version, &found);
    if (!found) {
        w->version[w->n_sums % S_SUMS] = wt->version;
        w->sum[w->n_sums % S_SUMS] = vl_tensors_checksum(wt->tensors, wt->n_tensors);
        w->n_sums++;
    }
    vl_weights_destroy(&wt);
}

/* Receives one message: a report (returns 1, w->last set), weights
   (noted, returns 0), or nothing waiting (returns -1). */
static int s_recv(void *sub, s_watch_t *w)
{
    char topic[64];
    int t = zmq_recv(sub, topic, sizeof topic - 1, ZMQ_DONTWAIT);
    if (t < 0)
        return -1;
    topic[t < (int)sizeof topic - 1 ? t : (int)sizeof topic - 1] = 0;
    int more = 0;
    size_t ms = sizeof more;
    zmq_getsockopt(sub, ZMQ_RCVMORE, &more, &ms);
    if (!more)
        return 0;
    int b = zmq_recv(sub, w->body, S_MAX_WEIGHT, 0);
    if (b <= 0 || b > S_MAX_WEIGHT)
        return 0;
    if (strcmp(topic, VL_STATS_TOPIC) != 0) {
        s_note_weights(w, w->body, (size_t)b);
        return 0;
    }
    if (vl_stats_decode(w->body, (size_t)b, &w->last) != VL_OK)
        return 0;
    if (!w->have)
        w->first_steps = w->last.env_steps;
    w->have = 1;
    w->fed |= w->last.segments_arrived > 0 || w->last.env_steps > w->first_steps;
    return 1;
}

/* Prints the last line: "<word>: <steps> steps in <s> s (<steps/s> steps/s)",
   steps/s over this run's own steps (a resumed run's start not counted). */
static void s_last_line(const vl_up_config_t *c, const char *word, s_watch_t *w, double secs)
{
    uint64_t steps = w->last.env_steps;
    uint64_t own = steps;
    if (c->resume) // the first report comes just after the checkpoint's steps were loaded
        own = steps - (w->first_steps < steps ? w->first_steps : steps);
    snprintf(w->last_line, w->last_size, "%s: %llu steps in %.1f s (%.0f steps/s)", word,
             (unsigned long long)steps, secs, secs > 0 ? (double)own / secs : 0.0);
}

/* Deterministic runs: waits (up to 5 s) for the weights of the report's
   version and prints their checksum. */
static void s_final_weights(void *sub, s_watch_t *w)
{
    uint64_t v = w->last.version;
    vl_stats_t report = w->last;
    int found = 0;
    int64_t deadline = vl_now_ns() + 5000000000LL;
    uint64_t sum = s_sum_of(w, v, &found);
    while (!found && !vl_interrupted && vl_now_ns() < deadline) {
        zmq_pollitem_t item = {sub, 0, ZMQ_POLLIN, 0};
        zmq_poll(&item, 1, 100);
        while (s_recv(sub, w) >= 0)
            ;
        sum = s_sum_of(w, v, &found);
    }
    w->last = report;
    if (found)
        printf("weights: version %llu checksum %016llx\n", (unsigned long long)v,
               (unsigned long long)sum);
    else
        printf("weights: version %llu not seen\n", (unsigned long long)v);
}

/* Judges the run at secs: returns 0 when done (solved, the --until budget
   reached, or any budget spent by an env with no solved return), 1 when
   the budget is spent unsolved or unfed (unsaid: the caller names a log),
   -1 to go on. */
static int s_judge(const vl_up_config_t *c, void *sub, s_watch_t *w, double secs)
{
    const vl_stats_t *s = &w->last;
    int over_steps = w->have && c->max_steps && s->env_steps >= (uint64_t)c->max_steps;
    int over_time = c->max_seconds && secs >= (double)c->max_seconds;
    if (over_time && !over_steps && !w->fed) // a first segment may be on its way: not for long
        return secs < (double)c->max_seconds + S_FIRST_S ? -1 : 1;
    int done =
        (c->until == VL_UNTIL_STEPS && over_steps) || (c->until == VL_UNTIL_SECONDS && over_time);
    int solvable = c->env && c->env->has_solved_return; // a Python env's: none here
    int solved = !done && !over_steps && !over_time && c->until == VL_UNTIL_SOLVED && w->have &&
                 s->window >= 100 && s->mean_return >= c->env->solved_return;
    if (!done && (over_steps || over_time) && !solvable) {
        // Nothing to solve, so nothing missed: the budget ends the run as its --until would.
        printf("budget spent: --%s after %llu steps in %.1f s (mean return %.1f over %u "
               "episodes)\n",
               over_steps ? "max-steps" : "max-seconds", (unsigned long long)s->env_steps, secs,
               s->mean_return, s->window);
        done = 1;
    }
    if (!done && !solved && (over_steps || over_time)) {
        // The budget first: a report that shows it solved past the budget did not solve in time.
        printf("not solved: budget spent after %llu steps in %.1f s "
               "(mean return %.1f over %u episodes, %s needs %g over 100)\n",
               (unsigned long long)s->env_steps, secs, s->mean_return, s->window,
               vl_up_config_env_name(c), solvable ? c->env->solved_return : 0.0f);
        return 1;
    }
    if (!done && !solved)
        return -1;
    if (w->have)
        s_progress(w);
    if (c->deterministic && w->have)
        s_final_weights(sub, w);
    s_last_line(c, solved ? "solved" : "done", w, secs);
    return 0;
}

int vl_up_watch(const vl_up_config_t *c, void *sub, pid_t *pids, int n, int64_t start, char *last,
                size_t last_size, vl_up_end_t *end)
{
    s_watch_t w = {
        .have = 0, .body = malloc(S_MAX_WEIGHT), .last_line = last, .last_size = last_size};
    last[0] = 0;
    *end = (vl_up_end_t){.stopped = -1};
    int64_t next_line = start + 1000000000LL;
    int rc = w.body ? -1 : 1;
    while (rc < 0 && !vl_interrupted) {
        zmq_pollitem_t item = {sub, 0, ZMQ_POLLIN, 0};
        if (zmq_poll(&item, 1, 100) < 0 && zmq_errno() != EINTR) {
            rc = 1;
            break;
        }
        // Every report is judged, not only the newest: a lockstep run solves at one step count.
        for (int got; rc < 0 && (got = s_recv(sub, &w)) >= 0;)
            if (got)
                rc = s_judge(c, sub, &w, (double)(vl_now_ns() - start) / 1e9);
        int status, dead = vl_proc_reap(pids, n, &status);
        if (rc >= 0 || (dead >= 0 && vl_interrupted))
            break; // done; or Ctrl-C reached the children too: they stop, not fail
        if (dead >= 0) { // the caller says which and how, naming its log
            *end = (vl_up_end_t){.stopped = dead, .status = status};
            rc = 1;
            break;
        }
        int64_t now = vl_now_ns();
        rc = s_judge(c, sub, &w, (double)(now - start) / 1e9); // the clock's budgets
        if (rc < 0 && now >= next_line) {
            if (w.have)
                s_progress(&w);
            next_line += 1000000000LL;
        }
    }
    free(w.body);
    end->fed = w.fed;
    end->secs = (double)(vl_now_ns() - start) / 1e9;
    return rc >= 0 ? rc : 130;
}
