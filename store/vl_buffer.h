/*  vl_buffer: the learner's segmented buffer, `capacity` slots of one segment
    ([horizon] steps plus the bootstrap observation) each. The ingest thread
    claims a slot, decodes a segment straight into it and commits it; the train
    thread takes the oldest committed segments, trains on them and releases
    them. A slot being written is never handed to the trainer, and the trainer
    waits on a condition variable, never polls. When no slot is free the
    oldest waiting segment is evicted (counted): a slow learner keeps the
    freshest data. Slots move between threads through lock-free queues:
    several ingest threads and the trainer never share a lock on the hot
    path, and a slot is only ever held by one of them. */
#ifndef VL_BUFFER_H
#define VL_BUFFER_H

#include <stddef.h>
#include <stdint.h>

#include "../messages/vl_codec.h"

typedef struct vl_buffer_s vl_buffer_t;

/* Creates a buffer of capacity slots for segments of horizon T whose
   observations follow spec, action_dims values per action and a recurrent
   state of state_size floats. Returns NULL on bad sizes or no memory. */
vl_buffer_t *vl_buffer_new(uint32_t capacity, uint32_t T, const vl_obs_spec_t *spec,
                           uint32_t action_dims, uint32_t state_size);

/* Frees the buffer and nulls the pointer; safe on NULL and twice. */
void vl_buffer_destroy(vl_buffer_t **self_p);

/* Ingest: claims a slot to write one segment into, evicting the oldest
   waiting segment if none is free. Sets *arrays and *cap to the slot's array
   storage. Returns the slot, or -1 if every slot is being written or
   trained on. */
int vl_buffer_claim(vl_buffer_t *self, void **arrays, size_t *cap);

/* Ingest: publishes a written slot; seg's arrays must point into it. Wakes
   the trainer when enough segments wait. */
void vl_buffer_commit(vl_buffer_t *self, int slot, const vl_segment_t *seg);

/* Ingest: gives back a claimed slot whose segment was refused. */
void vl_buffer_abandon(vl_buffer_t *self, int slot);

/* Train: waits up to timeout_ms until n segments wait, then takes the n
   oldest into slots[]. Returns how many it took: n, fewer if an ingest
   thread evicted some meanwhile, 0 on timeout or vl_buffer_wake. */
int vl_buffer_take(vl_buffer_t *self, int n, int timeout_ms, int *slots);

/* Returns the segment in a slot taken by vl_buffer_take. */
const vl_segment_t *vl_buffer_segment(const vl_buffer_t *self, int slot);

/* Train: gives taken slots back to be written again. */
void vl_buffer_release(vl_buffer_t *self, const int *slots, int n);

/* Returns how many segments were evicted unread. */
uint64_t vl_buffer_evicted(vl_buffer_t *self);

/* Returns how many segments wait to be taken. */
int vl_buffer_waiting(vl_buffer_t *self);

/* Returns the floats of recurrent state its slots hold per segment. */
uint32_t vl_buffer_state_size(const vl_buffer_t *self);

/* Wakes a trainer blocked in vl_buffer_take (for shutdown). */
void vl_buffer_wake(vl_buffer_t *self);

#endif
