/*  vtrace: IMPALA's V-trace targets and policy-gradient advantages (Espeholt
    et al. 2018, eq. 1 and its recursive form), with GAE's lambda on c_t. One
    backward pass per segment; each ratio is exponentiated once. */
#include "vtrace.h"

#include <math.h>

/* The clip, or x when it is smaller; an infinite clip leaves x alone and a
   NaN x stays NaN (fminf would hide it behind the clip). */
static inline float s_clip(float clip, float x)
{
    return clip < x ? clip : x;
}

/* One segment: v has T + 1 values, the rest T entries each. */
static void s_segment(const vl_vtrace_params_t *p, int T, const float *v, const float *r,
                      const float *done, const float *log_rho, float *vs, float *pg_adv)
{
    float acc = 0.0f;     // v_{t+1} - V(x_{t+1}); zero at the bootstrap
    float next_vs = v[T]; // v_{t+1}; v_T = V(x_T)
    for (int t = T - 1; t >= 0; t--) {
        float ratio = expf(log_rho[t]);
        float disc = p->gamma * (1.0f - done[t]);
        float rho = s_clip(p->rho_bar, ratio);
        float c = p->lambda * s_clip(p->c_bar, ratio);
        float delta = rho * (r[t] + disc * v[t + 1] - v[t]);
        acc = delta + disc * c * acc;
        pg_adv[t] = s_clip(p->pg_rho_bar, ratio) * (r[t] + disc * next_vs - v[t]);
        next_vs = v[t] + acc;
        vs[t] = next_vs;
    }
}

void vl_vtrace(const vl_vtrace_params_t *p, int n, int T, const float *values, const float *rewards,
               const float *dones, const float *log_rhos, float *vs, float *pg_adv)
{
    for (int i = 0; i < n && T > 0; i++) {
        long row = (long)i * T;
        s_segment(p, T, values + row + i, rewards + row, dones + row, log_rhos + row, vs + row,
                  pg_adv + row);
    }
}
