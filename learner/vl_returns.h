/*  vl_returns: the returns and lengths of the last VL_RETURNS_WINDOW
    finished episodes and their summary, what a learner reports as its
    progress (the live learner and the offline one keep one each). */
#ifndef VL_RETURNS_H
#define VL_RETURNS_H

#include <stdint.h>

#define VL_RETURNS_WINDOW 100 // episodes in the mean

typedef struct {
    float ret[VL_RETURNS_WINDOW]; // a ring
    uint32_t len[VL_RETURNS_WINDOW];
    uint32_t n, next;
} vl_returns_t;

/* The window's summary (all 0 when it is empty). */
typedef struct {
    float mean, min, max, len_mean;
    uint32_t n;
} vl_returns_summary_t;

/* Adds one episode's return and length, forgetting the oldest beyond the
   window. */
static inline void vl_returns_add(vl_returns_t *r, float ret, uint32_t len)
{
    r->len[r->next] = len;
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

/* Returns the window's mean, min and max return and mean length. */
static inline vl_returns_summary_t vl_returns_summary(const vl_returns_t *r)
{
    vl_returns_summary_t s = {.mean = vl_returns_mean(r), .n = r->n};
    double len = 0;
    for (uint32_t i = 0; i < r->n; i++) {
        s.min = i == 0 || r->ret[i] < s.min ? r->ret[i] : s.min;
        s.max = i == 0 || r->ret[i] > s.max ? r->ret[i] : s.max;
        len += r->len[i];
    }
    s.len_mean = r->n ? (float)(len / r->n) : 0.0f;
    return s;
}

#endif
