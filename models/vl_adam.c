/*  vl_adam: Adam over a flat float array; see vl_adam.h. */
#include "vl_adam.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define S_BETA1 0.9   // first-moment decay, Adam's default
#define S_BETA2 0.999 // second-moment decay, Adam's default
#define S_EPS   1e-5  // CleanRL's PPO value; torch's default is 1e-8

struct vl_adam_s {
    size_t n;
    uint64_t t; // steps taken
    float *m;   // first moment [n]
    float *v;   // second moment [n]
};

vl_adam_t *vl_adam_new(size_t n)
{
    if (n == 0)
        return NULL;
    vl_adam_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->n = n;
    self->m = calloc(n, sizeof(float));
    self->v = calloc(n, sizeof(float));
    if (!self->m || !self->v)
        vl_adam_destroy(&self);
    return self;
}

void vl_adam_destroy(vl_adam_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    vl_adam_t *self = *self_p;
    free(self->m);
    free(self->v);
    free(self);
    *self_p = NULL;
}

/* Moment updates and steps of parameters [i, i + n); restrict tells gcc the
   arrays do not overlap, so that a block of 8 vectorises at -O2. */
static inline void s_adam_run(float *restrict m, float *restrict v, float *restrict params,
                              const float *restrict grads, size_t i, size_t n, float b1, float b2,
                              float step, float inv_sqrt_bc2, float eps)
{
    for (size_t k = i; k < i + n; k++) {
        float g = grads[k];
        m[k] = b1 * m[k] + (1.0f - b1) * g;
        v[k] = b2 * v[k] + (1.0f - b2) * g * g;
        params[k] -= step * m[k] / (sqrtf(v[k]) * inv_sqrt_bc2 + eps);
    }
}

void vl_adam_step(vl_adam_t *self, float *params, const float *grads, float lr)
{
    self->t++;
    // torch's form: p -= (lr / bc1) * m / (sqrt(v) / sqrt(bc2) + eps).
    double bc1 = 1.0 - pow(S_BETA1, (double)self->t);
    double bc2 = 1.0 - pow(S_BETA2, (double)self->t);
    float step = (float)(lr / bc1), inv_sqrt_bc2 = (float)(1.0 / sqrt(bc2));
    const float b1 = (float)S_BETA1, b2 = (float)S_BETA2, eps = (float)S_EPS;
    float *m = self->m, *v = self->v;
    size_t i = 0;
    for (; i + 8 <= self->n; i += 8) // fixed blocks: gcc -O2 vectorises only these
        s_adam_run(m, v, params, grads, i, 8, b1, b2, step, inv_sqrt_bc2, eps);
    s_adam_run(m, v, params, grads, i, self->n - i, b1, b2, step, inv_sqrt_bc2, eps);
}

uint64_t vl_adam_steps(const vl_adam_t *self)
{
    return self->t;
}

size_t vl_adam_state_size(const vl_adam_t *self)
{
    return sizeof self->t + 2 * self->n * sizeof(float);
}

void vl_adam_save(const vl_adam_t *self, void *out)
{
    uint8_t *p = out;
    memcpy(p, &self->t, sizeof self->t);
    memcpy(p + sizeof self->t, self->m, self->n * sizeof(float));
    memcpy(p + sizeof self->t + self->n * sizeof(float), self->v, self->n * sizeof(float));
}

int vl_adam_load(vl_adam_t *self, const void *in, size_t size)
{
    if (size != vl_adam_state_size(self))
        return -1;
    const uint8_t *p = in;
    memcpy(&self->t, p, sizeof self->t);
    memcpy(self->m, p + sizeof self->t, self->n * sizeof(float));
    memcpy(self->v, p + sizeof self->t + self->n * sizeof(float), self->n * sizeof(float));
    return 0;
}
