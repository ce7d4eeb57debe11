/*  vl_offline: a learner fed recorded messages instead of a socket, and
    deterministic: one thread, the portable kernels (the same arithmetic on
    every x86-64), the configured seed, and a schedule that depends only on
    the order of the messages: each message is ingested as the live learner
    would (vl_ingest), and each time `batch` new segments have arrived one
    update runs. The same recording therefore gives the same weights, bit
    for bit; `volley replay` prints their checksum. */
#ifndef VL_OFFLINE_H
#define VL_OFFLINE_H

#include <stddef.h>
#include <stdint.h>

#include "../messages/vl_codec.h"
#include "vl_learner_config.h"

typedef struct vl_offline_s vl_offline_t;

/* What an offline learner has done. */
typedef struct {
    uint64_t messages;             // fed
    uint64_t accepted;             // ingested into the buffer
    uint64_t refused[VL_EREASONS]; // by reason (VL_EMISMATCH: another policy or shape)
    uint64_t updates;              // = the weights version
    uint64_t trained;              // segments in those updates
    uint64_t stale;                // dropped as more than max_lag versions old
    uint64_t env_steps, episodes;  // in the accepted segments
    float mean_return;             // over the last 100 episodes
    // why the first refused segment was (the field that differs), "" when none was
    char first_refusal[VL_REFUSAL_TEXT_MAX];
} vl_offline_stats_t;

/* Creates an offline learner for config (broker ignored). Returns NULL on
   no memory or a config the buffer refuses. */
vl_offline_t *vl_offline_new(const vl_learner_config_t *config);

/* Feeds one recorded message (received at recv_ns), training when a batch
   is complete. Returns 0, or -1 if an update failed (no memory). */
int vl_offline_feed(vl_offline_t *self, const uint8_t *data, size_t size, int64_t recv_ns);

/* Fills *out with the counters so far. */
void vl_offline_stats(const vl_offline_t *self, vl_offline_stats_t *out);

/* Returns the FNV-1a 64-bit checksum of the current weights: every
   tensor's name, shape and float bytes, in the policy's order. */
uint64_t vl_offline_checksum(vl_offline_t *self);

/* Frees the learner and nulls the pointer; safe on NULL and twice. */
void vl_offline_destroy(vl_offline_t **self_p);

#endif
