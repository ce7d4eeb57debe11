/*  vl_sampler: a sum-tree over slot priorities; see vl_sampler.h.

    The tree is an array: node 1 is the root, node i has children 2i and
    2i + 1, and the leaves, capacity rounded up to a power of two, sit at
    [leaves, 2 * leaves). Leaves past capacity stay 0. A set writes its leaf
    and recomputes each ancestor as the sum of its two children, so every
    node is always exactly the floating sum of its children (no update ever
    adds a delta, so nothing drifts).

    A draw of u in [0, total) walks down from the root: left when u is below
    the left child's sum, else right with u less that sum, so slot i takes
    the share [sum of p before i, that + p_i). A batch's draws are sorted
    (stratified), walked 16 at a time in lockstep, branch-free, the levels
    they all agree on once (s_find). Rounding (a u that lands on the total,
    a u left over after subtracting) can send that walk into a subtree of
    sum 0; the rare draw that ends on a leaf of priority 0 walks again by a
    guarded walk that never enters a child of sum 0 (s_find_guarded), so a
    zero leaf is never drawn. */
#include "vl_sampler.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>

#include "../common/vl_rng.h"

#define S_MAX_CAPACITY (1u << 30) // 2 * leaves must fit in a uint32_t node index
#define S_LANES        16 // draws walked down together: their loads overlap (16 measured best)

struct vl_sampler_s {
    uint32_t capacity;
    uint32_t leaves; // capacity rounded up to a power of two
    uint32_t depth;  // log2(leaves): levels below the root
    uint32_t count;  // slots with priority > 0
    double *tree;    // [2 * leaves]; tree[0] unused
    double *logp;    // [capacity], log of each slot's priority, for the weights
    vl_rng_t rng;
};

vl_sampler_t *vl_sampler_new(uint32_t capacity, uint64_t seed)
{
    if (capacity == 0 || capacity > S_MAX_CAPACITY)
        return NULL;
    vl_sampler_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->capacity = capacity;
    self->leaves = 1;
    while (self->leaves < capacity) {
        self->leaves *= 2;
        self->depth++;
    }
    vl_rng_seed(&self->rng, seed);
    self->tree = calloc(2 * (size_t)self->leaves, sizeof(double));
    self->logp = malloc(capacity * sizeof(double));
    if (!self->tree || !self->logp) {
        vl_sampler_destroy(&self);
        return NULL;
    }
    for (uint32_t i = 0; i < capacity; i++)
        self->logp[i] = -INFINITY;
    return self;
}

void vl_sampler_destroy(vl_sampler_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    vl_sampler_t *self = *self_p;
    free(self->tree);
    free(self->logp);
    free(self);
    *self_p = NULL;
}

double vl_sampler_priority(const float *adv, uint32_t T, float alpha)
{
    if (alpha == 0.0f)
        return 1.0;
    double sum = 0.0;
    for (uint32_t t = 0; t < T; t++)
        sum += fabs((double)adv[t]);
    double p = pow(sum, (double)alpha);
    // !(p >= floor) also catches NaN.
    if (!(p >= VL_SAMPLER_FLOOR) || isinf(p))
        p = VL_SAMPLER_FLOOR;
    return p;
}

void vl_sampler_set(vl_sampler_t *self, uint32_t slot, double priority)
{
    assert(slot < self->capacity);
    assert(priority >= 0.0 && isfinite(priority));
    if (slot >= self->capacity)
        return;
    if (!(priority >= 0.0) || isinf(priority))
        priority = 0.0;
    double *tree = self->tree;
    uint32_t i = self->leaves + slot;
    self->count += (priority > 0.0) - (tree[i] > 0.0);
    tree[i] = priority;
    self->logp[slot] = log(priority);
    for (i /= 2; i >= 1; i /= 2)
        tree[i] = tree[2 * i] + tree[2 * i + 1];
}

double vl_sampler_get(const vl_sampler_t *self, uint32_t slot)
{
    return slot < self->capacity ? self->tree[self->leaves + slot] : 0.0;
}

double vl_sampler_total(const vl_sampler_t *self)
{
    return self->tree[1];
}

uint32_t vl_sampler_count(const vl_sampler_t *self)
{
    return self->count;
}

/* Returns the leaf node a draw u lands on, never one of priority 0 when the
   total is positive: it never steps into a child whose sum is 0, so a u
   below 0 (or NaN) ends on the first positive leaf, one at or above the
   total on the last. */
static uint32_t s_find_guarded(const vl_sampler_t *self, double u)
{
    const double *tree = self->tree;
    uint32_t node = 1;
    while (node < self->leaves) {
        uint32_t l = 2 * node;
        if (tree[l + 1] > 0.0 && (u >= tree[l] || !(tree[l] > 0.0))) {
            u -= tree[l];
            node = l + 1;
        } else {
            node = l;
        }
    }
    return node;
}

/* Walks S_LANES draws u[] in [0, total), sorted, down the tree together,
   and writes the slots they land on to slots[]. The draws of a stratified
   batch are close: the levels where the first and the last go the same way
   are walked once for all. Below that the lanes walk level by level, so
   their chains of dependent loads overlap, and branch-free, as their
   directions are coin flips no predictor learns. This walk may step right
   into a subtree of sum 0 when rounding leaves u at or above its node's
   sum; the rare draw that so ends on a leaf of priority 0 walks again,
   guarded. */
static void s_find(const vl_sampler_t *self, const double *u_in, uint32_t *slots)
{
    const double *tree = self->tree;
    double lo = u_in[0], hi = u_in[S_LANES - 1], base = 0.0;
    uint32_t start = 1, level = 0;
    for (; level < self->depth; level++) {
        uint32_t l = 2 * start;
        double left = tree[l];
        uint32_t right = lo >= left;
        if (!(right | (hi < left)))
            break;
        double take = left * (double)right;
        lo -= take;
        hi -= take;
        base += take;
        start = l + right;
    }
    double u[S_LANES];
    uint32_t node[S_LANES];
    for (uint32_t j = 0; j < S_LANES; j++) {
        u[j] = u_in[j] - base;
        node[j] = start;
    }
    for (; level < self->depth; level++) {
#pragma GCC unroll 16 // S_LANES: lanes in registers, no loop overhead
        for (uint32_t j = 0; j < S_LANES; j++) {
            uint32_t l = 2 * node[j];
            double left = tree[l];
            uint32_t right = u[j] >= left;
            u[j] -= left * (double)right; // not ?:, which compilers may turn into a branch
            node[j] = l + right;
        }
    }
    for (uint32_t j = 0; j < S_LANES; j++) {
        uint32_t leaf = tree[node[j]] > 0.0 ? node[j] : s_find_guarded(self, u_in[j]);
        slots[j] = leaf - self->leaves;
    }
}

/* Writes weights[n] for the drawn slots[n]. The weight (N P(i))^-beta over
   its largest among the draws is exp(-beta (log p_i - log p_ref)), p_ref the
   drawn priority of the largest weight (N and the total cancel), computed
   from the logs each set caches, in double up to the final rounding. */
static void s_weights(const vl_sampler_t *self, const uint32_t *slots, uint32_t n, float beta,
                      float *weights)
{
    if (beta == 0.0f) {
        for (uint32_t k = 0; k < n; k++)
            weights[k] = 1.0f;
        return;
    }
    const double *logp = self->logp;
    double lo = logp[slots[0]], hi = lo;
    for (uint32_t k = 1; k < n; k++) {
        double l = logp[slots[k]];
        lo = l < lo ? l : lo;
        hi = l > hi ? l : hi;
    }
    double ref = beta > 0.0f ? lo : hi, b = (double)beta;
    for (uint32_t k = 0; k < n; k++)
        weights[k] = (float)exp(-b * (logp[slots[k]] - ref));
}

uint32_t vl_sampler_sample(vl_sampler_t *self, uint32_t n, float beta, uint32_t *slots,
                           float *weights)
{
    double total = self->tree[1];
    if (n == 0 || !(total > 0.0))
        return 0;
    double slice = total / n, u[S_LANES];
    uint32_t k = 0, tail[S_LANES];
    for (; k + S_LANES <= n; k += S_LANES) {
        for (uint32_t j = 0; j < S_LANES; j++)
            u[j] = ((double)(k + j) + vl_rng_uniform(&self->rng)) * slice;
        s_find(self, u, slots + k);
    }
    if (k < n) {
        // A short last group walks whole, its spare lanes copies of its last
        // draw, so that the lanes stay sorted.
        for (uint32_t j = 0; j < S_LANES; j++)
            u[j] = k + j < n ? ((double)(k + j) + vl_rng_uniform(&self->rng)) * slice : u[j - 1];
        s_find(self, u, tail);
        for (uint32_t j = 0; k + j < n; j++)
            slots[k + j] = tail[j];
    }
    s_weights(self, slots, n, beta, weights);
    return n;
}

uint32_t vl_sampler_find(const vl_sampler_t *self, double u)
{
    if (!(self->tree[1] > 0.0))
        return UINT32_MAX;
    double lanes[S_LANES];
    uint32_t slots[S_LANES];
    for (uint32_t j = 0; j < S_LANES; j++)
        lanes[j] = u;
    s_find(self, lanes, slots);
    return slots[0];
}

float vl_sampler_beta(float beta0, uint64_t step, uint64_t steps)
{
    if (steps == 0 || step >= steps)
        return 1.0f;
    double f = (double)step / (double)steps;
    return (float)((double)beta0 + (1.0 - (double)beta0) * f);
}
