/*  vl_top: `volley top`, a live view of a run from the broker's control port
    (base port + 4), and `volley ctl`, one request to that port (status,
    pause, resume, shutdown). The views are rendered from a decoded Status by
    the functions below, so that they can be tested without a broker. */
#ifndef VL_TOP_H
#define VL_TOP_H

#include <stdint.h>
#include <stdio.h>

#include "volley.pb-c.h"

/* Mean latency of each hop of a segment's and then its weights' journey, in
   ms; NAN where no row reports it. Means are over rows that report a
   positive figure (an actor that sent nothing in the last second has no
   send time, not a zero one). */
typedef struct {
    double send_ms;   // actor send -> broker receive: actors' send_ms (alive ones)
    double ingest_ms; // actor send -> learner ingest: learners' Stats.ingest_ms
    double train_ms;  // learner ingest -> weights published: learners' Stats.train_ms
    double apply_ms;  // weights published -> applied: actors' apply_ms (alive ones)
} vl_top_hops_t;

/* Returns 1 if the broker's segment counters add up: received = routed +
   dropped + queued. */
int vl_top_adds_up(const Volley__Status *s);

/* Returns the hop means of a status. */
vl_top_hops_t vl_top_hops(const Volley__Status *s);

/* Writes the table view of s (header, learners, actors, drops, hops) to
   out, plain text without escape codes. broker names the broker in the
   header; at most max_actors actor rows are listed (0: all), lowest ids
   first, with a line counting the rest. */
void vl_top_render(const Volley__Status *s, const char *broker, int max_actors, FILE *out);

/* Writes s as key=value lines: one "kind=broker", one "kind=learner" per
   learner, one "kind=actor" per actor, one "kind=drop" per drop row, each
   starting with "ts=" and the UTC time wall_ns (ns since the epoch). Values
   with spaces, quotes or '=' are double-quoted with \" and \\ escapes; a
   figure nobody reports (a learner without stats, a hop without data) is
   left out. */
void vl_top_render_kv(const Volley__Status *s, int64_t wall_ns, FILE *out);

/* Writes wall_ns as "2025-01-02T03:04:05.678Z" into buf (40 bytes do). */
void vl_top_iso_time(int64_t wall_ns, char *buf, size_t size);

/* Writes one "kind=error" key=value line: the broker did not give a status,
   and why. */
void vl_top_render_kv_error(const char *broker, const char *why, int64_t wall_ns, FILE *out);

/* The `volley top` command. Returns 0, 1 when --once got no answer, 2 on bad
   flags. */
int vl_top_main(int argc, char **argv);

/* The `volley ctl` command. Returns 0 on an OK or status reply, 1 on an
   ERROR reply or no answer, 2 on bad usage. */
int vl_ctl_main(int argc, char **argv);

#endif
