/*  vl_init: initial weights as torch.nn.init draws them, deterministic for
    a given rng state. */
#ifndef VL_INIT_H
#define VL_INIT_H

#include <stdint.h>

#include "../common/vl_rng.h"

/* Writes gain * an orthogonal rows x cols matrix into w (torch's
   orthogonal_): orthonormal rows when rows <= cols, orthonormal columns
   otherwise. q is scratch of rows * cols doubles. */
void vl_orthogonal(float *w, uint32_t rows, uint32_t cols, float gain, double *q, vl_rng_t *rng);

#endif
