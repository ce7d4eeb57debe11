/*  vl_inlet: a learner's receiving end. Its own thread says hello to the
    broker for one policy, declares the policy's spec each second, grants
    credit as the buffer frees room, decodes each segment straight into a
    buffer slot (vl_ingest) and keeps the books: steps, episodes, the last
    episodes' returns, and refusals by reason and by actor. The C learner and
    the public transport (include/volley/learner.h) both receive through it. */
#ifndef VL_INLET_H
#define VL_INLET_H

#include <stdint.h>

#include "../messages/vl_codec.h"
#include "../store/vl_buffer.h"
#include "vl_learner_config.h"
#include "vl_returns.h"

typedef struct vl_inlet_s vl_inlet_t;

/* What the inlet has counted since it started (plus vl_inlet_add_counts). */
typedef struct {
    uint64_t accepted;             // segments committed to the buffer
    uint64_t env_steps, episodes;  // in accepted segments
    uint64_t refused[VL_EREASONS]; // segments refused, by reason
    uint64_t refused_total;        // their sum
    uint64_t over_budget;          // segments that came after the step budget, not taken
    uint64_t arrived;              // accepted + refused_total + over_budget
    float mean_return;             // of the last VL_RETURNS_WINDOW episodes
    uint32_t window;               // episodes in that mean
} vl_inlet_counts_t;

/* Starts receiving config->policy's segments from config->broker on ctx
   (borrowed, outlives the inlet) into buf (borrowed): credit up to half
   its capacity, at least config->batch_segments. Returns NULL on no memory
   or no thread. Caller destroys. */
vl_inlet_t *vl_inlet_new(void *ctx, const vl_learner_config_t *config, vl_buffer_t *buf);

/* Stops the thread, frees the inlet and nulls the pointer; safe on NULL
   and twice. */
void vl_inlet_destroy(vl_inlet_t **self_p);

/* Returns 1 if the thread stopped because it could not connect, else 0. */
int vl_inlet_failed(vl_inlet_t *self);

/* Adds counts from before a restart (a checkpoint's) to the books. */
void vl_inlet_add_counts(vl_inlet_t *self, uint64_t env_steps, uint64_t episodes);

/* Fills out with the books now. */
void vl_inlet_counts(vl_inlet_t *self, vl_inlet_counts_t *out);

/* Fills st's ingest part: steps, episodes, returns window and mean,
   refusal rows, the drops it knows of (dropped_invalid: every refusal;
   dropped_budget: over the step budget), segments_arrived, and the mean
   actor-send-to-ingest time since the last call (which it resets). Returns
   the segments refused in all. */
uint64_t vl_inlet_fill_stats(vl_inlet_t *self, vl_stats_t *st);

/* Returns the summary of the last episodes' returns and lengths. */
vl_returns_summary_t vl_inlet_returns(vl_inlet_t *self);

/* Copies the means of the env's own figures over their last values. */
void vl_inlet_figures(vl_inlet_t *self, vl_figure_means_t *out);

#endif
