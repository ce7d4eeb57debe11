/*  vl_catch_test: the Catch game's rules, its observation's fields and
    encodings, and its determinism. Scripted policies read the ball and the
    paddle off the screen, as an agent would. */
#include "vl_catch.h"
#include "vl_env.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/vl_rng.h"
#include "../tests/vl_test.h"

#define S_DIM     VL_CATCH_OBS_DIM
#define S_FALL    (VL_CATCH_ROWS - 1)        // steps from the top row to the paddle's
#define S_EPISODE (VL_CATCH_BALLS * S_FALL)  // steps in an episode
#define S_WIRE    (256 / 4 + 32 / 8 + 2 * 4) // packed bytes per observation

typedef int (*s_policy_fn)(const float *obs, vl_rng_t *rng);

/* Steps a Catch state with a choice (VL_CATCH_LEFT, _STAY or _RIGHT),
   passed as env ABI 2 passes a discrete action: one float. */
static float s_step(void *env, int action, float *obs, int *term, int *trunc)
{
    float a = (float)action;
    return vl_catch_env.step(env, &a, obs, term, trunc);
}

/* Finds the ball on the screen; returns 0 and sets *row and *col, or -1
   when there is none or more than one. */
static int s_ball(const float *obs, int *row, int *col)
{
    int found = 0;
    *row = *col = -1;
    for (int i = 0; i < VL_CATCH_ROWS * VL_CATCH_COLS; i++)
        if (obs[i] == VL_CATCH_BALL) {
            *row = i / VL_CATCH_COLS;
            *col = i % VL_CATCH_COLS;
            found++;
        }
    return found == 1 ? 0 : -1;
}

/* Returns the paddle's centre column read off the bottom row, or -1 when
   the bottom row does not hold exactly one paddle of the right width. */
static int s_paddle(const float *obs)
{
    const float *bottom = obs + (VL_CATCH_ROWS - 1) * VL_CATCH_COLS;
    int first = -1, n = 0;
    for (int c = 0; c < VL_CATCH_COLS; c++)
        if (bottom[c] == VL_CATCH_BAT) {
            first = first < 0 ? c : first;
            n++;
        }
    if (n != VL_CATCH_PADDLE || bottom[first + n - 1] != VL_CATCH_BAT)
        return -1;
    return first + VL_CATCH_PADDLE / 2;
}

/* Moves the paddle to the ball's column shifted by off, towards the middle
   of the screen so that the walls never clamp the target. */
static int s_aim(const float *obs, int off)
{
    int row, col, p = s_paddle(obs);
    if (s_ball(obs, &row, &col) != 0)
        return VL_CATCH_STAY;
    int target = col + (col < VL_CATCH_COLS / 2 ? off : -off);
    return target == p ? VL_CATCH_STAY : target < p ? VL_CATCH_LEFT : VL_CATCH_RIGHT;
}

/* Moves the paddle under the ball. */
static int s_follow(const float *obs, vl_rng_t *rng)
{
    (void)rng;
    return s_aim(obs, 0);
}

/* Catches with the paddle's edge. */
static int s_edge(const float *obs, vl_rng_t *rng)
{
    (void)rng;
    return s_aim(obs, VL_CATCH_PADDLE / 2);
}

/* Misses by one column. */
static int s_just_miss(const float *obs, vl_rng_t *rng)
{
    (void)rng;
    return s_aim(obs, VL_CATCH_PADDLE / 2 + 1);
}

/* Runs to the wall farther from the ball: 15 steps always get there, and
   no ball can land on a paddle at the far wall. */
static int s_run_away(const float *obs, vl_rng_t *rng)
{
    (void)rng;
    int row, col;
    if (s_ball(obs, &row, &col) != 0)
        return VL_CATCH_STAY;
    return col <= VL_CATCH_COLS / 2 ? VL_CATCH_RIGHT : VL_CATCH_LEFT;
}

static int s_random(const float *obs, vl_rng_t *rng)
{
    (void)obs;
    return (int)vl_rng_below(rng, 3);
}

/* Plays one episode from a reset under policy, at most S_EPISODE + 10
   steps; returns the return and sets *steps to the steps taken. Returns
   NAN when the episode did not end by termination alone. */
static float s_episode(void *env, s_policy_fn policy, vl_rng_t *rng, int *steps)
{
    float obs[S_DIM], ret = 0;
    int term = 0, trunc = 0;
    vl_catch_env.reset(env, obs);
    for (*steps = 0; *steps < S_EPISODE + 10 && !term && !trunc; ++*steps)
        ret += s_step(env, policy(obs, rng), obs, &term, &trunc);
    return term && !trunc ? ret : NAN;
}

/* Returns 1 if an observation's values fit its fields: screen 0..3 with
   walls in place, flags 0 or 1, both floats in [0, 1). */
static int s_obs_valid(const float *obs)
{
    for (int i = 0; i < VL_CATCH_ROWS * VL_CATCH_COLS; i++) {
        float v = obs[i];
        int c = i % VL_CATCH_COLS, wall = c == 0 || c == VL_CATCH_COLS - 1;
        if (v != (int)v || v < 0 || v > 3 || (wall != (v == VL_CATCH_WALL)))
            return 0;
    }
    for (int i = VL_CATCH_OFF_FLAGS; i < VL_CATCH_OFF_F32; i++)
        if (obs[i] != 0 && obs[i] != 1)
            return 0;
    for (int i = VL_CATCH_OFF_F32; i < S_DIM; i++)
        if (!(obs[i] >= 0 && obs[i] < 1))
            return 0;
    return s_paddle(obs) >= 0 && obs[VL_CATCH_OFF_F32 + 1] == (float)s_paddle(obs) / VL_CATCH_COLS;
}

/* Returns 1 if the flags agree with the screen: a thermometer of balls
   landed, then, while a ball falls, its side of the paddle and its column. */
static int s_flags_agree(const float *obs, int landed)
{
    const float *flags = obs + VL_CATCH_OFF_FLAGS;
    float want[VL_CATCH_FLAGS] = {0};
    int row, col, p = s_paddle(obs);
    for (int i = 0; i < landed; i++)
        want[VL_CATCH_FLAG_LANDED + i] = 1;
    if (s_ball(obs, &row, &col) == 0) {
        want[VL_CATCH_FLAG_SIDE + (col < p ? 0 : col == p ? 1 : 2)] = 1;
        want[VL_CATCH_FLAG_COLUMN + col] = 1;
    }
    return memcmp(flags, want, sizeof(want)) == 0;
}

static void test_ops_consistent(void)
{
    const vl_env_ops_t *ops = vl_env_find("catch");
    vl_limits_t lim = vl_limits_default();
    uint32_t dim = 0, wire = 0, sum = 0;
    VL_CHECK(ops && ops->table == &vl_catch_env && !ops->vectorized && !ops->path);
    VL_CHECK(strcmp(ops->name, "catch") == 0 && ops->summary && strstr(ops->summary, ">= 9"));
    VL_CHECK(ops->action.kind == VL_ENV_DISCRETE && ops->action.dims == 1 &&
             ops->action.n[0] == 3 && ops->has_solved_return && ops->solved_return == 9.0f);
    VL_CHECK(ops->low[2] == 0.0f && ops->high[2] == 1.0f); // the positions' declared range
    VL_CHECK(ops->obs_spec.n_fields == 3);
    for (uint32_t i = 0; i < ops->obs_spec.n_fields; i++) {
        const vl_obs_field_t *f = &ops->obs_spec.fields[i];
        uint32_t n = 1;
        for (uint32_t d = 0; d < f->ndim; d++)
            n *= f->shape[d];
        sum += n;
    }
    VL_CHECK(sum == ops->obs_dim && ops->obs_dim == 290);
    VL_CHECK(vl_obs_spec_check(&ops->obs_spec, &lim, &dim, &wire) == VL_OK);
    VL_CHECK(dim == ops->obs_dim && wire == S_WIRE);
    VL_CHECK(ops->obs_spec.fields[0].encoding == VL_OBS_U2);
    VL_CHECK(ops->obs_spec.fields[1].encoding == VL_OBS_U1);
    VL_CHECK(ops->obs_spec.fields[2].encoding == VL_OBS_F32);
}

/* Random play for a few episodes: every observation fits its fields and
   its flags agree with its screen. */
static void test_values_in_range(void)
{
    void *env = vl_catch_env.create(NULL);
    vl_rng_t rng;
    float obs[S_DIM];
    int term = 0, trunc = 0, ok = 1, steps = 0;
    VL_CHECK(env);
    vl_rng_seed(&rng, 1);
    for (int ep = 0; ep < 5 && ok; ep++) {
        int landed = 0;
        vl_catch_env.reset(env, obs);
        ok = s_obs_valid(obs) && s_flags_agree(obs, landed);
        for (term = 0; !term && ok; steps++) {
            landed += s_step(env, s_random(obs, &rng), obs, &term, &trunc) != 0;
            ok = s_obs_valid(obs) && s_flags_agree(obs, landed);
        }
    }
    vl_catch_env.destroy(env);
    VL_CHECK(ok);
    VL_CHECK(steps == 5 * S_EPISODE);
}

/* Returns 1 if the ball is at (row, col) on the screen, in the one-hot and
   in the first float. */
static int s_ball_at(const float *obs, int row, int col)
{
    int r, c;
    if (s_ball(obs, &r, &c) != 0 || r != row || c != col)
        return 0;
    for (int i = 0; i < VL_CATCH_COLS; i++)
        if (obs[VL_CATCH_OFF_FLAGS + VL_CATCH_FLAG_COLUMN + i] != (i == col))
            return 0;
    return obs[VL_CATCH_OFF_F32] == (float)row / VL_CATCH_ROWS;
}

static void test_ball_falls_one_row_per_step(void)
{
    void *env = vl_catch_env.create(NULL);
    float obs[S_DIM], reward = 0;
    int term = 0, trunc = 0, row, col, ok;
    VL_CHECK(env);
    vl_catch_env.reset(env, obs);
    ok = s_ball(obs, &row, &col) == 0 && row == 0 && col >= 1 && col <= VL_CATCH_COLS - 2;
    for (int t = 1; t < S_FALL && ok; t++) {
        reward += s_step(env, VL_CATCH_STAY, obs, &term, &trunc);
        ok = s_ball_at(obs, t, col) && !term && !trunc;
    }
    vl_catch_env.destroy(env);
    VL_CHECK(ok);
    VL_CHECK(reward == 0);
}

/* Plays the first ball under policy; returns the reward of its landing
   step, or 0 when a step before it paid or the count of balls is wrong. */
static float s_first_ball(s_policy_fn policy, uint64_t seed)
{
    void *env = vl_catch_env.create(NULL);
    float obs[S_DIM], early = 0, landing;
    int term, trunc;
    if (!env)
        return 0;
    vl_catch_env.seed(env, seed);
    vl_catch_env.reset(env, obs);
    for (int t = 1; t < S_FALL; t++)
        early += fabsf(s_step(env, policy(obs, NULL), obs, &term, &trunc));
    landing = s_step(env, policy(obs, NULL), obs, &term, &trunc);
    int counted = obs[VL_CATCH_OFF_FLAGS] == 1 && obs[VL_CATCH_OFF_FLAGS + 1] == 0;
    vl_catch_env.destroy(env);
    return early == 0 && counted && !term ? landing : 0;
}

/* The paddle's three columns catch, the next one out misses. */
static void test_catch_and_miss(void)
{
    void *env = vl_catch_env.create(NULL);
    int steps, edge = 1, miss = 1;
    VL_CHECK(env);
    for (uint64_t seed = 0; seed < 20; seed++) {
        VL_CHECK(s_first_ball(s_follow, seed) == 1.0f);
        VL_CHECK(s_first_ball(s_run_away, seed) == -1.0f);
    }
    for (uint64_t seed = 0; seed < 20; seed++) {
        vl_catch_env.seed(env, seed);
        edge &= s_episode(env, s_edge, NULL, &steps) == 10.0f;
        miss &= s_episode(env, s_just_miss, NULL, &steps) == -10.0f;
    }
    vl_catch_env.destroy(env);
    VL_CHECK(edge);
    VL_CHECK(miss);
}

/* Random play: exactly ten balls land, on steps 15, 30, ..., 150; the
   tenth ends the episode with terminated set, the thermometer full and no
   ball left. Steps after the end pay 0 and end again. */
static void test_episode_is_ten_balls(void)
{
    void *env = vl_catch_env.create(NULL);
    vl_rng_t rng;
    float obs[S_DIM], r;
    int term = 0, trunc = 0, t, landed = 0, ok = 1, row, col;
    VL_CHECK(env);
    vl_rng_seed(&rng, 2);
    vl_catch_env.reset(env, obs);
    for (t = 1; !term && t <= S_EPISODE + 10 && ok; t++) {
        r = s_step(env, s_random(obs, &rng), obs, &term, &trunc);
        landed += r != 0;
        ok = (r != 0) == (t % S_FALL == 0) && !trunc;
    }
    int full = 1;
    for (int i = 0; i < VL_CATCH_FLAGS; i++)
        full &= obs[VL_CATCH_OFF_FLAGS + i] == (i < VL_CATCH_BALLS);
    int no_ball = s_ball(obs, &row, &col) != 0;
    r = s_step(env, VL_CATCH_LEFT, obs, &term, &trunc);
    vl_catch_env.destroy(env);
    VL_CHECK(ok);
    VL_CHECK(t - 1 == S_EPISODE && landed == VL_CATCH_BALLS);
    VL_CHECK(full && no_ball);
    VL_CHECK(r == 0 && term == 1 && trunc == 0);
}

/* Stepping on past the end reaches the safety limit of 1000 steps. */
static void test_truncate_at_safety_limit(void)
{
    void *env = vl_catch_env.create(NULL);
    float obs[S_DIM];
    int term = 0, trunc = 0, t;
    VL_CHECK(env);
    vl_catch_env.reset(env, obs);
    for (t = 1; t <= 2000 && !trunc; t++)
        s_step(env, VL_CATCH_STAY, obs, &term, &trunc);
    vl_catch_env.destroy(env);
    VL_CHECK(t - 1 == 1000 && term == 1);
}

/* Following the ball scores 10 in every episode, running away -10. */
static void test_perfect_policy_scores_ten(void)
{
    void *env = vl_catch_env.create(NULL);
    int steps, good = 1, bad = 1;
    VL_CHECK(env);
    for (uint64_t seed = 0; seed < 50; seed++) {
        vl_catch_env.seed(env, seed);
        good &= s_episode(env, s_follow, NULL, &steps) == 10.0f && steps == S_EPISODE;
        bad &= s_episode(env, s_run_away, NULL, &steps) == -10.0f && steps == S_EPISODE;
    }
    vl_catch_env.destroy(env);
    VL_CHECK(good);
    VL_CHECK(bad);
}

/* Records an episode's observations under random actions drawn from seed
   99, from an env seeded with seed (or left unseeded when seed < 0). */
static int s_record(int64_t seed, float (*out)[S_DIM])
{
    void *env = vl_catch_env.create(NULL);
    vl_rng_t rng;
    int term = 0, trunc = 0;
    if (!env)
        return -1;
    if (seed >= 0)
        vl_catch_env.seed(env, (uint64_t)seed);
    vl_rng_seed(&rng, 99);
    vl_catch_env.reset(env, out[0]);
    for (int t = 1; t <= S_EPISODE; t++)
        s_step(env, s_random(out[t - 1], &rng), out[t], &term, &trunc);
    vl_catch_env.destroy(env);
    return term ? 0 : -1;
}

static void test_deterministic_per_seed(void)
{
    static float a[S_EPISODE + 1][S_DIM], b[S_EPISODE + 1][S_DIM], c[S_EPISODE + 1][S_DIM];
    static float z[S_EPISODE + 1][S_DIM];
    VL_CHECK(s_record(7, a) == 0 && s_record(7, b) == 0 && s_record(8, c) == 0);
    VL_CHECK(memcmp(a, b, sizeof(a)) == 0);
    VL_CHECK(memcmp(a, c, sizeof(a)) != 0);
    VL_CHECK(s_record(-1, b) == 0 && s_record(0, z) == 0);
    VL_CHECK(memcmp(b, z, sizeof(b)) == 0);
}

/* Ten episodes' columns cover every column inside the walls, and only those. */
static void test_ball_columns_cover_the_screen(void)
{
    void *env = vl_catch_env.create(NULL);
    int seen[VL_CATCH_COLS] = {0}, term = 0, trunc = 0, row, col, ok = 1;
    float obs[S_DIM];
    VL_CHECK(env);
    for (int ep = 0; ep < 10; ep++) {
        vl_catch_env.reset(env, obs);
        for (term = 0; !term && ok;) {
            ok = s_ball(obs, &row, &col) == 0;
            seen[ok ? col : 0]++;
            s_step(env, VL_CATCH_STAY, obs, &term, &trunc);
        }
    }
    vl_catch_env.destroy(env);
    VL_CHECK(ok);
    VL_CHECK(seen[0] == 0 && seen[VL_CATCH_COLS - 1] == 0);
    for (int c = 1; c < VL_CATCH_COLS - 1; c++)
        VL_CHECK(seen[c] > 0);
}

/* Every observation of a random episode packs to 76 bytes and unpacks to
   exactly the same floats: the values fit their encodings. */
static void test_pack_unpack_roundtrip(void)
{
    static float obs[S_EPISODE + 1][S_DIM], back[S_EPISODE + 1][S_DIM];
    static uint8_t wire[(S_EPISODE + 1) * S_WIRE + 1];
    const vl_obs_spec_t *spec = &vl_env_find("catch")->obs_spec;
    VL_CHECK(s_record(3, obs) == 0);
    memset(back, 0xff, sizeof(back));
    wire[sizeof(wire) - 1] = 0xa5; // a canary: pack writes no more than it says
    vl_obs_pack(spec, S_EPISODE + 1, &obs[0][0], wire);
    vl_obs_unpack(spec, S_EPISODE + 1, wire, &back[0][0]);
    VL_CHECK(wire[sizeof(wire) - 1] == 0xa5);
    VL_CHECK(memcmp(obs, back, sizeof(obs)) == 0);
}

/* catch-pixels declares one u2 image field [1][16][16] (ndim 3, channels
   first: what makes a CNN volley's default model for it), nothing else,
   and catch's actions and solved return. */
static void test_pixels_spec(void)
{
    const vl_env_ops_t *ops = vl_env_find("catch-pixels");
    vl_limits_t lim = vl_limits_default();
    uint32_t dim = 0, wire = 0;
    VL_CHECK(ops && ops->table == &vl_catch_pixels_env && !ops->vectorized && !ops->path);
    VL_CHECK(strcmp(ops->name, "catch-pixels") == 0 && strstr(ops->summary, ">= 9"));
    VL_CHECK(ops->action.kind == VL_ENV_DISCRETE && ops->action.dims == 1 &&
             ops->action.n[0] == 3 && ops->has_solved_return && ops->solved_return == 9.0f);
    VL_CHECK(ops->obs_spec.n_fields == 1);
    const vl_obs_field_t *f = &ops->obs_spec.fields[0];
    VL_CHECK(f->encoding == VL_OBS_U2 && f->ndim == 3);
    VL_CHECK(f->shape[0] == 1 && f->shape[1] == VL_CATCH_ROWS && f->shape[2] == VL_CATCH_COLS);
    VL_CHECK(ops->obs_dim == VL_CATCH_PIXELS_DIM && VL_CATCH_PIXELS_DIM == 256);
    VL_CHECK(vl_obs_spec_check(&ops->obs_spec, &lim, &dim, &wire) == VL_OK);
    VL_CHECK(dim == 256 && wire == 256 / 4);
}

/* The same seed and the same actions give catch-pixels exactly catch's
   screens, rewards and ends, step by step, for several episodes; and
   catch-pixels writes nothing past its screen. */
static void test_pixels_is_catchs_screen(void)
{
    void *a = vl_catch_env.create(NULL), *b = vl_catch_pixels_env.create(NULL);
    float oa[S_DIM], ob[S_DIM];
    vl_rng_t rng;
    int ta = 0, tra = 0, tb = 0, trb = 0, same = 1, steps = 0;
    VL_CHECK(a && b);
    vl_catch_env.seed(a, 5);
    vl_catch_pixels_env.seed(b, 5);
    vl_rng_seed(&rng, 6);
    for (int ep = 0; ep < 3 && same; ep++) {
        memset(ob, 0x7f, sizeof(ob)); // a canary past the screen
        vl_catch_env.reset(a, oa);
        vl_catch_pixels_env.reset(b, ob);
        same = memcmp(oa, ob, VL_CATCH_PIXELS_DIM * sizeof(float)) == 0;
        for (ta = tb = 0; !ta && same; steps++) {
            float act = (float)vl_rng_below(&rng, 3);
            float ra = vl_catch_env.step(a, &act, oa, &ta, &tra);
            float rb = vl_catch_pixels_env.step(b, &act, ob, &tb, &trb);
            same = ra == rb && ta == tb && tra == trb &&
                   memcmp(oa, ob, VL_CATCH_PIXELS_DIM * sizeof(float)) == 0;
        }
        for (int i = VL_CATCH_PIXELS_DIM; i < S_DIM && same; i++)
            same = memcmp(&ob[i], &(uint32_t){0x7f7f7f7f}, sizeof(float)) == 0;
    }
    vl_catch_env.destroy(a);
    vl_catch_pixels_env.destroy(b);
    VL_CHECK(same);
    VL_CHECK(steps == 3 * S_EPISODE);
}

/* The env list of every command's --help names catch-pixels on a line of
   its own, with its summary. */
static void test_pixels_listed(void)
{
    char *text = NULL, *line;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    VL_CHECK(out);
    vl_env_print_help(out, NULL);
    fclose(out);
    line = strstr(text, " catch-pixels ");
    VL_CHECK(line && strstr(line, "Catch from pixels"));
    VL_CHECK(line && strchr(line, '\n') > strstr(line, ">= 9"));
    free(text);
}

static void test_destroy_null(void)
{
    vl_catch_env.destroy(NULL);
    VL_CHECK(1);
}

int main(void)
{
    VL_RUN(test_ops_consistent);
    VL_RUN(test_values_in_range);
    VL_RUN(test_ball_falls_one_row_per_step);
    VL_RUN(test_catch_and_miss);
    VL_RUN(test_episode_is_ten_balls);
    VL_RUN(test_truncate_at_safety_limit);
    VL_RUN(test_perfect_policy_scores_ten);
    VL_RUN(test_deterministic_per_seed);
    VL_RUN(test_ball_columns_cover_the_screen);
    VL_RUN(test_pack_unpack_roundtrip);
    VL_RUN(test_pixels_spec);
    VL_RUN(test_pixels_is_catchs_screen);
    VL_RUN(test_pixels_listed);
    VL_RUN(test_destroy_null);
    return VL_DONE();
}
