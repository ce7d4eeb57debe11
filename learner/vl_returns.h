/*  vl_returns: the returns of the last VL_RETURNS_WINDOW finished episodes
    and their mean, what a learner reports as its progress (the live learner
    and the offline one keep one each). */
#ifndef VL_RETURNS_H
#define VL_RETURNS_H

#include <stdint.h>

#define VL_RETURNS_WINDOW 100 // episodes in the mean

typedef struct {
    float ret[VL_RETURNS_WINDOW]; // a ring
    uint32_t n, next;
} vl_returns_t;

/* Adds one episode's return, forgetting the oldest beyond the window. */
static inline void vl_returns_add(vl_returns_t *r, float ret)
{
    r->ret[r->next] = ret;
    r->next = (r->next + 1) % VL_RETURNS_WINDOW;
    if (r->n < VL_RETURNS_WINDOW)
        r->n++;
}

/* Returns the mean of the returns held, 0 when none. */
static inline float vl_returns_mean(const vl_returns_t *r)
{
    double sum = 0;
    for (uint32_t i = 0; i < r->n; i++)
        sum += r->ret[i];
    return r->n ? (float)(sum / r->n) : 0.0f;
}

#endif
