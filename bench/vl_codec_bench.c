/*  vl_codec_bench: the segment codec beside its references, measured in the
    same run on the same bytes (lz4's tests/fullbench.c is the model).

    Each case is a run of S_SEGS consecutive segments cut from one
    environment stepped with uniformly random actions. Every operation is
    timed over those segments, best of a few runs, and its last output is
    checked (by checksum against the source arrays, or byte for byte against
    the reference bytes) before its figure is printed; a mismatch aborts.

    References, on the same segments:
      lz4c    LZ4_compress_default of the segment's packed payload
      lz4d    LZ4_decompress_safe of the very block the wire carries
      memcpy  a copy of the unpacked arrays (obs, actions, rewards, dones,
              logp): what decode must write at the least
    and, to show where the time goes: vl_obs_pack, vl_obs_unpack and
    protobuf-c's unpack (+ free) of the wire message.

    All MB/s are segments/s times the segment's f32 bytes, (T + 1) * D * 4 +
    (12 + 4 * dims) * T (dims values per action), so any two speeds compare
    the time each takes for one segment. */
#include <lz4.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/vl_bench.h"
#include "bench/vl_bench_rollout.h"
#include "common/vl_rng.h"
#include "envs/vl_env.h"
#include "messages/vl_codec.h"
#include "volley.pb-c.h"

#define S_HORIZON     64  // steps per segment, as the actors cut them
#define S_SEGS        8   // consecutive segments per case: sizes are their mean
#define S_RUNS        5   // runs per operation; the best counts
#define S_RUN_S       0.1 // seconds per run: long enough to hide the clock
#define S_QUICK_RUNS  2
#define S_QUICK_RUN_S 0.005
#define S_WIRE_TARGET 30  // pixel segments: wire bytes <= f32 bytes / 30
#define S_LZ4D_TARGET 2.0 // decode time <= 2 x bare LZ4_decompress_safe's

/* ---- the 2-bit pixel game -------------------------------------------------

   A synthetic stand-in for a 2-bit pixel game's observations: a U2 [72, 80] screen, a
   U1 [2048] flag vector and F32 [3]. The screen is a background drawn once
   per episode (sky 0 with a few level-1 stars, five two-row level-1
   platforms, a brick-textured ground of levels 1 and 2, a level-2 HUD bar)
   with sprites drawn over it each step: an 8x8 player (outlined, levels 2
   and 3) moved 2 pixels a step by the action, and four 6x6 diamond enemies
   (level 3) bouncing at 1 pixel a step. So most of each frame repeats the
   previous one, as in a real game. The flags change slowly: a one-hot of
   the player's column (bits 0..79) and row (80..151), a thermometer of
   time (152..159), and an "explored" bitmap (256..2047) seeded 5% full
   that gains a random bit on one step in four. The floats are the player's
   x / 80, y / 72 and the episode's time / 500. An episode ends when an
   enemy touches the player (reward -1) or after 500 steps. */

#define S_G_H       72
#define S_G_W       80
#define S_G_FLAGS   2048
#define S_G_DIM     (S_G_H * S_G_W + S_G_FLAGS + 3)
#define S_G_ENEMIES 4
#define S_G_PLAYER  8   // player sprite side
#define S_G_ENEMY   6   // enemy sprite side
#define S_G_GROUND  64  // first ground row
#define S_G_STEPS   500 // time limit
#define S_G_EXPLORE 256 // first bit of the explored bitmap

typedef struct {
    int x, y, dx, dy; // top-left corner; velocity
} s_sprite_t;

typedef struct {
    vl_rng_t rng;
    uint8_t bg[S_G_H][S_G_W];
    uint8_t flags[S_G_FLAGS];
    s_sprite_t player;
    s_sprite_t enemies[S_G_ENEMIES];
    uint32_t steps;
} s_game_t;

static void *s_game_create(void)
{
    s_game_t *self = calloc(1, sizeof *self);
    if (self)
        vl_rng_seed(&self->rng, 0);
    return self;
}

static void s_game_destroy(void *state)
{
    free(state);
}

static void s_game_seed(void *state, uint64_t seed)
{
    vl_rng_seed(&((s_game_t *)state)->rng, seed);
}

/* Returns an integer uniform in [lo, hi]. */
static int s_between(vl_rng_t *rng, int lo, int hi)
{
    return lo + (int)vl_rng_below(rng, (uint32_t)(hi - lo + 1));
}

/* Draws this episode's background: HUD, stars, platforms, brick ground. */
static void s_game_background(s_game_t *self)
{
    memset(self->bg, 0, sizeof self->bg);
    memset(self->bg[0], 2, 2 * S_G_W);
    for (int i = 0; i < 20; i++)
        self->bg[s_between(&self->rng, 3, S_G_GROUND - 1)][s_between(&self->rng, 0, S_G_W - 1)] = 1;
    for (int i = 0; i < 5; i++) {
        int r = s_between(&self->rng, 12, S_G_GROUND - 4), len = s_between(&self->rng, 10, 30);
        int c = s_between(&self->rng, 0, S_G_W - len);
        memset(&self->bg[r][c], 1, (size_t)len);
        memset(&self->bg[r + 1][c], 1, (size_t)len);
    }
    for (int r = S_G_GROUND; r < S_G_H; r++)
        for (int c = 0; c < S_G_W; c++)
            self->bg[r][c] = (r % 4 == 0 || (c + 4 * (r / 4 % 2)) % 8 == 0) ? 2 : 1;
}

/* Draws the screen, flags and floats of the current state into obs. */
static void s_game_observe(const s_game_t *self, float *obs)
{
    for (int r = 0; r < S_G_H; r++)
        for (int c = 0; c < S_G_W; c++)
            obs[r * S_G_W + c] = self->bg[r][c];
    for (int e = 0; e < S_G_ENEMIES; e++)
        for (int i = 0; i < S_G_ENEMY; i++)
            for (int j = 0; j < S_G_ENEMY; j++)
                if (abs(2 * i - 5) + abs(2 * j - 5) <= 6)
                    obs[(self->enemies[e].y + i) * S_G_W + self->enemies[e].x + j] = 3;
    for (int i = 0; i < S_G_PLAYER; i++)
        for (int j = 0; j < S_G_PLAYER; j++) {
            int edge = i == 0 || j == 0 || i == S_G_PLAYER - 1 || j == S_G_PLAYER - 1;
            obs[(self->player.y + i) * S_G_W + self->player.x + j] = edge ? 3 : 2;
        }
    float *flags = obs + S_G_H * S_G_W;
    for (int i = 0; i < S_G_FLAGS; i++)
        flags[i] = self->flags[i];
    float *f = flags + S_G_FLAGS;
    f[0] = (float)self->player.x / S_G_W;
    f[1] = (float)self->player.y / S_G_H;
    f[2] = (float)self->steps / S_G_STEPS;
}

/* Sets the flags that follow the state: position one-hots, time. */
static void s_game_state_flags(s_game_t *self)
{
    memset(self->flags, 0, S_G_EXPLORE);
    self->flags[self->player.x] = 1;
    self->flags[S_G_W + self->player.y] = 1;
    for (uint32_t i = 0; i < 8 && i < self->steps / 64; i++)
        self->flags[S_G_W + S_G_H + i] = 1;
}

static void s_game_reset(void *state, float *obs)
{
    s_game_t *self = state;
    s_game_background(self);
    self->steps = 0;
    self->player = (s_sprite_t){.x = S_G_W / 2, .y = S_G_GROUND - S_G_PLAYER};
    for (int e = 0; e < S_G_ENEMIES; e++)
        self->enemies[e] = (s_sprite_t){.x = s_between(&self->rng, 0, S_G_W - S_G_ENEMY),
                                        .y = s_between(&self->rng, 2, 30),
                                        .dx = vl_rng_below(&self->rng, 2) ? 1 : -1,
                                        .dy = vl_rng_below(&self->rng, 2) ? 1 : -1};
    memset(self->flags, 0, sizeof self->flags);
    for (int i = S_G_EXPLORE; i < S_G_FLAGS; i++)
        self->flags[i] = vl_rng_below(&self->rng, 20) == 0;
    s_game_state_flags(self);
    s_game_observe(self, obs);
}

/* Returns v clamped to [lo, hi]. */
static int s_clamp(int v, int lo, int hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* Moves one enemy a pixel, bouncing off the HUD, the ground and the sides. */
static void s_enemy_move(s_sprite_t *e)
{
    if (e->x + e->dx < 0 || e->x + e->dx > S_G_W - S_G_ENEMY)
        e->dx = -e->dx;
    if (e->y + e->dy < 2 || e->y + e->dy > S_G_GROUND - S_G_ENEMY)
        e->dy = -e->dy;
    e->x += e->dx;
    e->y += e->dy;
}

/* Actions (one discrete choice): 0 stay, 1 left, 2 right, 3 up, 4 down. */
static float s_game_step(void *state, const float *actions, float *obs, int *terminated,
                         int *truncated)
{
    s_game_t *self = state;
    s_sprite_t *p = &self->player;
    int action = (int)actions[0];
    p->x = s_clamp(p->x + (action == 1 ? -2 : action == 2 ? 2 : 0), 0, S_G_W - S_G_PLAYER);
    p->y = s_clamp(p->y + (action == 3 ? -2 : action == 4 ? 2 : 0), 2, S_G_GROUND - S_G_PLAYER);
    int hit = 0;
    for (int e = 0; e < S_G_ENEMIES; e++) {
        s_sprite_t *en = &self->enemies[e];
        s_enemy_move(en);
        hit |= abs(2 * (en->x - p->x) + S_G_ENEMY - S_G_PLAYER) < S_G_ENEMY + S_G_PLAYER &&
               abs(2 * (en->y - p->y) + S_G_ENEMY - S_G_PLAYER) < S_G_ENEMY + S_G_PLAYER;
    }
    self->steps++;
    if (vl_rng_below(&self->rng, 4) == 0)
        self->flags[s_between(&self->rng, S_G_EXPLORE, S_G_FLAGS - 1)] = 1;
    s_game_state_flags(self);
    *terminated = hit;
    *truncated = self->steps >= S_G_STEPS;
    s_game_observe(self, obs);
    return hit ? -1.0f : 0.0f;
}

static void *s_game_new(const char *arg)
{
    (void)arg;
    return s_game_create();
}

static const vl_env_t s_pixel_table = {
    .abi_version = VL_ENV_ABI_VERSION,
    .name = "pixel",
    .n_fields = 3,
    .fields = {{.encoding = VL_ENV_U2, .ndim = 2, .shape = {S_G_H, S_G_W}},
               {.encoding = VL_ENV_U1, .ndim = 1, .shape = {S_G_FLAGS}},
               {.encoding = VL_ENV_F32, .ndim = 1, .shape = {3}}},
    .action = {.kind = VL_ENV_DISCRETE, .dims = 1, .n = {5}},
    .create = s_game_new,
    .destroy = s_game_destroy,
    .seed = s_game_seed,
    .reset = s_game_reset,
    .step = s_game_step,
};

static vl_env_ops_t s_pixel_ops; // checked from the table at start

/* ---- cases and their data ------------------------------------------------ */

typedef struct {
    const char *name;
    const char *env;         // a built-in environment, found by name
    const vl_env_ops_t *ops; // or this one, local to the bench
    int pixels;              // the wire-size target applies
} s_case_t;

static const s_case_t s_cases[] = {
    {.name = "cartpole", .env = "cartpole"},
    {.name = "catch", .env = "catch", .pixels = 1},
    {.name = "pixel", .ops = &s_pixel_ops, .pixels = 1},
};

/* One case's segments, their encodings and every buffer the operations use. */
typedef struct {
    vl_segment_t src[S_SEGS]; // arrays in src_arrays
    void *src_arrays[S_SEGS]; // owned
    uint64_t src_sum[S_SEGS]; // checksum of the held bytes of src's arrays
    uint64_t obs_sum[S_SEGS]; // checksum of its observation rows alone
    uint8_t *wire[S_SEGS];    // vl_segment_encode's output, owned
    size_t wire_size[S_SEGS];
    uint8_t *payload[S_SEGS]; // the packed payload the wire compresses, owned
    uint8_t *block[S_SEGS];   // the LZ4 block the wire carries, owned
    int block_len[S_SEGS];
    uint32_t raw_size; // payload bytes, the same for every segment
    size_t f32_bytes;  // (T + 1) * D * 4 + (12 + 4 * dims) * T: the segment as plain floats
    size_t held_bytes; // obs_bytes + (12 + 4 * dims) * T: the segment as a learner holds it
    size_t obs_bytes;  // (T + 1) * row bytes: its observation rows
    void *arrays;      // decode's storage, arrays_cap bytes
    size_t arrays_cap;
    uint8_t *scratch; // LZ4's output, room for a block or a payload
    // left by each operation's last call, for its check
    uint8_t *enc_out;
    size_t enc_size;
    int lz4_len;
    vl_reason_t reason;
    vl_segment_t decoded;
    int unpacked;
} s_data_t;

/* Prints why and exits: a figure over wrong output means nothing. */
static void s_die(const char *name, const char *op, size_t i, const char *why)
{
    fprintf(stderr, "vl_codec_bench: %s: %s of segment %zu: %s\n", name, op, i, why);
    exit(1);
}

/* Fills the case's source segments by stepping env with random actions. */
static int s_fill(s_data_t *d, const vl_env_ops_t *env, uint64_t seed)
{
    return vl_bench_rollout(env, S_HORIZON, S_SEGS, seed, d->src, d->src_arrays);
}

/* Encodes d's segments and extracts from each wire message its LZ4 block
   and the payload it decompresses to. Returns 0, or -1 on failure. */
static int s_encode_all(s_data_t *d)
{
    for (size_t k = 0; k < S_SEGS; k++) {
        if (vl_bench_encode(&d->src[k], &d->wire[k], &d->wire_size[k], &d->block[k],
                            &d->block_len[k], &d->raw_size) != 0)
            return -1;
        d->payload[k] = malloc(d->raw_size);
        if (!d->payload[k] ||
            LZ4_decompress_safe((const char *)d->block[k], (char *)d->payload[k], d->block_len[k],
                                (int)d->raw_size) != (int)d->raw_size)
            return -1;
    }
    return 0;
}

/* Builds a case's data; returns 0, or -1 (and prints why). */
static int s_data_init(s_data_t *d, const s_case_t *c, const vl_env_ops_t *env)
{
    memset(d, 0, sizeof *d);
    if (s_fill(d, env, 1) != 0 || s_encode_all(d) != 0) {
        fprintf(stderr, "vl_codec_bench: %s: could not build its segments\n", c->name);
        return -1;
    }
    size_t T = S_HORIZON, D = env->obs_dim, steps = (12 + 4 * (size_t)env->action.dims) * T;
    d->obs_bytes = (T + 1) * vl_obs_row_bytes(&env->obs_spec);
    d->f32_bytes = (T + 1) * D * 4 + steps;
    d->held_bytes = d->obs_bytes + steps;
    for (size_t k = 0; k < S_SEGS; k++) {
        d->src_sum[k] = vl_bench_checksum(d->src_arrays[k], d->held_bytes);
        d->obs_sum[k] = vl_bench_checksum(d->src_arrays[k], d->obs_bytes);
    }
    d->arrays_cap = vl_segment_arrays_size(S_HORIZON, &env->obs_spec, env->action.dims, 0);
    d->arrays = malloc(d->arrays_cap);
    size_t bound = (size_t)LZ4_compressBound((int)d->raw_size);
    d->scratch = malloc(bound > d->raw_size ? bound : d->raw_size);
    if (!d->arrays || !d->scratch) {
        fprintf(stderr, "vl_codec_bench: %s: out of memory\n", c->name);
        return -1;
    }
    return 0;
}

static void s_data_free(s_data_t *d)
{
    for (size_t k = 0; k < S_SEGS; k++) {
        free(d->src_arrays[k]);
        free(d->wire[k]);
        free(d->payload[k]);
        free(d->block[k]);
    }
    free(d->arrays);
    free(d->scratch);
    free(d->enc_out);
}

/* ---- the operations: run one on segment i, then check its last output ---- */

static void s_run_encode(s_data_t *d, size_t i)
{
    free(d->enc_out);
    d->enc_out = NULL;
    if (vl_segment_encode(&d->src[i], &d->enc_out, &d->enc_size) != 0)
        d->enc_out = NULL;
}

static const char *s_check_encode(s_data_t *d, size_t i)
{
    if (!d->enc_out || d->enc_size != d->wire_size[i] ||
        memcmp(d->enc_out, d->wire[i], d->enc_size) != 0)
        return "encoding differs from the first one";
    return NULL;
}

static void s_run_decode(s_data_t *d, size_t i)
{
    vl_limits_t lim = vl_limits_default();
    d->reason =
        vl_segment_decode(d->wire[i], d->wire_size[i], &lim, &d->decoded, d->arrays, d->arrays_cap);
}

static const char *s_check_decode(s_data_t *d, size_t i)
{
    const vl_segment_t *s = &d->src[i], *o = &d->decoded;
    if (d->reason != VL_OK)
        return vl_reason_str(d->reason);
    if ((void *)o->obs != d->arrays || vl_bench_checksum(o->obs, d->held_bytes) != d->src_sum[i])
        return "checksum of the decoded arrays differs from the source's";
    if (o->horizon != s->horizon || o->n_episodes != s->n_episodes ||
        memcmp(o->episode_returns, s->episode_returns, 4 * s->n_episodes) != 0 ||
        memcmp(o->episode_lengths, s->episode_lengths, 4 * s->n_episodes) != 0)
        return "header or episodes differ from the source's";
    return NULL;
}

static void s_run_lz4c(s_data_t *d, size_t i)
{
    d->lz4_len = LZ4_compress_default((const char *)d->payload[i], (char *)d->scratch,
                                      (int)d->raw_size, LZ4_compressBound((int)d->raw_size));
}

static const char *s_check_lz4c(s_data_t *d, size_t i)
{
    if (d->lz4_len != d->block_len[i] || memcmp(d->scratch, d->block[i], (size_t)d->lz4_len))
        return "block differs from the wire's";
    return NULL;
}

static void s_run_lz4d(s_data_t *d, size_t i)
{
    d->lz4_len = LZ4_decompress_safe((const char *)d->block[i], (char *)d->scratch, d->block_len[i],
                                     (int)d->raw_size);
}

static const char *s_check_lz4d(s_data_t *d, size_t i)
{
    if (d->lz4_len != (int)d->raw_size || memcmp(d->scratch, d->payload[i], d->raw_size) != 0)
        return "payload differs from the encoded one";
    return NULL;
}

static void s_run_memcpy(s_data_t *d, size_t i)
{
    memcpy(d->arrays, d->src_arrays[i], d->held_bytes);
}

static const char *s_check_memcpy(s_data_t *d, size_t i)
{
    return vl_bench_checksum(d->arrays, d->held_bytes) == d->src_sum[i] ? NULL : "checksum differs";
}

static void s_run_pack(s_data_t *d, size_t i)
{
    vl_obs_pack_rows(&d->src[i].obs_spec, S_HORIZON + 1, d->src[i].obs, d->scratch);
}

static const char *s_check_pack(s_data_t *d, size_t i)
{
    size_t n = (S_HORIZON + 1) * (size_t)d->src[i].obs_wire_bytes;
    return memcmp(d->scratch, d->payload[i], n) == 0 ? NULL : "packed obs differ";
}

static void s_run_unpack(s_data_t *d, size_t i)
{
    vl_obs_unpack_rows(&d->src[i].obs_spec, S_HORIZON + 1, d->payload[i], d->arrays);
}

static const char *s_check_unpack(s_data_t *d, size_t i)
{
    return vl_bench_checksum(d->arrays, d->obs_bytes) == d->obs_sum[i] ? NULL : "checksum differs";
}

static void s_run_pb(s_data_t *d, size_t i)
{
    Volley__Segment *msg = volley__segment__unpack(NULL, d->wire_size[i], d->wire[i]);
    d->unpacked = msg && msg->payload.len == (size_t)d->block_len[i];
    volley__segment__free_unpacked(msg, NULL);
}

static const char *s_check_pb(s_data_t *d, size_t i)
{
    (void)i;
    return d->unpacked ? NULL : "protobuf unpack failed";
}

typedef enum {
    S_ENCODE,
    S_DECODE,
    S_LZ4C,
    S_LZ4D,
    S_MEMCPY,
    S_PACK,
    S_UNPACK,
    S_PB,
    S_OPS
} s_op_id_t;

typedef struct {
    const char *name;
    void (*run)(s_data_t *d, size_t i);
    const char *(*check)(s_data_t *d, size_t i); // NULL if the output is right
} s_op_t;

static const s_op_t s_ops[S_OPS] = {
    [S_ENCODE] = {"vl_segment_encode", s_run_encode, s_check_encode},
    [S_DECODE] = {"vl_segment_decode", s_run_decode, s_check_decode},
    [S_LZ4C] = {"LZ4_compress_default", s_run_lz4c, s_check_lz4c},
    [S_LZ4D] = {"LZ4_decompress_safe", s_run_lz4d, s_check_lz4d},
    [S_MEMCPY] = {"memcpy", s_run_memcpy, s_check_memcpy},
    [S_PACK] = {"vl_obs_pack", s_run_pack, s_check_pack},
    [S_UNPACK] = {"vl_obs_unpack_rows", s_run_unpack, s_check_unpack},
    [S_PB] = {"volley__segment__unpack", s_run_pb, s_check_pb},
};

/* Returns this thread's CPU seconds: the machine may be shared (fuzzers,
   builds), and time spent preempted is not the codec's. */
static double s_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Runs op on every segment and checks each output; exits on a mismatch. */
static void s_check_op(s_data_t *d, const char *name, const s_op_t *op)
{
    for (size_t i = 0; i < S_SEGS; i++) {
        op->run(d, i);
        const char *why = op->check(d, i);
        if (why)
            s_die(name, op->name, i, why);
    }
}

/* Returns the seconds op takes per segment over `loops` passes through the
   segments; checks its last output, exits on a mismatch. */
static double s_time_op(s_data_t *d, const char *name, const s_op_t *op, uint64_t loops)
{
    double t0 = s_now();
    for (uint64_t l = 0; l < loops; l++)
        for (size_t i = 0; i < S_SEGS; i++)
            op->run(d, i);
    double elapsed = s_now() - t0;
    const char *why = op->check(d, S_SEGS - 1);
    if (why)
        s_die(name, op->name, S_SEGS - 1, why);
    return elapsed / (double)(loops * S_SEGS);
}

/* Returns the passes through the segments that take op about run_s. */
static uint64_t s_calibrate(s_data_t *d, const char *name, const s_op_t *op, double run_s)
{
    uint64_t loops = 1;
    double s;
    while ((s = s_time_op(d, name, op, loops) * (double)(loops * S_SEGS)) < run_s / 8)
        loops *= 2;
    double want = (double)loops * run_s / s;
    return want < 1 ? 1 : (uint64_t)want;
}

/* ---- output ---------------------------------------------------------------- */

typedef struct {
    const char *name;
    int pixels;
    uint32_t dim;
    size_t f32_bytes;
    uint32_t raw_size;
    double wire_bytes; // mean over the segments
    double s[S_OPS];   // best seconds per segment
} s_result_t;

static void s_print_sizes(const s_result_t *res, size_t n)
{
    printf("sizes per segment (T = %d, mean of %d consecutive segments):\n", S_HORIZON, S_SEGS);
    printf("  %-10s %7s %11s %12s %11s %9s  %s\n", "case", "obs_dim", "f32 bytes", "packed bytes",
           "wire bytes", "f32/wire", "target wire <= f32/30");
    for (size_t k = 0; k < n; k++) {
        const s_result_t *r = &res[k];
        double ratio = (double)r->f32_bytes / r->wire_bytes;
        const char *target = !r->pixels ? "-" : ratio >= S_WIRE_TARGET ? "met" : "missed";
        printf("  %-10s %7u %11zu %12u %11.0f %8.1fx  %s\n", r->name, r->dim, r->f32_bytes,
               r->raw_size, r->wire_bytes, ratio, target);
    }
}

/* Returns MB/s of f32 segment data at s seconds a segment. */
static double s_mbs(const s_result_t *r, double s)
{
    return (double)r->f32_bytes / s / 1e6;
}

static void s_print_speeds(const s_result_t *res, size_t n, int runs)
{
    printf("\nthroughput, best of %d runs (thread CPU time); MB/s = segments/s x f32 bytes (1 MB = "
           "1e6 B):\n",
           runs);
    printf("  %-10s %10s %9s %10s %9s %9s %9s %9s %11s  %s\n", "case", "encode/s", "enc MB/s",
           "decode/s", "dec MB/s", "lz4c MB/s", "lz4d MB/s", "memcpy", "decode/lz4d",
           "target decode >= 0.5x lz4d");
    for (size_t k = 0; k < n; k++) {
        const s_result_t *r = &res[k];
        double slow = r->s[S_DECODE] / r->s[S_LZ4D];
        printf("  %-10s %10.0f %9.0f %10.0f %9.0f %9.0f %9.0f %9.0f %10.2fx  %s\n", r->name,
               1 / r->s[S_ENCODE], s_mbs(r, r->s[S_ENCODE]), 1 / r->s[S_DECODE],
               s_mbs(r, r->s[S_DECODE]), s_mbs(r, r->s[S_LZ4C]), s_mbs(r, r->s[S_LZ4D]),
               s_mbs(r, r->s[S_MEMCPY]), slow, slow <= S_LZ4D_TARGET ? "met" : "missed");
    }
}

static void s_print_breakdown(const s_result_t *res, size_t n)
{
    printf("\nwhere the time goes, microseconds per segment (other = total - the parts):\n");
    printf("  %-10s %8s %8s %8s %8s | %8s %8s %8s %8s %8s | %8s %s\n", "case", "encode", "obs_pack",
           "lz4c", "other", "decode", "pb_unpk", "lz4d", "obs_unpk", "other", "memcpy",
           "lz4d MB/s of packed");
    for (size_t k = 0; k < n; k++) {
        const s_result_t *r = &res[k];
        const double *s = r->s, u = 1e6;
        printf("  %-10s %8.2f %8.2f %8.2f %8.2f | %8.2f %8.2f %8.2f %8.2f %8.2f | %8.2f %.0f\n",
               r->name, u * s[S_ENCODE], u * s[S_PACK], u * s[S_LZ4C],
               u * (s[S_ENCODE] - s[S_PACK] - s[S_LZ4C]), u * s[S_DECODE], u * s[S_PB],
               u * s[S_LZ4D], u * s[S_UNPACK],
               u * (s[S_DECODE] - s[S_PB] - s[S_LZ4D] - s[S_UNPACK]), u * s[S_MEMCPY],
               r->raw_size / s[S_LZ4D] / 1e6);
    }
}

/* ---- main ---------------------------------------------------------------- */

static void s_usage(FILE *out)
{
    fprintf(out,
            "usage: vl_codec_bench [--quick] [--help]\n"
            "  Benchmarks vl_segment_encode / vl_segment_decode beside bare LZ4 and\n"
            "  memcpy on the same segments (cartpole, catch, a 2-bit pixel game).\n"
            "  --quick   %d short runs per figure instead of %d of %.1f s (for tests)\n"
            "  --help    this text\n",
            S_QUICK_RUNS, S_RUNS, S_RUN_S);
}

/* Measures one case into r. Returns 0, or -1 if it could not be built. */
static int s_bench_case(const s_case_t *c, s_result_t *r, int runs, double run_s)
{
    const vl_env_ops_t *env = c->ops ? c->ops : vl_env_find(c->env);
    if (!env) {
        fprintf(stderr, "vl_codec_bench: %s: environment '%s' is not built in\n", c->name, c->env);
        return -1;
    }
    s_data_t *d = malloc(sizeof *d);
    if (!d || s_data_init(d, c, env) != 0) {
        if (d)
            s_data_free(d);
        free(d);
        return -1;
    }
    *r = (s_result_t){.name = c->name,
                      .pixels = c->pixels,
                      .dim = env->obs_dim,
                      .f32_bytes = d->f32_bytes,
                      .raw_size = d->raw_size};
    for (size_t k = 0; k < S_SEGS; k++)
        r->wire_bytes += (double)d->wire_size[k] / S_SEGS;
    uint64_t loops[S_OPS];
    for (int op = 0; op < S_OPS; op++) {
        s_check_op(d, c->name, &s_ops[op]);
        loops[op] = s_calibrate(d, c->name, &s_ops[op], run_s);
        r->s[op] = INFINITY;
    }
    // Runs interleave the operations, so a burst of load elsewhere on the
    // machine slows them alike and the ratios between them hold.
    for (int run = 0; run < runs; run++)
        for (int op = 0; op < S_OPS; op++)
            r->s[op] = fmin(r->s[op], s_time_op(d, c->name, &s_ops[op], loops[op]));
    s_data_free(d);
    free(d);
    return 0;
}

int main(int argc, char **argv)
{
    vl_bench_plan_t plan;
    int rc =
        vl_bench_parse(argc, argv, "vl_codec_bench", s_usage, (vl_bench_plan_t){S_RUNS, S_RUN_S},
                       (vl_bench_plan_t){S_QUICK_RUNS, S_QUICK_RUN_S}, &plan);
    if (rc != 0)
        return rc == 1 ? 0 : 2;
    int runs = plan.runs;
    double run_s = plan.run_s;
    char why[160];
    if (vl_env_check(&s_pixel_table, &s_pixel_ops, why, sizeof why) != 0) {
        fprintf(stderr, "vl_codec_bench: pixel: %s\n", why);
        return 1;
    }
    size_t n_cases = sizeof s_cases / sizeof s_cases[0], n = 0;
    s_result_t res[sizeof s_cases / sizeof s_cases[0]];
    int failed = 0;
    for (size_t k = 0; k < n_cases; k++) {
        if (s_bench_case(&s_cases[k], &res[n], runs, run_s) == 0)
            n++;
        else
            failed = 1;
    }
    s_print_sizes(res, n);
    s_print_speeds(res, n, runs);
    s_print_breakdown(res, n);
    return failed;
}
