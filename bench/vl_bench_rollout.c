/*  vl_bench_rollout: stepping an environment into segments for benchmarks. */
#include "vl_bench_rollout.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/vl_rng.h"
#include "volley.pb-c.h"

/* Starts segment k: header and freshly allocated arrays. Returns 0 or -1. */
static int s_start(const vl_env_ops_t *env, uint32_t T, size_t k, vl_segment_t *s, void **arrays)
{
    *s = (vl_segment_t){.actor_id = 1,
                        .seq = k,
                        .policy_id = "bench",
                        .policy_version = 1,
                        .horizon = T,
                        .action = env->action, // before bind: it sizes the actions
                        .send_ns = 1700000000000000000ll};
    if (vl_segment_set_spec(s, &env->obs_spec) != 0 || s->obs_dim != env->obs_dim)
        return -1;
    *arrays = calloc(1, vl_segment_arrays_size(T, &env->obs_spec, env->action.dims, 0));
    if (!*arrays)
        return -1;
    vl_segment_bind(s, *arrays);
    return 0;
}

/* Records step t of segment s from what vl_envs_step wrote, with the
   running episode's return and length. */
static void s_record(vl_segment_t *s, size_t t, float reward, uint8_t term, uint8_t trunc,
                     float *ep_return, uint32_t *ep_len)
{
    s->rewards[t] = reward;
    s->dones[t] = (float)(term || trunc);
    *ep_return += reward;
    (*ep_len)++;
    if (term || trunc) {
        s->episode_returns[s->n_episodes] = *ep_return;
        s->episode_lengths[s->n_episodes++] = *ep_len;
        *ep_return = 0;
        *ep_len = 0;
    }
}

/* Returns the log-prob (a box: log-density) of every action s_draw makes:
   uniform over each dimension's choices or bounds. */
static float s_uniform_logp(const vl_action_spec_t *a)
{
    double logp = 0;
    for (uint32_t d = 0; d < a->dims; d++)
        logp -= log(vl_action_is_box(a) ? (double)a->high[d] - a->low[d] : (double)a->n[d]);
    return (float)logp;
}

/* Draws a uniformly random action of space a into action [dims]. */
static void s_draw(const vl_action_spec_t *a, vl_rng_t *rng, float *action)
{
    for (uint32_t d = 0; d < a->dims; d++)
        action[d] = vl_action_is_box(a)
                        ? a->low[d] + (float)vl_rng_uniform(rng) * (a->high[d] - a->low[d])
                        : (float)vl_rng_below(rng, a->n[d]);
}

int vl_bench_rollout(const vl_env_ops_t *env, uint32_t T, size_t n, uint64_t seed,
                     vl_segment_t *segs, void **arrays)
{
    float *obs = malloc(env->obs_dim * sizeof(float)),
          *final = malloc(env->obs_dim * sizeof(float));
    vl_envs_t *envs = obs ? vl_envs_new(env, 1, NULL, &seed, obs) : NULL;
    int rc = -1;
    memset(arrays, 0, n * sizeof *arrays);
    if (!envs || !final)
        goto done;
    vl_rng_t rng;
    vl_rng_seed(&rng, seed);
    float ep_return = 0, logp = s_uniform_logp(&env->action);
    uint32_t W = env->action.dims;
    uint32_t ep_len = 0;
    for (size_t k = 0; k < n; k++) {
        vl_segment_t *s = &segs[k];
        if (s_start(env, T, k, s, &arrays[k]) != 0)
            goto done;
        for (size_t t = 0; t < T; t++) {
            vl_obs_to_rows(&env->obs_spec, 1, obs, s->obs + t * s->obs_row_bytes);
            s_draw(&env->action, &rng, &s->actions[t * W]);
            s->logp[t] = logp;
            float reward;
            uint8_t term, trunc;
            if (vl_envs_step(envs, &s->actions[t * W], obs, &reward, &term, &trunc, final) != 0)
                goto done;
            s_record(s, t, reward, term, trunc, &ep_return, &ep_len);
        }
        vl_obs_to_rows(&env->obs_spec, 1, obs, s->obs + (size_t)T * s->obs_row_bytes);
    }
    rc = 0;
done:
    vl_envs_destroy(&envs);
    free(obs);
    free(final);
    return rc;
}

int vl_bench_encode(const vl_segment_t *seg, uint8_t **wire, size_t *wire_size, uint8_t **block,
                    int *block_len, uint32_t *raw_size)
{
    *block = NULL;
    if (vl_segment_encode(seg, wire, wire_size) != 0) {
        *wire = NULL;
        return -1;
    }
    Volley__Segment *msg = volley__segment__unpack(NULL, *wire_size, *wire);
    if (msg && (*block = malloc(msg->payload.len)) != NULL) {
        memcpy(*block, msg->payload.data, msg->payload.len);
        *block_len = (int)msg->payload.len;
        *raw_size = msg->raw_size;
    }
    if (msg)
        volley__segment__free_unpacked(msg, NULL);
    if (*block)
        return 0;
    free(*wire);
    *wire = NULL;
    return -1;
}
