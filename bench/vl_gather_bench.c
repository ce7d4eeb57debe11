/*  vl_gather_bench: gathering a prioritized minibatch of 256 segments out of
    the learner's buffer into contiguous training memory, beside one memcpy
    of the same bytes in the same run (the target: gather >= 0.5x
    memcpy bandwidth). Segment sizes are what the buffer holds for CartPole
    (2,064 bytes) and Catch (20,264 bytes: its screen as bytes). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/vl_bench.h"
#include "common/vl_rng.h"
#include "store/vl_sampler.h"

#define S_BATCH    256
#define S_CAPACITY 4096

typedef struct {
    const char *name;
    size_t bytes; // held bytes of one segment
} s_case_t;

static const s_case_t s_cases[] = {{"cartpole", 2064}, {"catch", 20264}};

static double s_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Returns the best seconds per call of gather (or memcpy when contiguous). */
static double s_best(const uint8_t *store, uint8_t *out, size_t bytes, vl_sampler_t *sampler,
                     int contiguous, vl_bench_plan_t plan)
{
    uint32_t slots[S_BATCH];
    float w[S_BATCH];
    double best = 1e30;
    for (int r = 0; r < plan.runs; r++) {
        long calls = 0;
        double t0 = s_now(), t;
        do {
            if (contiguous) {
                memcpy(out, store + (size_t)(calls % 8) * S_BATCH * bytes, S_BATCH * bytes);
            } else {
                vl_sampler_sample(sampler, S_BATCH, 0.4f, slots, w);
                for (int i = 0; i < S_BATCH; i++)
                    memcpy(out + (size_t)i * bytes, store + (size_t)slots[i] * bytes, bytes);
            }
            calls++;
            t = s_now() - t0;
        } while (t < plan.run_s);
        if (t / (double)calls < best)
            best = t / (double)calls;
    }
    return best;
}

static void s_usage(FILE *out)
{
    fprintf(out,
            "usage: vl_gather_bench [--quick] [--help]\n"
            "Gathers prioritized minibatches of %d segments from a buffer of %d and\n"
            "compares the bandwidth with memcpy of the same bytes.\n",
            S_BATCH, S_CAPACITY);
}

int main(int argc, char **argv)
{
    vl_bench_plan_t plan;
    int rc = vl_bench_parse(argc, argv, "vl_gather_bench", s_usage, (vl_bench_plan_t){5, 0.2},
                            (vl_bench_plan_t){1, 0.01}, &plan);
    if (rc != 0)
        return rc == 1 ? 0 : 2;
    printf("gather of %d sampled segments (with the sampling) vs memcpy of the same bytes,\n"
           "from a buffer of %d segments, best of %d (thread CPU time):\n",
           S_BATCH, S_CAPACITY, plan.runs);
    printf("  %-9s %10s %12s %12s %8s  %s\n", "case", "bytes/seg", "gather GB/s", "memcpy GB/s",
           "ratio", "target gather >= 0.5x memcpy");
    for (size_t k = 0; k < sizeof s_cases / sizeof s_cases[0]; k++) {
        size_t bytes = s_cases[k].bytes;
        uint8_t *store = malloc((size_t)S_CAPACITY * bytes), *out = malloc(S_BATCH * bytes);
        vl_sampler_t *sampler = vl_sampler_new(S_CAPACITY, 7);
        if (!store || !out || !sampler)
            return 1;
        vl_rng_t rng;
        vl_rng_seed(&rng, 11);
        for (size_t i = 0; i < (size_t)S_CAPACITY * bytes; i++)
            store[i] = (uint8_t)vl_rng_next(&rng);
        for (uint32_t s = 0; s < S_CAPACITY; s++)
            vl_sampler_set(sampler, s, 0.1 + vl_rng_uniform(&rng));
        double g = s_best(store, out, bytes, sampler, 0, plan);
        double m = s_best(store, out, bytes, sampler, 1, plan);
        double gbs = (double)S_BATCH * (double)bytes / g / 1e9;
        double mbs = (double)S_BATCH * (double)bytes / m / 1e9;
        printf("  %-9s %10zu %12.2f %12.2f %7.2fx  %s\n", s_cases[k].name, bytes, gbs, mbs,
               gbs / mbs, gbs >= 0.5 * mbs ? "met" : "missed");
        vl_sampler_destroy(&sampler);
        free(store);
        free(out);
    }
    return 0;
}
