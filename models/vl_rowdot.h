/*  vl_rowdot: the products of a recurrent layer's step at an actor's or a
    minibatch's batch size, on the calling thread:
        C[i][j] = (C[i][j] or init[j] or 0) + sum over parts p of
                  sum_k A_p[i][k] W_p[j][k]
    for m rows and n outputs, each weight W_p row-major [n][k_p] as stored
    (no transposed copy to refresh when the weights change), with AVX-512:
    blocks of 4 rows by 4 outputs, one 16-lane accumulator each, reduced
    once per block. Every output is summed in one fixed order that does
    not depend on m, n or the output's place in a block. A step this small
    costs oneDNN more in fixed overhead and thread wake-ups than in work. */
#ifndef VL_ROWDOT_H
#define VL_ROWDOT_H

#include <stddef.h>
#include <stdint.h>

#define VL_ROWDOT_PARTS 2 // products summed into one C: an LSTM's input and recurrent side

/* One product of the sum: A [m][k] (row stride lda) times W^T, W [n][k]. */
typedef struct {
    const float *a;
    size_t lda;
    const float *w;
    size_t k;
} vl_rowdot_part_t;

/* Returns 1 when this CPU runs vl_rowdot_run (AVX-512F), else 0. */
int vl_rowdot_available(void);

/* Computes C [m][n] (row stride ldc) as above over parts (1 or 2): added
   to C when accumulate, else to init [n] (NULL: 0). Only where
   vl_rowdot_available. */
void vl_rowdot_run(size_t m, size_t n, const vl_rowdot_part_t *parts, int nparts, const float *init,
                   int accumulate, float *c, size_t ldc);

#endif
