/*  vl_matmul: one float matrix product over strided views,
        C[i][j] (+)= bias[j] + sum_k A[i][k] B[k][j],
    run by oneDNN's matmul primitive (one primitive per shape, created at
    its first use and kept: the last VL_MATMUL_CACHE shapes), or by plain C
    loops that give the same bits on every x86-64 (vl_matmul_set_portable;
    their order is in vl_matmul.c).
    Strides let a caller multiply by a transposed matrix, or by every T-th
    row of a [B][T][..] array, without a copy. One object is used by one
    thread at a time; oneDNN runs on the calling thread's OpenMP threads. */
#ifndef VL_MATMUL_H
#define VL_MATMUL_H

#include <stddef.h>
#include <stdint.h>

#include "vl_dnnl.h"

// Shapes kept: an LSTM's training and acting shapes at several sizes, or a conv net's linear
// layers and heads at its VL_NET_SETS batch sizes (12 a size with two linear layers).
#define VL_MATMUL_CACHE 40

typedef struct vl_matmul_s vl_matmul_t;

/* A product's sizes and strides, in floats: A[i][k] at a[i * a_rs + k * a_cs],
   B[k][j] at b[k * b_rs + j * b_cs], C[i][j] at c[i * c_rs + j]. */
typedef struct {
    int64_t m, k, n;
    int64_t a_rs, a_cs, b_rs, b_cs, c_rs;
    int accumulate; // add to C rather than overwrite it
    int bias;       // add bias [n]
} vl_matmul_shape_t;

/* Creates a product runner on its own oneDNN CPU engine. Returns NULL on
   failure. */
vl_matmul_t *vl_matmul_new(void);

/* Creates a product runner on dnnl's engine and stream, which the caller
   keeps alive longer than the runner. Returns NULL on failure. */
vl_matmul_t *vl_matmul_new_on(vl_dnnl_t *dnnl);

/* Frees the runner and its primitives, nulls the pointer; safe on NULL and twice. */
void vl_matmul_destroy(vl_matmul_t **self_p);

/* Makes every later product run on the portable loops. */
void vl_matmul_set_portable(vl_matmul_t *self);

/* Computes the product of shape (sizes >= 1) into c; bias is read only when
   shape->bias. Returns 0, or -1 (logged) when oneDNN or memory fails. */
int vl_matmul_run(vl_matmul_t *self, const vl_matmul_shape_t *shape, const float *a, const float *b,
                  const float *bias, float *c);

/* A linear layer, y [n][out] = x W^T + b, over x [n][in], W [out][in] and
   b [out] (PyTorch's layout), as one product. Returns 0, or -1 (logged). */
int vl_matmul_linear(vl_matmul_t *self, int64_t n, int64_t in, int64_t out, const float *x,
                     const float *w, const float *b, float *y);

/* The backward of vl_matmul_linear, given dy [n][out]: dw [out][in] +=
   dy^T x, then db [out] += the sum of dy's rows in row order, then, when dx
   is not NULL, dx [n][in] = dy W, or += when add_dx. Returns 0, or -1. */
int vl_matmul_linear_backward(vl_matmul_t *self, int64_t n, int64_t in, int64_t out, const float *x,
                              const float *w, const float *dy, float *dw, float *db, float *dx,
                              int add_dx);

#endif
