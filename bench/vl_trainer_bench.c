/*  vl_trainer_bench: one whole learner update of the C learner, in updates/s:
    vl_trainer_update on a batch of 16 CartPole segments of 64 steps at the
    C learner's defaults (recompute values and log-probs, V-trace, 4 epochs
    of 256-sample minibatches with Adam). The batch is a real rollout with
    random actions (bench/vl_bench_rollout.c). bench/py_learner_bench.py
    runs the PyTorch learner example on the same batch (--dump DIR writes it
    as raw arrays) and prints both figures.

    Each run lasts at least S_RUN_S of wall-clock time; the best of S_RUNS
    counts. Before the figure is printed the losses must be finite.

    Then the same batch trained by a recurrent model, linear(128) lstm(128)
    (each segment from a zero state), beside the default model's figure of
    the same run: what an LSTM costs the learner per update. Then that
    LSTM at one epoch of one minibatch holding the whole batch, as PufferLib
    trains it: the update's forward pass run twice (to recompute the
    targets, then for the loss) beside the single pass that takes the loss
    through the first. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/vl_bench.h"
#include "bench/vl_bench_rollout.h"
#include "learner/vl_learner.h"
#include "learner/vl_trainer.h"

#define S_RUNS        5
#define S_RUN_S       0.5
#define S_QUICK_RUNS  1
#define S_QUICK_RUN_S 0.01
#define S_SEGMENTS    16 // the C learner's --batch
#define S_SEED        7
#define S_LSTM        "linear(128) lstm(128)"

static double s_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void s_usage(FILE *out)
{
    fprintf(out, "usage: vl_trainer_bench [--quick] [--dump DIR]\n"
                 "One C learner update (16 CartPole segments x 64 steps, defaults) in updates/s,\n"
                 "then the same with the model " S_LSTM ".\n"
                 "--dump DIR writes the batch as raw arrays for bench/py_learner_bench.py.\n");
}

/* Writes n bytes to DIR/name. Returns 0 or -1. */
static int s_write(const char *dir, const char *name, const void *data, size_t n)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(data, 1, n, f) == n;
    if (f && fclose(f) != 0)
        ok = 0;
    return ok ? 0 : -1;
}

/* Writes each array of the n segments, concatenated segment by segment:
   obs [n][T+1][D] f32, actions i32 (the bench's env has one discrete
   choice, which segments carry as a whole float), rewards, dones, logp f32, truncated u8
   [n][T], final_obs [n][T][D] f32 (at truncated steps, 0 elsewhere). */
static int s_dump(const char *dir, const vl_segment_t *segs, int n, uint32_t D)
{
    uint32_t T = segs[0].horizon;
    size_t steps = (size_t)n * T;
    float *obs = malloc((size_t)n * (T + 1) * D * 4), *fin = calloc(steps * D, 4);
    float *rew = malloc(steps * 4), *done = malloc(steps * 4), *logp = malloc(steps * 4);
    int32_t *act = malloc(steps * 4);
    uint8_t *trunc = malloc(steps);
    int rc = -1;
    if (!obs || !fin || !rew || !done || !logp || !act || !trunc)
        goto out;
    for (int i = 0; i < n; i++) {
        const vl_segment_t *s = &segs[i];
        vl_obs_from_rows(&s->obs_spec, T + 1, s->obs, obs + (size_t)i * (T + 1) * D);
        for (uint32_t t = 0; t < T; t++)
            act[i * T + t] = (int32_t)s->actions[t];
        memcpy(rew + i * T, s->rewards, T * 4);
        memcpy(done + i * T, s->dones, T * 4);
        memcpy(logp + i * T, s->logp, T * 4);
        memcpy(trunc + i * T, s->truncated, T);
        for (uint32_t t = 0, k = 0; t < T && k < s->n_truncated; t++)
            if (s->truncated[t])
                vl_obs_from_rows(&s->obs_spec, 1, s->final_obs + (size_t)k++ * s->obs_row_bytes,
                                 fin + ((size_t)i * T + t) * D);
    }
    rc = s_write(dir, "obs.f32", obs, (size_t)n * (T + 1) * D * 4) |
         s_write(dir, "actions.i32", act, steps * 4) | s_write(dir, "rewards.f32", rew, steps * 4) |
         s_write(dir, "dones.f32", done, steps * 4) | s_write(dir, "logp.f32", logp, steps * 4) |
         s_write(dir, "truncated.u8", trunc, steps) |
         s_write(dir, "final_obs.f32", fin, steps * D * 4);
out:
    free(obs), free(fin), free(rew), free(done), free(logp), free(act), free(trunc);
    return rc;
}

/* Times updates on the batch: the best of `runs` runs of run_s seconds.
   Returns updates/s, or -1 when an update failed or a loss is not finite. */
static double s_time(vl_trainer_t *tr, const vl_segment_t *const *segs, int n, int runs,
                     double run_s)
{
    double best = 0;
    vl_update_stats_t st;
    for (int r = 0; r < runs; r++) {
        long k = 0;
        double t0 = s_now(), dt;
        do {
            if (vl_trainer_update(tr, segs, n, NULL, NULL, &st) != 0 || !isfinite(st.value_loss) ||
                !isfinite(st.policy_loss))
                return -1;
            k++;
        } while ((dt = s_now() - t0) < run_s);
        if (k / dt > best)
            best = k / dt;
    }
    return best;
}

int main(int argc, char **argv)
{
    const char *dump = NULL;
    if (argc >= 3 && strcmp(argv[argc - 2], "--dump") == 0) {
        dump = argv[argc - 1];
        argc -= 2;
    }
    vl_bench_plan_t plan;
    int rc =
        vl_bench_parse(argc, argv, "vl_trainer_bench", s_usage, (vl_bench_plan_t){S_RUNS, S_RUN_S},
                       (vl_bench_plan_t){S_QUICK_RUNS, S_QUICK_RUN_S}, &plan);
    if (rc != 0)
        return rc == 1 ? 0 : 2;
    vl_learner_config_t c = vl_learner_config_default();
    c.batch_segments = S_SEGMENTS;
    vl_segment_t segs[S_SEGMENTS];
    void *arrays[S_SEGMENTS] = {0};
    const vl_segment_t *ptrs[S_SEGMENTS];
    vl_trainer_t *tr = vl_trainer_new(&c, c.obs_dim);
    if (!tr || vl_bench_rollout(c.env, c.horizon, S_SEGMENTS, S_SEED, segs, arrays) != 0) {
        fprintf(stderr, "vl_trainer_bench: no memory\n");
        return 1;
    }
    for (int i = 0; i < S_SEGMENTS; i++)
        ptrs[i] = &segs[i];
    if (dump && s_dump(dump, segs, S_SEGMENTS, c.obs_dim) != 0) {
        fprintf(stderr, "vl_trainer_bench: cannot write the batch into %s\n", dump);
        return 1;
    }
    double ups = s_time(tr, ptrs, S_SEGMENTS, plan.runs, plan.run_s);
    if (ups < 0) {
        fprintf(stderr, "vl_trainer_bench: an update failed or diverged\n");
        return 1;
    }
    printf("C learner update: updates/s=%.1f samples/s=%.0f segments=%d T=%u epochs=%u "
           "minibatch=%u threads=1\n",
           ups, ups * S_SEGMENTS * c.horizon * c.epochs, S_SEGMENTS, c.horizon, c.epochs,
           c.minibatch);
    char why[256];
    float *states[S_SEGMENTS] = {0};
    vl_trainer_t *rt = NULL;
    if (vl_learner_config_set_model(&c, S_LSTM, 1, NULL, why, sizeof why) != 0 ||
        !(rt = vl_trainer_new(&c, c.obs_dim))) {
        fprintf(stderr, "vl_trainer_bench: %s: cannot build a learner\n", S_LSTM);
        return 1;
    }
    uint32_t S = vl_learner_config_state_size(&c);
    for (int i = 0; i < S_SEGMENTS; i++) {
        if (!(states[i] = calloc(S, sizeof(float)))) {
            fprintf(stderr, "vl_trainer_bench: no memory\n");
            return 1;
        }
        segs[i].state = states[i], segs[i].state_size = S;
    }
    double rups = s_time(rt, ptrs, S_SEGMENTS, plan.runs, plan.run_s);
    if (rups < 0) {
        fprintf(stderr, "vl_trainer_bench: an update of %s failed or diverged\n", S_LSTM);
        return 1;
    }
    printf("C learner update, %s: updates/s=%.1f samples/s=%.0f, %.2fx the default model's\n",
           S_LSTM, rups, rups * S_SEGMENTS * c.horizon * c.epochs, rups / ups);
    vl_trainer_destroy(&rt);
    c.epochs = 1;
    c.minibatch = S_SEGMENTS * c.horizon;
    double pass[2];
    for (int single = 0; single < 2; single++) {
        if (!(rt = vl_trainer_new(&c, c.obs_dim))) {
            fprintf(stderr, "vl_trainer_bench: %s: cannot build a learner\n", S_LSTM);
            return 1;
        }
        vl_trainer_set_single_pass(rt, single);
        pass[single] = s_time(rt, ptrs, S_SEGMENTS, plan.runs, plan.run_s);
        vl_trainer_destroy(&rt);
        if (pass[single] < 0) {
            fprintf(stderr, "vl_trainer_bench: an update of %s failed or diverged\n", S_LSTM);
            return 1;
        }
    }
    printf("C learner update, %s, 1 epoch of one %u-sample minibatch: updates/s=%.1f with the "
           "forward pass twice, %.1f single pass (%.2fx; samples/s=%.0f)\n",
           S_LSTM, c.minibatch, pass[0], pass[1], pass[1] / pass[0],
           pass[1] * S_SEGMENTS * c.horizon);
    for (int i = 0; i < S_SEGMENTS; i++)
        free(states[i]);
    vl_trainer_destroy(&tr);
    for (int i = 0; i < S_SEGMENTS; i++)
        free(arrays[i]);
    return 0;
}
