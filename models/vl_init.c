/*  vl_init: initial weights; see vl_init.h. */
#include "vl_init.h"

#include <math.h>
#include <stddef.h>

/* Draws `count` orthonormal vectors of length `len` (count <= len) into q
   [count][len]: Gaussian vectors, modified Gram-Schmidt in double. This is
   the Q of a QR of a Gaussian matrix with R's diagonal made positive, which
   is what torch's orthogonal_ returns. */
static void s_orthonormal(double *q, size_t count, size_t len, vl_rng_t *rng)
{
    for (size_t v = 0; v < count; v++) {
        double *qv = q + v * len, norm = 0.0;
        // A redraw is for a vector in the span of the others: probability 0.
        for (int tries = 0; tries < 8 && norm < 1e-6; tries++) {
            for (size_t k = 0; k < len; k++)
                qv[k] = vl_rng_normal(rng);
            for (size_t u = 0; u < v; u++) {
                const double *qu = q + u * len;
                double proj = 0.0;
                for (size_t k = 0; k < len; k++)
                    proj += qu[k] * qv[k];
                for (size_t k = 0; k < len; k++)
                    qv[k] -= proj * qu[k];
            }
            norm = 0.0;
            for (size_t k = 0; k < len; k++)
                norm += qv[k] * qv[k];
            norm = sqrt(norm);
        }
        for (size_t k = 0; k < len; k++)
            qv[k] /= norm;
    }
}

/* Writes gain * an orthogonal rows x cols matrix into w: orthonormal rows
   when rows <= cols, orthonormal columns otherwise. q is scratch of
   rows * cols doubles. */
void vl_orthogonal(float *w, uint32_t rows, uint32_t cols, float gain, double *q,
                         vl_rng_t *rng)
{
    if (rows <= cols) {
        s_orthonormal(q, rows, cols, rng);
        for (size_t i = 0; i < (size_t)rows * cols; i++)
            w[i] = (float)(gain * q[i]);
    } else {
        s_orthonormal(q, cols, rows, rng);
        for (size_t r = 0; r < rows; r++)
            for (size_t c = 0; c < cols; c++)
                w[r * cols + c] = (float)(gain * q[c * rows + r]);
    }
}
