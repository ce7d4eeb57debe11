/*  vtrace: IMPALA's V-trace targets and policy-gradient advantages, as in
    shared/BRIEF.md. Depends only on libc and libm. */
#ifndef VL_VTRACE_H
#define VL_VTRACE_H

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
void vl_vtrace(const vl_vtrace_params_t *p, int n, int T, const float *values, const float *rewards,
               const float *dones, const float *log_rhos, float *vs, float *pg_adv);

/* Makes vl_vtrace use one path for the whole process: 0 scalar, 1 SSE2,
   2 AVX2+FMA, -1 the best this CPU has (the default). The paths agree to
   rounding, not bit for bit: a deterministic run (volley replay) picks SSE2,
   which every x86-64 has. Returns the path chosen, or -1 when this build or
   CPU lacks it (the choice is left alone). */
int vl_vtrace_path(int path);

#endif
