/*  volley/sampler.h: prioritized sampling of a buffer's slots, the
    learner's or the caller's own (prioritized experience replay, Schaul et
    al. 2016). Each slot has a priority p_i >= 0, usually
    p_i = (sum_t |adv_{i,t}|)^alpha; a draw picks slot i with probability
    P(i) = p_i / sum p, and carries the importance weight
    w_i = (N * P(i))^-beta / max w, N the number of slots with p > 0, beta
    annealed toward 1. A sum-tree over doubles makes a set O(log capacity)
    and a draw O(log capacity); every set recomputes its ancestors from their
    children, so the total never drifts however many updates it takes.
    Not thread-safe: one thread owns a sampler. */
#ifndef VOLLEY_SAMPLER_H
#define VOLLEY_SAMPLER_H

#include <stdint.h>

#include <volley/volley.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vl_sampler_s vl_sampler_t;

/* Creates a sampler over capacity slots, all with priority 0 (never drawn),
   drawing from a generator seeded with seed. Returns NULL when capacity is
   0 or above 2^30, or on no memory. Caller destroys. */
VL_EXPORT vl_sampler_t *vl_sampler_new(uint32_t capacity, uint64_t seed);

/* Frees the sampler and nulls the pointer; safe on NULL and twice. */
VL_EXPORT void vl_sampler_destroy(vl_sampler_t **self_p);

/* Returns (sum_t |adv_t|)^alpha for one segment's T advantages, summed in
   double. alpha = 0 gives 1 (uniform). Otherwise the result is at least
   VL_SAMPLER_FLOOR, so a segment of all-zero advantages (or a NaN or an
   infinite one) can still be drawn and never poisons the tree. */
VL_EXPORT double vl_sampler_priority(const float *adv, uint32_t T, float alpha);

/* The least priority vl_sampler_priority returns when alpha > 0. */
#define VL_SAMPLER_FLOOR 1e-6

/* Sets a slot's priority (>= 0 and finite; 0 removes the slot from
   sampling), O(log capacity). A slot out of range or a negative or
   non-finite priority is a programmer's mistake: it asserts, and without
   asserts the slot out of range is ignored and the bad priority set to 0. */
VL_EXPORT void vl_sampler_set(vl_sampler_t *self, uint32_t slot, double priority);

/* Returns a slot's priority (0 for a slot out of range). */
VL_EXPORT double vl_sampler_get(const vl_sampler_t *self, uint32_t slot);

/* Returns the sum of all priorities. */
VL_EXPORT double vl_sampler_total(const vl_sampler_t *self);

/* Returns the number of slots with priority > 0. */
VL_EXPORT uint32_t vl_sampler_count(const vl_sampler_t *self);

/* Draws n slots with replacement, proportional to priority, stratified: one
   draw in each of n equal slices of the total. Writes slots[n] and
   weights[n] = (N * P(i))^-beta divided by the largest such weight among
   the n drawn (so the largest is exactly 1; beta = 0 gives all 1), N =
   vl_sampler_count. A slot of priority 0 is never drawn. Returns n, or 0
   when n is 0 or no slot has priority. O(n log capacity). */
VL_EXPORT uint32_t vl_sampler_sample(vl_sampler_t *self, uint32_t n, float beta, uint32_t *slots,
                                     float *weights);

/* Returns the slot whose share of [0, total) holds u, by the walk
   vl_sampler_sample takes (slot i's share starts at the sum of the
   priorities before it); never a slot of priority 0: a u at or above the
   total gives the last slot of priority > 0, one below 0 the first.
   Returns UINT32_MAX when no slot has priority. For tests, and for a
   caller with its own random numbers. */
VL_EXPORT uint32_t vl_sampler_find(const vl_sampler_t *self, double u);

/* Returns beta annealed linearly from beta0 at step 0 to 1 at step steps,
   and 1 from then on (and for steps = 0). */
VL_EXPORT float vl_sampler_beta(float beta0, uint64_t step, uint64_t steps);

#ifdef __cplusplus
}
#endif

#endif
