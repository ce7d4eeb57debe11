/*  vl_status: the messages of the broker's control port (volley.proto's
    comment above Beat gives the frames): an actor's Beat, and the Status the
    broker answers with. Status is handed out as protobuf-c's own struct, a
    tree of counters and rows too wide to mirror; vl_status_decode validates
    all of it first, so a reader may print any field it finds. */
#ifndef VL_STATUS_H
#define VL_STATUS_H

#include <stddef.h>
#include <stdint.h>

#include "vl_codec.h"
#include "vl_spec.h"
#include "volley.pb-c.h"

/* Control verbs: the first frame of a request on the control port. */
#define VL_VERB_BEAT     "BEAT"
#define VL_VERB_STATUS   "STATUS"
#define VL_VERB_PAUSE    "PAUSE"
#define VL_VERB_RESUME   "RESUME"
#define VL_VERB_SHUTDOWN "SHUTDOWN"
#define VL_VERB_SPEC     "SPEC"
#define VL_VERB_GETSPEC  "GETSPEC"
#define VL_VERB_OK       "OK"
#define VL_VERB_ERROR    "ERROR"
/* Sent by the broker, unasked, to an actor: ["REFUSED"][what][reason]. */
#define VL_VERB_REFUSED     "REFUSED"
#define VL_REFUSED_SPEC     "spec"
#define VL_REFUSED_SEGMENTS "segments"

/* Most rows a Status may carry of each kind; a longer one is refused. */
#define VL_STATUS_MAX_ACTORS   65536
#define VL_STATUS_MAX_LEARNERS 1024
#define VL_STATUS_MAX_DROPS    1024
#define VL_STATUS_MAX_SPECS    1024
/* Largest uptime a Status may claim, in seconds (a century). */
#define VL_STATUS_MAX_UPTIME 3.2e9

/* Longest drop kind or reason text, NUL included. */
#define VL_STATUS_TEXT_MAX 512 // > VL_SPEC_REASON_MAX: a reason names a field and two values

/* An actor's heartbeat; fields as in volley.proto's Beat. */
typedef struct {
    char policy_id[VL_POLICY_ID_MAX];
    uint32_t actor_id;
    uint64_t segments_sent;
    uint64_t weights_version;
    float apply_ms;
    float apply_ms_max;
    float env_steps_per_s;
    int has_spec;   // 1: spec below was sent (an actor's beat always carries it)
    vl_spec_t spec; // what its segments look like; spec.policy_id is policy_id
} vl_beat_t;

/* Encodes a Beat into a new buffer (caller frees). Returns 0, or -1 on a
   bad policy id, a negative or non-finite figure, or no memory. */
int vl_beat_encode(const vl_beat_t *beat, uint8_t **out, size_t *out_size);

/* Decodes a Beat (figures finite and >= 0; a spec, if any, valid under the
   default limits and for the beat's policy). *beat is written on VL_OK alone.
   Returns VL_OK or the reason. */
vl_reason_t vl_beat_decode(const uint8_t *data, size_t size, vl_beat_t *beat);

/* Packs a Status the caller built (schema set here). Returns 0 and sets *out
   (caller frees), or -1. */
int vl_status_encode(Volley__Status *status, uint8_t **out, size_t *out_size);

/* Decodes and validates a Status: schema, row counts within the maxima
   above, every policy id and text a valid name, every float finite, every
   learner's stats valid as vl_stats_decode would have them. Returns it
   (caller frees with vl_status_free) and VL_OK in *reason, or NULL and the
   reason. */
Volley__Status *vl_status_decode(const uint8_t *data, size_t size, vl_reason_t *reason);

/* Frees a decoded Status and nulls the pointer; safe on NULL and twice. */
void vl_status_free(Volley__Status **status_p);

/* Room for a Stats' figures (VL_FIGURES_KEPT of them). */
typedef struct {
    Volley__Figure figs[VL_FIGURES_KEPT];
    Volley__Figure *ptrs[VL_FIGURES_KEPT];
} vl_stats_figures_t;

/* Fills msg from stats (vl_control.c), its figures in store; msg's strings
   and values point into stats. */
void vl_stats_to_msg(const vl_stats_t *stats, Volley__Stats *msg, vl_stats_figures_t *store);

/* Checks an unpacked Stats (vl_control.c): schema, policy id, finite
   floats. Returns VL_OK or the reason. */
vl_reason_t vl_stats_check_msg(const Volley__Stats *msg);

#endif
