/*  vl_learner_config: what a learner trains and how: the environment or the
    policy's spec it trains for, the model, the hyperparameters and where it
    keeps its run; the flags that set them, the defaults and the checks
    across fields. A plain struct: no sockets, no threads. */
#ifndef VL_LEARNER_CONFIG_H
#define VL_LEARNER_CONFIG_H

#include <stdint.h>

#include "../common/vl_opts.h"
#include "../envs/vl_env.h"
#include "../messages/vl_spec.h"
#include "../models/vl_model_spec.h"

typedef struct {
    const char *broker;            // HOST[:PORT]
    const char *policy;            // policy id served
    const vl_env_ops_t *env;       // the environment, when this learner has its code; NULL: the
                                   // spec comes from the broker (vl_learner_config_set_spec)
    vl_obs_spec_t obs_spec;        // observation fields trained on (from env or the broker's spec)
    uint32_t obs_dim;              // floats per observation, from obs_spec
    vl_action_spec_t action;       // the action space
    char env_name[64];             // for logs
    uint32_t batch_wait_ms;        // an update waits this long for a full batch, then trains on
                                   // what has come (0: always a full batch)
    uint32_t horizon;              // steps per segment; others are refused
    uint32_t hidden;               // hidden units per layer of the default mlp
    char model[VL_SPEC_MODEL_MAX]; // the model spec as given ("": the default for the obs)
    uint32_t batch_segments;       // segments per update, at most (0: vl_learner_config_size)
    uint32_t capacity;             // buffer slots, >= 2 * batch_segments (0: the same)
    uint32_t epochs;               // passes over each batch
    uint32_t minibatch;            // samples per Adam step
    uint32_t max_lag;              // segments older than this many versions are dropped
    uint32_t retain;               // 0: on-policy batches; N: a prioritized ring of N segments
    float alpha;                   // priority exponent in ring mode (0: uniform)
    float beta0;                   // importance-weight exponent at the start, annealed to 1
    uint32_t beta_steps;           // updates over which beta reaches 1
    float lr, gamma, lambda, clip, ent_coef, vf_coef, max_grad_norm;
    float rho_bar, c_bar; // V-trace clips (pg clip = rho_bar)
    uint64_t seed;
    uint32_t threads;           // the model engine's threads for a conv model (0: every core)
    const char *checkpoint_dir; // NULL: no checkpoints; else DIR/<policy>.ckpt
    uint32_t checkpoint_every;  // seconds between checkpoints
    uint32_t report_ms;         // progress reports this often (0: after every update, before
                                // its weights: lockstep runs report every step count)
    int resume;                 // continue from the checkpoint (there must be one)
    int force;                  // start over where a checkpoint is (kept aside as .bak)
    uint32_t keep;              // numbered checkpoints kept (1: only the newest)
    const char *metrics_dir;    // NULL: none; else DIR/metrics.jsonl and TensorBoard events
    uint64_t lr_anneal_steps;   // 0: constant lr; N: lr falls linearly to 0 at N env steps
    uint64_t max_steps;         // 0: no budget; N: no segment is taken once env steps reach N
    int norm_obs;               // observation normalisation: 1 on, 0 off, -1 on but for a
                                // conv net or a torch:MOD:FN module with discrete actions
                                // and no recurrent core
    int norm_reward;            // reward scaling by the return's std: 1, 0, -1 on for a box
                                // or a recurrent core
    uint32_t burn_in;           // a recurrent policy: steps of each segment that only rebuild
                                // its state from the stored one (no loss), < horizon
} vl_learner_config_t;

/* The learner's numeric flags (--seed, --batch, --lr, ...), shared with
   `volley replay`, whose learner takes the same. */
extern const vl_num_opt_t vl_learner_opts[];
extern const int vl_learner_n_opts;

/* Checks what the flags cannot check one by one: the buffer holds two
   batches and the retained ring. Returns 0, or -1 after printing why as
   "volley <cmd>: ...". */
int vl_learner_config_check(const char *cmd, const vl_learner_config_t *config);

/* The most segments an update takes when --batch is left to the learner:
   room for a round of 256 envs, fewer where their float observations would
   pass VL_LEARNER_AUTO_BATCH_BYTES. */
#define VL_LEARNER_AUTO_BATCH       256
#define VL_LEARNER_AUTO_BATCH_BYTES (512u << 20)

/* Sizes what the flags left to the learner (0), once the observation is
   known: batch_segments to VL_LEARNER_AUTO_BATCH segments, fewer for large
   observations or to fit a --capacity given; capacity to 2 x batch +
   retain, at least 64. */
void vl_learner_config_size(vl_learner_config_t *c);

/* Returns defaults tuned for CartPole on a small machine (env: cartpole). */
vl_learner_config_t vl_learner_config_default(void);

/* Sets what the learner trains from an environment: obs_spec, obs_dim,
   action, env_name (env becomes c->env). */
void vl_learner_config_set_env(vl_learner_config_t *c, const vl_env_ops_t *env);

/* Sets what the learner trains from a policy's spec (observation fields,
   actions, horizon, and its network unless the spec leaves it open: then c
   keeps its own); c->env becomes NULL. Returns 0, or -1 if the spec's
   fields are invalid. */
int vl_learner_config_set_spec(vl_learner_config_t *c, const vl_spec_t *spec);

/* Returns the floats of recurrent state the config's model carries per
   segment (vl_model_spec_state_size; 0 when its model does not parse). */
uint32_t vl_learner_config_state_size(const vl_learner_config_t *c);

/* Returns 1 if observations are normalised (norm_obs, or by default but for
   a conv net or a torch:MOD:FN module with discrete actions and no
   recurrent core), else 0. */
int vl_learner_config_norm_obs(const vl_learner_config_t *c);

/* Returns 1 when observations are normalised by default only since that
   default took in MLPs on discrete actions (a checkpoint whose config says
   norm-obs = -1 was trained without), else 0. */
int vl_learner_config_norm_obs_newly_on(const vl_learner_config_t *c);

/* Returns 1 if rewards are scaled (norm_reward, or by default for a box
   space), else 0. */
int vl_learner_config_norm_reward(const vl_learner_config_t *c);

/* Parses the config's model for its observations: its text, or when ""
   the default, cnn for an image field, else mlp(hidden). Sets *spec (caller
   destroys; spec may be NULL) and writes its canonical text into
   canon[VL_SPEC_MODEL_MAX] (may be NULL). Returns 0, or -1 after writing one
   line to why naming the token or layer and what was expected. */
int vl_learner_config_model(const vl_learner_config_t *c, vl_model_spec_t **spec, char *canon,
                            char *why, size_t why_size);

/* Takes a --model text (NULL: keep c's) into c and, when check is not 0,
   parses it for c's observations, writing its canonical text into
   canon[VL_SPEC_MODEL_MAX] (may be NULL). Returns 0, or -1 after writing one
   line to why: a text longer than a model spec may be, or why it does not
   parse or fit. */
int vl_learner_config_set_model(vl_learner_config_t *c, const char *text, int check, char *canon,
                                char *why, size_t why_size);

#define VL_LEARNER_CONV_LR 3e-4f // --lr's default for models with conv layers
#define VL_LEARNER_BOX_LR  3e-4f // and for box actions

/* Settles the defaults that follow the model and the actions: a model with
   conv layers, or a box action space, trains with lr 3e-4 unless --lr was
   given (bit i of given: vl_learner_opts[i] was on the command line). For
   a CNN as CleanRL's Atari PPO (2.5e-4) against its MLP PPO: 1e-3 made
   catch-pixels' CNN settle on a policy that misses balls. For a Gaussian
   head as CleanRL's continuous PPO: at 1e-3 pendulum reaches a mean of
   -250 sooner, but its greedy policy then scores near -200 rather than
   -180 (bench/pendulum_solve.sh). */
void vl_learner_config_settle(vl_learner_config_t *c, uint64_t given);

/* Fills the spec this learner trains (its fields, actions, horizon, hidden,
   policy and env name). */
void vl_learner_config_spec(const vl_learner_config_t *c, vl_spec_t *spec);

#endif
