/*  vl_top_view: the table and key=value views of a broker's Status, pure
    functions of the decoded message (no sockets), so they are tested alone. */
#include "vl_top.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../messages/vl_status.h"

/* ---- the numbers ------------------------------------------------------- */

int vl_top_adds_up(const Volley__Status *s)
{
    return s->received == s->routed + s->dropped + s->queued;
}

/* Adds f to a running sum when it is a reported (positive) figure. */
static void s_mean_add(double *sum, int *n, double f)
{
    if (f > 0) {
        *sum += f;
        (*n)++;
    }
}

vl_top_hops_t vl_top_hops(const Volley__Status *s)
{
    double send = 0, apply = 0, ingest = 0, train = 0;
    int n_send = 0, n_apply = 0, n_ingest = 0, n_train = 0;
    for (size_t i = 0; i < s->n_actors; i++) {
        if (!s->actors[i]->alive)
            continue;
        s_mean_add(&send, &n_send, s->actors[i]->send_ms);
        s_mean_add(&apply, &n_apply, s->actors[i]->apply_ms);
    }
    for (size_t i = 0; i < s->n_learners; i++) {
        const Volley__Stats *st = s->learners[i]->stats;
        if (st) {
            s_mean_add(&ingest, &n_ingest, st->ingest_ms);
            s_mean_add(&train, &n_train, st->train_ms);
        }
    }
    vl_top_hops_t h = {n_send ? send / n_send : NAN, n_ingest ? ingest / n_ingest : NAN,
                       n_train ? train / n_train : NAN, n_apply ? apply / n_apply : NAN};
    return h;
}

/* Orders actor rows by id, then policy. */
static int s_actor_cmp(const void *a, const void *b)
{
    const Volley__ActorRow *x = *(const Volley__ActorRow *const *)a;
    const Volley__ActorRow *y = *(const Volley__ActorRow *const *)b;
    if (x->actor_id != y->actor_id)
        return x->actor_id < y->actor_id ? -1 : 1;
    return strcmp(x->policy_id, y->policy_id);
}

/* Returns the actor rows sorted by id (caller frees), or NULL when there are
   none or no memory (then the broker's order is used). */
static const Volley__ActorRow **s_sorted_actors(const Volley__Status *s)
{
    const Volley__ActorRow **rows = s->n_actors ? malloc(s->n_actors * sizeof *rows) : NULL;
    if (rows) {
        memcpy(rows, s->actors, s->n_actors * sizeof *rows);
        qsort(rows, s->n_actors, sizeof *rows, s_actor_cmp);
    }
    return rows;
}

/* ---- the table view ---------------------------------------------------- */

/* Writes n bytes as "812 B", "4.0 KiB", "45.2 MiB" into buf. */
static const char *s_bytes(uint64_t n, char *buf, size_t size)
{
    static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)n;
    int u = 0;
    while (v >= 1024 && u < 4) {
        v /= 1024;
        u++;
    }
    if (u == 0)
        snprintf(buf, size, "%" PRIu64 " B", n);
    else
        snprintf(buf, size, "%.1f %s", v, units[u]);
    return buf;
}

/* Writes seconds as "42.0 s", "3m07s" or "2h05m". */
static const char *s_duration(double secs, char *buf, size_t size)
{
    long s = secs < 1e15 ? (long)secs : (long)1e15; // a peer's figure: keep the cast defined
    if (secs < 60)
        snprintf(buf, size, "%.1f s", secs);
    else if (s < 3600)
        snprintf(buf, size, "%ldm%02lds", s / 60, s % 60);
    else
        snprintf(buf, size, "%ldh%02ldm", s / 3600, s % 3600 / 60);
    return buf;
}

/* Writes a rate as "812.5", "28359" or "1.82M": at most 7 characters below
   ten million a second. */
static const char *s_rate(double v, char *buf, size_t size)
{
    if (v < 1000)
        snprintf(buf, size, "%.1f", v);
    else if (v < 1e6)
        snprintf(buf, size, "%.0f", v);
    else
        snprintf(buf, size, "%.2fM", v / 1e6);
    return buf;
}

/* Writes a hop mean as "3.21 ms", or "-" when nobody reports it. */
static const char *s_ms(double ms, char *buf, size_t size)
{
    if (isnan(ms))
        snprintf(buf, size, "-");
    else
        snprintf(buf, size, "%.2f ms", ms);
    return buf;
}

/* Returns the share of what reached a learner that it dropped, 0..1 (1
   when it dropped some and reports no arrivals: a learner before them). */
static double s_dropped_share(const Volley__Stats *st)
{
    if (!st->segments_dropped)
        return 0;
    if (st->segments_arrived < st->segments_dropped)
        return 1;
    return (double)st->segments_dropped / (double)st->segments_arrived;
}

/* Writes a learner's drops as "50560 (87%)", or "-" without stats. */
static const char *s_learner_dropped(const Volley__Stats *st, char *buf, size_t size)
{
    if (!st)
        snprintf(buf, size, "-");
    else if (st->segments_dropped)
        snprintf(buf, size, "%" PRIu64 " (%.0f%%)", st->segments_dropped,
                 s_dropped_share(st) * 100);
    else
        snprintf(buf, size, "0");
    return buf;
}

/* Losses outside the sum above: what the learners dropped after routing,
   what the recording could not keep, and what actors sent to an earlier
   broker that never reached the learner. */
static void s_render_losses(const Volley__Status *s, FILE *out)
{
    if (s->learner_dropped)
        fprintf(out,
                "learner dropped %" PRIu64 " of the routed segments (after routing; by cause "
                "under drops)\n",
                s->learner_dropped);
    if (s->recording && s->record_error && s->record_error[0])
        fprintf(out,
                "recording DEGRADED: %" PRIu64 " recorded, %" PRIu64
                " LOST (not in the file): %s\n",
                s->recorded, s->record_lost, s->record_error);
    else if (s->recording)
        fprintf(out, "recording: %" PRIu64 " recorded, %" PRIu64 " lost\n", s->recorded,
                s->record_lost);
    if (s->lost_before)
        fprintf(out,
                "LOST before this broker: %" PRIu64 " segments sent by actors to an earlier broker "
                "never reached the learner\n",
                s->lost_before);
}

/* The broker's own lines: uptime, memory, and whether its counters add up. */
static void s_render_header(const Volley__Status *s, const char *broker, FILE *out)
{
    char up[32], rss[32], bound[32], rate[32];
    fprintf(out, "broker %s   up %s   rss %s   queue bound %s per learner\n", broker,
            s_duration(s->uptime_s, up, sizeof up), s_bytes(s->rss_bytes, rss, sizeof rss),
            s_bytes(s->queue_bytes_bound, bound, sizeof bound));
    int ok = vl_top_adds_up(s);
    fprintf(out,
            "segments received %" PRIu64 " %s routed %" PRIu64 " + dropped %" PRIu64
            " + queued %" PRIu64 "   %s   received/s %s\n",
            s->received, ok ? "=" : "!=", s->routed, s->dropped, s->queued,
            ok ? "(adds up)" : "(DOES NOT ADD UP)", s_rate(s->received_per_s, rate, sizeof rate));
    s_render_losses(s, out);
}

/* One row per learner: flow control as the broker sees it. */
static void s_render_learners(const Volley__Status *s, FILE *out)
{
    fprintf(out, "\nlearners (%zu)\n", s->n_learners);
    if (!s->n_learners)
        return;
    fprintf(out, "  %-16s %8s %8s %12s %11s %6s %8s %15s %6s %8s\n", "policy", "credit", "queued",
            "queued_bytes", "delivered/s", "paused", "silent_s", "dropped", "epoch", "version");
    char qb[32], rate[32], dropped[48];
    for (size_t i = 0; i < s->n_learners; i++) {
        const Volley__LearnerRow *l = s->learners[i];
        fprintf(out,
                "  %-16.16s %8" PRIu64 " %8" PRIu64 " %12s %11s %6s %8.1f %15s %6" PRIu64
                " %8" PRIu64 "\n",
                l->policy_id, l->credit, l->queued, s_bytes(l->queued_bytes, qb, sizeof qb),
                s_rate(l->delivered_per_s, rate, sizeof rate), l->paused ? "PAUSED" : "no",
                l->silent_s, s_learner_dropped(l->stats, dropped, sizeof dropped), l->epoch,
                l->version);
    }
}

/* A learner's drops by cause, under its training row, when it dropped any. */
static void s_render_learner_drops(const char *policy, const Volley__Stats *st, FILE *out)
{
    if (!st->segments_dropped)
        return;
    const struct {
        const char *name;
        uint64_t n;
    } causes[] = {{"lag", st->dropped_lag},
                  {"capacity", st->dropped_capacity},
                  {"budget", st->dropped_budget},
                  {"invalid", st->dropped_invalid}};
    fprintf(out, "  %-16.16s dropped %" PRIu64 " of %" PRIu64 " arrived (%.0f%%)", policy,
            st->segments_dropped, st->segments_arrived, s_dropped_share(st) * 100);
    const char *sep = ": ";
    for (size_t c = 0; c < sizeof causes / sizeof causes[0]; c++)
        if (causes[c].n) {
            fprintf(out, "%s%s %" PRIu64, sep, causes[c].name, causes[c].n);
            sep = ", ";
        }
    fputc('\n', out);
}

/* One row per learner that published stats: how training goes. */
static void s_render_training(const Volley__Status *s, FILE *out)
{
    int header = 0;
    for (size_t i = 0; i < s->n_learners; i++) {
        const Volley__Stats *st = s->learners[i]->stats;
        if (!st)
            continue;
        if (!header++)
            fprintf(out, "  %-16s %8s %8s %11s %11s %9s %9s %8s %9s %9s\n", "training", "version",
                    "return", "env_steps", "lag min/med/max", "loss_pi", "loss_v", "entropy",
                    "ingest_ms", "train_ms");
        char lag[40];
        snprintf(lag, sizeof lag, "%" PRIu32 "/%" PRIu32 "/%" PRIu32, st->lag_min, st->lag_median,
                 st->lag_max);
        fprintf(out,
                "  %-16.16s %8" PRIu64 " %8.1f %11" PRIu64 " %15s %9.4f %9.4f %8.3f %9.2f %9.2f\n",
                s->learners[i]->policy_id, st->version, st->mean_return, st->env_steps, lag,
                st->policy_loss, st->value_loss, st->entropy, st->ingest_ms, st->train_ms);
        for (size_t k = 0; k < st->n_figures; k++) // the env's own figures, named
            fprintf(out, "%s%s %.4g%s", k ? "  " : "  env figures: ", st->figures[k]->name,
                    st->figures[k]->n_values ? st->figures[k]->values[0] : 0.0,
                    k + 1 == st->n_figures ? "\n" : "");
        s_render_learner_drops(s->learners[i]->policy_id, st, out);
    }
}

/* One row per actor, lowest ids first, at most max of them (0: all). */
static void s_render_actors(const Volley__Status *s, int max, FILE *out)
{
    fprintf(out, "\nactors (%zu)\n", s->n_actors);
    if (!s->n_actors)
        return;
    fprintf(out, "  %10s %-16s %7s %9s %6s %8s %8s %8s %8s %9s %5s %8s\n", "id", "policy", "seg/s",
            "segments", "gaps", "restarts", "send_ms", "version", "apply_ms", "steps/s", "alive",
            "silent_s");
    const Volley__ActorRow **sorted = s_sorted_actors(s);
    const Volley__ActorRow *const *rows =
        sorted ? sorted : (const Volley__ActorRow *const *)s->actors;
    size_t n = max > 0 && (size_t)max < s->n_actors ? (size_t)max : s->n_actors;
    for (size_t i = 0; i < n; i++) {
        const Volley__ActorRow *a = rows[i];
        char seg[32], steps[32];
        fprintf(out,
                "  %10" PRIu32 " %-16.16s %7s %9" PRIu64 " %6" PRIu64 " %8" PRIu32
                " %8.2f %8" PRIu64 " %8.2f %9s %5s %8.1f\n",
                a->actor_id, a->policy_id, s_rate(a->segments_per_s, seg, sizeof seg), a->segments,
                a->seq_gaps, a->restarts, a->send_ms, a->weights_version, a->apply_ms,
                s_rate(a->env_steps_per_s, steps, sizeof steps), a->alive ? "yes" : "NO",
                a->silent_s);
    }
    if (n < s->n_actors)
        fprintf(out, "  ... and %zu more (volley top --kv lists all)\n", s->n_actors - n);
    free(sorted);
}

/* Drops by kind and reason. */
static void s_render_drops(const Volley__Status *s, FILE *out)
{
    if (!s->n_drops) {
        fprintf(out, "\ndrops: none\n");
        return;
    }
    fprintf(out, "\ndrops\n  %-14s %10s  %s\n", "kind", "count", "reason");
    for (size_t i = 0; i < s->n_drops; i++)
        fprintf(out, "  %-14.14s %10" PRIu64 "  %s\n", s->drops[i]->kind, s->drops[i]->count,
                s->drops[i]->reason);
}

/* One line per policy: the spec its actors (or learner) declared. */
static void s_render_specs(const Volley__Status *s, FILE *out)
{
    if (!s->n_specs)
        return;
    fprintf(out, "\npolicies (%zu)\n", s->n_specs);
    vl_limits_t lim = vl_limits_default();
    for (size_t i = 0; i < s->n_specs; i++) {
        vl_spec_t spec;
        char line[1400];
        if (vl_spec_from_msg(s->specs[i], &lim, &spec) != VL_OK)
            continue; // vl_status_decode checked it; a caller's own Status may not be
        vl_spec_str(&spec, line, sizeof line);
        fprintf(out, "  %-18.18s %s\n", spec.policy_id, line);
    }
}

/* The journey of a segment and of the weights trained on it, hop by hop. */
static void s_render_hops(const Volley__Status *s, FILE *out)
{
    vl_top_hops_t h = vl_top_hops(s);
    char a[24], b[24], c[24], d[24];
    fprintf(out,
            "\nhops  actor send -> broker %s | actor send -> learner ingest %s | "
            "ingest -> weights published %s | published -> applied %s\n",
            s_ms(h.send_ms, a, sizeof a), s_ms(h.ingest_ms, b, sizeof b),
            s_ms(h.train_ms, c, sizeof c), s_ms(h.apply_ms, d, sizeof d));
}

void vl_top_render(const Volley__Status *s, const char *broker, int max_actors, FILE *out)
{
    s_render_header(s, broker, out);
    s_render_specs(s, out);
    s_render_learners(s, out);
    s_render_training(s, out);
    s_render_actors(s, max_actors, out);
    s_render_drops(s, out);
    s_render_hops(s, out);
}

/* ---- the key=value view ------------------------------------------------ */

/* Starts a record: " ts=... kind=...". */
static void s_kv_start(FILE *out, const char *ts, const char *kind)
{
    fprintf(out, "ts=%s kind=%s", ts, kind);
}

static void s_kv_u(FILE *out, const char *key, uint64_t v)
{
    fprintf(out, " %s=%" PRIu64, key, v);
}

/* Writes a float field in plain decimals (4 places, trailing zeros cut),
   tiny figures in %g; NAN (nobody reports it) writes nothing. */
static void s_kv_f(FILE *out, const char *key, double v)
{
    if (isnan(v))
        return;
    char buf[64];
    if ((v != 0 && fabs(v) < 1e-3) || fabs(v) >= 1e15) {
        snprintf(buf, sizeof buf, "%.6g", v); // a huge one would not fit "%.4f"
    } else {
        int n = snprintf(buf, sizeof buf, "%.4f", v);
        while (n > 1 && buf[n - 1] == '0')
            buf[--n] = 0;
        if (buf[n - 1] == '.')
            buf[--n] = 0;
    }
    fprintf(out, " %s=%s", key, buf);
}

/* Writes a text field, double-quoted when it holds a space, quote, '=' or
   backslash (texts are printable ASCII: vl_status_decode checked). */
static void s_kv_s(FILE *out, const char *key, const char *v)
{
    if (!v[0] || strpbrk(v, " \"=\\") != NULL) {
        fprintf(out, " %s=\"", key);
        for (const char *p = v; *p; p++)
            fprintf(out, (*p == '"' || *p == '\\') ? "\\%c" : "%c", *p);
        fputc('"', out);
    } else
        fprintf(out, " %s=%s", key, v);
}

static void s_kv_broker(const Volley__Status *s, const char *ts, FILE *out)
{
    vl_top_hops_t h = vl_top_hops(s);
    s_kv_start(out, ts, "broker");
    s_kv_f(out, "uptime_s", s->uptime_s);
    s_kv_u(out, "received", s->received);
    s_kv_u(out, "routed", s->routed);
    s_kv_u(out, "dropped", s->dropped);
    s_kv_u(out, "queued", s->queued);
    s_kv_u(out, "adds_up", (uint64_t)vl_top_adds_up(s));
    s_kv_f(out, "received_per_s", s->received_per_s);
    s_kv_u(out, "rss_bytes", s->rss_bytes);
    s_kv_u(out, "queue_bytes_bound", s->queue_bytes_bound);
    s_kv_u(out, "recording", s->recording);
    s_kv_u(out, "recorded", s->recorded);
    s_kv_u(out, "record_lost", s->record_lost);
    s_kv_u(out, "record_degraded", s->record_error && s->record_error[0]);
    s_kv_u(out, "lost_before", s->lost_before);
    s_kv_u(out, "learner_dropped", s->learner_dropped);
    s_kv_u(out, "learners", s->n_learners);
    s_kv_u(out, "actors", s->n_actors);
    s_kv_f(out, "hop_send_ms", h.send_ms);
    s_kv_f(out, "hop_ingest_ms", h.ingest_ms);
    s_kv_f(out, "hop_train_ms", h.train_ms);
    s_kv_f(out, "hop_apply_ms", h.apply_ms);
    fputc('\n', out);
}

/* A learner's stats fields, named as in volley.proto's Stats. */
static void s_kv_stats(const Volley__Stats *st, FILE *out)
{
    s_kv_u(out, "version", st->version);
    s_kv_f(out, "mean_return", st->mean_return);
    s_kv_u(out, "window", st->window);
    s_kv_u(out, "episodes", st->episodes);
    s_kv_u(out, "env_steps", st->env_steps);
    s_kv_u(out, "lag_min", st->lag_min);
    s_kv_u(out, "lag_median", st->lag_median);
    s_kv_f(out, "lag_mean", st->lag_mean);
    s_kv_u(out, "lag_max", st->lag_max);
    s_kv_f(out, "policy_loss", st->policy_loss);
    s_kv_f(out, "value_loss", st->value_loss);
    s_kv_f(out, "entropy", st->entropy);
    s_kv_u(out, "segments_trained", st->segments_trained);
    s_kv_u(out, "segments_dropped", st->segments_dropped);
    s_kv_u(out, "dropped_lag", st->dropped_lag);
    s_kv_u(out, "dropped_capacity", st->dropped_capacity);
    s_kv_u(out, "dropped_budget", st->dropped_budget);
    s_kv_u(out, "dropped_invalid", st->dropped_invalid);
    s_kv_u(out, "segments_arrived", st->segments_arrived);
    s_kv_f(out, "dropped_share", s_dropped_share(st));
    s_kv_f(out, "ingest_ms", st->ingest_ms);
    s_kv_f(out, "train_ms", st->train_ms);
    for (size_t k = 0; k < st->n_figures; k++) {
        char key[VL_FIGURE_NAME_MAX + 4];
        snprintf(key, sizeof key, "env/%s", st->figures[k]->name);
        s_kv_f(out, key, st->figures[k]->n_values ? st->figures[k]->values[0] : 0.0);
    }
}

static void s_kv_learner(const Volley__LearnerRow *l, const char *ts, FILE *out)
{
    s_kv_start(out, ts, "learner");
    s_kv_s(out, "policy", l->policy_id);
    s_kv_u(out, "credit", l->credit);
    s_kv_u(out, "queued", l->queued);
    s_kv_u(out, "queued_bytes", l->queued_bytes);
    s_kv_u(out, "delivered", l->delivered);
    s_kv_f(out, "delivered_per_s", l->delivered_per_s);
    s_kv_u(out, "paused", l->paused);
    s_kv_f(out, "silent_s", l->silent_s);
    s_kv_u(out, "epoch", l->epoch);
    s_kv_u(out, "weights_version", l->version);
    s_kv_u(out, "lost_before", l->lost_before);
    s_kv_u(out, "stats", l->stats != NULL);
    if (l->stats)
        s_kv_stats(l->stats, out);
    fputc('\n', out);
}

static void s_kv_actor(const Volley__ActorRow *a, const char *ts, FILE *out)
{
    s_kv_start(out, ts, "actor");
    s_kv_u(out, "id", a->actor_id);
    s_kv_s(out, "policy", a->policy_id);
    s_kv_u(out, "segments", a->segments);
    s_kv_f(out, "seg_per_s", a->segments_per_s);
    s_kv_u(out, "seq_gaps", a->seq_gaps);
    s_kv_u(out, "restarts", a->restarts);
    s_kv_u(out, "sent_before", a->sent_before);
    s_kv_f(out, "send_ms", a->send_ms);
    s_kv_u(out, "weights_version", a->weights_version);
    s_kv_f(out, "apply_ms", a->apply_ms);
    s_kv_f(out, "env_steps_per_s", a->env_steps_per_s);
    s_kv_u(out, "alive", a->alive);
    s_kv_f(out, "silent_s", a->silent_s);
    fputc('\n', out);
}

/* Writes wall_ns as "2025-01-02T03:04:05.678Z". */
static void s_iso_time(int64_t wall_ns, char *buf, size_t size)
{
    time_t secs = (time_t)(wall_ns / 1000000000);
    struct tm tm;
    gmtime_r(&secs, &tm);
    size_t n = strftime(buf, size, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf + n, size - n, ".%03dZ", (int)(wall_ns / 1000000 % 1000));
}

void vl_top_render_kv(const Volley__Status *s, int64_t wall_ns, FILE *out)
{
    char ts[40];
    s_iso_time(wall_ns, ts, sizeof ts);
    s_kv_broker(s, ts, out);
    for (size_t i = 0; i < s->n_learners; i++)
        s_kv_learner(s->learners[i], ts, out);
    const Volley__ActorRow **sorted = s_sorted_actors(s);
    for (size_t i = 0; i < s->n_actors; i++)
        s_kv_actor(sorted ? sorted[i] : s->actors[i], ts, out);
    free(sorted);
    for (size_t i = 0; i < s->n_drops; i++) {
        s_kv_start(out, ts, "drop");
        s_kv_s(out, "drop_kind", s->drops[i]->kind);
        s_kv_s(out, "reason", s->drops[i]->reason);
        s_kv_u(out, "count", s->drops[i]->count);
        fputc('\n', out);
    }
    vl_limits_t lim = vl_limits_default();
    for (size_t i = 0; i < s->n_specs; i++) {
        vl_spec_t spec;
        char obs[128];
        if (vl_spec_from_msg(s->specs[i], &lim, &spec) != VL_OK)
            continue;
        vl_spec_obs_str(&spec.obs_spec, obs, sizeof obs);
        s_kv_start(out, ts, "spec");
        s_kv_s(out, "policy", spec.policy_id);
        s_kv_s(out, "obs", obs);
        char actions[VL_ACTION_TEXT_MAX];
        s_kv_s(out, "actions", vl_action_str(&spec.action, actions, sizeof actions));
        s_kv_u(out, "horizon", spec.horizon);
        s_kv_u(out, "hidden", spec.hidden);
        s_kv_s(out, "env", spec.env[0] ? spec.env : "?");
        fputc('\n', out);
    }
}

void vl_top_iso_time(int64_t wall_ns, char *buf, size_t size)
{
    s_iso_time(wall_ns, buf, size);
}

void vl_top_render_kv_error(const char *broker, const char *why, int64_t wall_ns, FILE *out)
{
    char ts[40];
    s_iso_time(wall_ns, ts, sizeof ts);
    s_kv_start(out, ts, "error");
    s_kv_s(out, "broker", broker);
    s_kv_s(out, "error", why);
    fputc('\n', out);
}
