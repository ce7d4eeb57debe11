/*  volley/vtrace.h: IMPALA's V-trace targets and policy-gradient advantages
    (Espeholt et al., 2018) over segments of experience, with a time limit's
    truncation bootstrapped (vl_vtrace_boot). Pure arithmetic on the
    caller's arrays: no allocation, no state but the path chosen. */
#ifndef VOLLEY_VTRACE_H
#define VOLLEY_VTRACE_H

#include <volley/volley.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    float gamma;      /* discount */
    float lambda;     /* trace cutting, multiplies c_t (1 = IMPALA) */
    float rho_bar;    /* clip of rho_t inside delta_t */
    float c_bar;      /* clip of c_t */
    float pg_rho_bar; /* clip of rho in the policy-gradient advantage */
} vl_vtrace_params_t;

/* n segments of horizon T, row-major: values [n][T+1] (last column is the
   bootstrap value), rewards, dones, log_rhos [n][T]; done[t] = 1 when the
   episode ended after action t. Writes vs and pg_adv, each [n][T]. */
VL_EXPORT void vl_vtrace(const vl_vtrace_params_t *p, int n, int T, const float *values,
                         const float *rewards, const float *dones, const float *log_rhos, float *vs,
                         float *pg_adv);

/* As vl_vtrace, for segments in which an episode can also end at a time
   limit (truncated) rather than by the task (terminated). boot [n][T]
   holds, at each step t where the episode was truncated (dones[t] = 1),
   V(x_final) of its final observation, which values cannot carry: the row
   after t is already the next episode's reset. The trace is cut at every
   done as in vl_vtrace, but a truncated step bootstraps:
     delta_t  = rho_t (r_t + gamma (1 - done_t) V(x_{t+1}) + gamma done_t boot_t - V(x_t))
     pg_adv_t = min(pg_rho_bar, pi/mu)
                (r_t + gamma (1 - done_t) vs_{t+1} + gamma done_t boot_t - V(x_t))
   with vs_T = V(x_T). boot must be 0 at every other step (a termination
   has no future; most steps end nothing): the kernel adds gamma boot_t as
   it finds it, a multiply by done_t per element fewer. boot NULL or all
   +0 gives vl_vtrace's output bit for bit, on each path. */
VL_EXPORT void vl_vtrace_boot(const vl_vtrace_params_t *p, int n, int T, const float *values,
                              const float *rewards, const float *dones, const float *boot,
                              const float *log_rhos, float *vs, float *pg_adv);

/* Makes vl_vtrace and vl_vtrace_boot use one path for the whole process:
   0 scalar, 1 SSE2, 2 AVX2+FMA, -1 the best this CPU has (the default).
   The paths agree to rounding, not bit for bit: a deterministic run
   (volley replay) picks SSE2, which every x86-64 has. Returns the path
   chosen, or -1 when this build or CPU lacks it (the choice is left
   alone). */
VL_EXPORT int vl_vtrace_path(int path);

#ifdef __cplusplus
}
#endif

#endif
