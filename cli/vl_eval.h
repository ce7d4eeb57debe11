/*  vl_eval: `volley eval RUN|CHECKPOINT`, a kept policy scored on its env:
    N episodes, mean ± std of return and length; --render to watch it play
    in a terminal. */
#ifndef VL_EVAL_H
#define VL_EVAL_H

#include <stdint.h>

/* Sums over finished episodes. */
typedef struct {
    uint32_t n;              // episodes finished
    double ret_sum, ret_sq;  // sum and sum of squares of returns
    double len_sum, len_sq;  // of lengths
    double ret_min, ret_max; // valid when n > 0
    uint32_t len_min, len_max;
} vl_eval_stats_t;

/* Adds one finished episode to st. */
void vl_eval_stats_add(vl_eval_stats_t *st, double ret, uint32_t len);

/* Writes the mean and (population) standard deviation of sum and sq over
   n values. */
void vl_eval_mean_std(uint32_t n, double sum, double sq, double *mean, double *std);

/* The `volley eval` command. Returns 0, 1 when the env fails, 2 on bad
   usage or input. */
int vl_eval_main(int argc, char **argv);

#endif
