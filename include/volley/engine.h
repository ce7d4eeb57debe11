/*  volley/engine.h: the learner's update engine, for outside code (the
    PyTorch learner of the Python package, say). volley's learner is one
    loop (receive segments into the buffer, choose a batch, train, publish
    versioned weights and progress, keep checkpoints, metrics and the step
    budget) around one engine: the part that holds the network and its
    optimiser and takes one update on a batch. The C engine is volley's own
    (oneDNN, its model spec); an outside engine is a table of operations
    that the same loop calls, so a PyTorch learner gets every flag, the run
    directory, checkpoints and resume, `--retain`, `--max-steps` and the
    progress reports of the C learner without a line of them written again.

    What the loop keeps for an outside engine, written once in C:
    - observation and reward normalisation (running statistics updated from
      each batch before the engine sees it, published and checkpointed as
      the norm.* tensors C actors normalise with); the batch's OBS and
      FINAL_OBS arrays are then normalised and its REWARDS scaled;
    - the minibatch order: vl_engine_batch_shuffle draws permutations from
      the learner's seeded RNG (checkpointed), so two engines given the same
      batches take the same minibatches, and a resumed run continues its
      sequence;
    - the learning-rate schedule (passed to each update).

    A batch is read with vl_engine_batch_gather, the arrays of
    volley/learner.h's vl_transport_array_t (OBS_ROWS gives the wire's
    encoding, u8 and u2 one byte a value, for a device to unpack), plus the
    segments' stored recurrent states and importance weights, and
    OBS_PACKED (the wire's bytes, u2 four values a byte: a quarter of
    OBS_ROWS' bytes for a 2-bit screen). */
#ifndef VOLLEY_ENGINE_H
#define VOLLEY_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include <volley/learner.h>
#include <volley/volley.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The arrays a batch has beyond the transport's. */
enum {
    VL_ENGINE_STATE = VL_TRANSPORT_ARRAYS, // float32 [n, S]: each segment's stored recurrent
                                           // state before its step 0 (S = state_size)
    VL_ENGINE_WEIGHTS,                     // float32 [n]: importance weights (1 without
                                           // --retain's prioritized sampling)
    VL_ENGINE_OBS_PACKED,                  // uint8 [n, T+1, wire_bytes]: observations as the
                                           // wire packs them, field after field: f32 as
                                           // floats, u8 a byte a value, u2 four values a byte
                                           // (value i in bits 2(i%4) of byte i/4), u1 eight;
                                           // the fewest bytes to move to a device
    VL_ENGINE_FINAL_PACKED,                // uint8 [k, wire_bytes]: the final observation of
                                           // each of the batch's k truncated steps (segment
                                           // by segment, step by step), packed as
                                           // OBS_PACKED: what FINAL_OBS holds without its
                                           // n x T x D floats of zeros around them
    VL_ENGINE_ARRAYS
};

/* What an engine is made for: the policy's spec and the update's
   hyperparameters, settled by the learner from its flags (their defaults
   and checks are the C learner's, one table). */
typedef struct {
    vl_transport_spec_t spec; // fields, action space, horizon, hidden, model (canonical)
    char policy[64];          // the policy id served
    uint32_t state_size;      // floats of recurrent state per segment (0: none)
    uint32_t batch_segments;  // segments per update (at most)
    uint32_t epochs;          // passes over each batch
    uint32_t minibatch;       // samples per Adam step (a recurrent model: whole segments,
                              // minibatch / horizon of them, at least one)
    uint32_t burn_in;         // a recurrent model: steps of each segment that only rebuild
                              // its state (no loss), < horizon
    float lr;                 // Adam's learning rate at the start (eps 1e-5)
    float gamma, lambda;      // V-trace's discount and lambda
    float clip;               // PPO's ratio clip
    float ent_coef, vf_coef;  // loss = pg + vf_coef * value - ent_coef * entropy
    float max_grad_norm;      // global gradient-norm clip (<= 0: none)
    float rho_bar, c_bar;     // V-trace's clips (the policy gradient's rho clip is rho_bar)
    int norm_obs;             // 1: OBS and FINAL_OBS are normalised by the learner
    int norm_reward;          // 1: REWARDS are scaled by the learner
    uint64_t seed;            // the initial weights' and the minibatch order's
    uint32_t threads;         // CPU threads the engine may use (0: its choice)
} vl_engine_config_t;

/* One update's figures (means over the last epoch's minibatches). */
typedef struct {
    float policy_loss, value_loss, entropy, approx_kl, clip_frac;
    float mean_abs_adv;  // mean |V-trace advantage| before normalisation
    float explained_var; // 1 - Var(v_target - V) / Var(v_target), V before the update (NAN:
                         // the targets do not vary)
} vl_engine_stats_t;

typedef struct vl_engine_batch_s vl_engine_batch_t;

/* An outside engine's operations. Each returns 0, or -1 after writing a
   one-line why (the learner logs it and stops). Called from one thread. */
typedef struct {
    void *self;
    /* One update on batch (n = vl_engine_batch_size segments) at learning
       rate lr: fills stats, and adv_sums[n] (each segment's sum of
       |advantage| with the weights before the update: its priority) when
       not NULL. */
    int (*update)(void *self, vl_engine_batch_t *batch, float lr, float *adv_sums,
                  vl_engine_stats_t *stats, char *why, size_t why_size);
    /* The weights to publish and checkpoint, as host float32 tensors named
       as the C model names them; data stays valid until the next update
       or load. Sets *n (at most max). Any norm.* tensors are left out: the
       learner adds its own. */
    int (*weights)(void *self, vl_transport_tensor_t *out, uint32_t max, uint32_t *n, char *why,
                   size_t why_size);
    /* The optimiser's state as bytes for a checkpoint, valid until the next
       call. */
    int (*optimizer)(void *self, const void **data, size_t *size, char *why, size_t why_size);
    /* Loads a checkpoint's weights (n tensors, norm.* included; ignore what
       is not yours) and optimiser bytes (size 0: none kept). */
    int (*load)(void *self, const vl_transport_tensor_t *tensors, uint32_t n, const void *opt,
                size_t opt_size, char *why, size_t why_size);
    /* Frees the engine (may be NULL). */
    void (*close)(void *self);
} vl_engine_ops_t;

/* Makes an outside engine for config: fills ops. Returns 0, or -1 after
   writing why. */
typedef int (*vl_engine_open_fn)(void *ctx, const vl_engine_config_t *config, vl_engine_ops_t *ops,
                                 char *why, size_t why_size);

/* Returns the batch's segment count n. */
VL_EXPORT uint32_t vl_engine_batch_size(const vl_engine_batch_t *batch);

/* Returns the bytes vl_engine_batch_gather writes for array (a
   vl_transport_array_t or VL_ENGINE_*), 0 for an unknown one. */
VL_EXPORT size_t vl_engine_batch_bytes(const vl_engine_batch_t *batch, int array);

/* Copies array of the batch's segments, in order, into out (out_size >=
   vl_engine_batch_bytes). OBS, FINAL_OBS and REWARDS are normalised as the
   config says. Returns 0, or -1 for an unknown array or a small out. */
VL_EXPORT int vl_engine_batch_gather(const vl_engine_batch_t *batch, int array, void *out,
                                     size_t out_size);

/* Writes a random permutation of 0 .. N-1 into perm[N], drawn from the
   learner's minibatch RNG (Fisher-Yates, as the C engine shuffles). */
VL_EXPORT void vl_engine_batch_shuffle(vl_engine_batch_t *batch, uint32_t N, uint32_t *perm);

/* The `volley learner` command with an outside engine: parses argv (argv[0]
   the program) with the C learner's flags, help and checks, settles the
   spec, calls open to make the engine and trains with it until the run
   ends (SIGINT, SIGTERM). Returns the process exit code. */
VL_EXPORT int vl_learner_main_engine(int argc, char **argv, vl_engine_open_fn open, void *ctx);

/* ---- for tests and benchmarks: engines and batches without a broker ---- */

typedef struct vl_engine_s vl_engine_t;

/* The config `volley learner` would settle for spec with no flags given
   (spec->model "": the default model; its canonical text is written back,
   with obs_dim and row_bytes). Returns 0, or -1 after writing why. */
VL_EXPORT int vl_engine_config_default(vl_engine_config_t *config, vl_transport_spec_t *spec,
                                       char *why, size_t why_size);

/* Makes an engine for config as the learner does: ops NULL for the C
   engine, else an outside one (whose ops.self the engine then owns: close
   is called by destroy, or at once when this fails). Returns it (caller
   destroys), or NULL with why. */
VL_EXPORT vl_engine_t *vl_engine_new(const vl_engine_config_t *config, const vl_engine_ops_t *ops,
                                     char *why, size_t why_size);

/* Frees the engine and nulls the pointer; safe on NULL and twice. */
VL_EXPORT void vl_engine_destroy(vl_engine_t **self_p);

/* Arrays from the caller, for vl_engine_batch_new (n segments of T steps,
   D = obs_dim, W = action dims, S = state_size). */
typedef struct {
    const float *obs;         // [n, T+1, D]: as actors observe (integer fields whole numbers)
    const float *actions;     // [n, T, W]
    const float *rewards;     // [n, T]
    const float *dones;       // [n, T]
    const float *logp;        // [n, T]: the behaviour policy's log-probs
    const uint8_t *truncated; // [n, T] or NULL (none)
    const float *final_obs;   // [n, T, D] read at truncated steps, or NULL
    const float *state;       // [n, S] or NULL (zero)
    const float *weights;     // [n] importance weights or NULL (1)
    const uint32_t *actor_id; // [n] or NULL (0); env_id is the segment's index
} vl_engine_arrays_t;

/* Makes a batch of n (1 .. batch_segments) segments of config's spec from
   arrays, encoded as actors send them. Returns it (caller destroys), or
   NULL with why. */
VL_EXPORT vl_engine_batch_t *vl_engine_batch_new(const vl_engine_config_t *config, uint32_t n,
                                                 const vl_engine_arrays_t *arrays, char *why,
                                                 size_t why_size);

/* Frees the batch and nulls the pointer; safe on NULL and twice. */
VL_EXPORT void vl_engine_batch_destroy(vl_engine_batch_t **self_p);

/* Returns 1 once the learner has been asked to stop (SIGINT or SIGTERM): an
   outside engine ends a long update at its next minibatch, as the C engine
   does, so the learner checkpoints within its grace. */
VL_EXPORT int vl_learner_stopping(void);

/* Names the device this process's engine trains on ("cuda:0"), shown in the
   learner's progress line; NULL or "" names the CPU. Copied (63 bytes at most). */
VL_EXPORT void vl_engine_set_device(const char *name);

/* One update of engine on batch, as the learner takes it (the
   normalisation statistics updated first, the batch's minibatch order
   from the engine's RNG). Fills stats and adv_sums[n] (may be NULL).
   Returns 0, or -1 with why. */
VL_EXPORT int vl_engine_update(vl_engine_t *self, vl_engine_batch_t *batch, float *adv_sums,
                               vl_engine_stats_t *stats, char *why, size_t why_size);

/* Returns how many tensors the engine publishes (norm.* included). */
VL_EXPORT uint32_t vl_engine_tensor_count(vl_engine_t *self);

/* Fills t with published tensor i (data valid until the next update).
   Returns 0, or -1 past the count. */
VL_EXPORT int vl_engine_tensor(vl_engine_t *self, uint32_t i, vl_transport_tensor_t *t);

/* Copies n tensors into the engine's weights (as a resume does: names and
   shapes must match). Returns 0, or -1 with why. */
VL_EXPORT int vl_engine_load(vl_engine_t *self, const vl_transport_tensor_t *tensors, uint32_t n,
                             char *why, size_t why_size);

#ifdef __cplusplus
}
#endif

#endif
