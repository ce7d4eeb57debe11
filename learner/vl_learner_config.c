/*  vl_learner_config: what a learner trains and how, its defaults and the
    checks across its fields. */
#include "vl_learner_config.h"

#include <stdio.h>
#include <string.h>

void vl_learner_config_set_env(vl_learner_config_t *c, const vl_env_ops_t *env)
{
    c->env = env;
    c->obs_spec = env->obs_spec;
    c->obs_dim = env->obs_dim;
    c->action = env->action;
    snprintf(c->env_name, sizeof c->env_name, "%s", env->name);
}

int vl_learner_config_set_spec(vl_learner_config_t *c, const vl_spec_t *spec)
{
    vl_limits_t lim = vl_limits_default();
    uint32_t dim, wire;
    if (vl_obs_spec_check(&spec->obs_spec, &lim, &dim, &wire) != VL_OK)
        return -1;
    c->env = NULL;
    c->obs_spec = spec->obs_spec;
    c->obs_dim = dim;
    c->action = spec->action;
    c->horizon = spec->horizon;
    if (!spec->model_open) { // else the network is this learner's own
        c->hidden = spec->hidden;
        vl_spec_model(spec, c->model, sizeof c->model);
    }
    snprintf(c->env_name, sizeof c->env_name, "%s", spec->env[0] ? spec->env : "(from the broker)");
    return 0;
}

uint32_t vl_learner_config_state_size(const vl_learner_config_t *c)
{
    char why[256];
    vl_model_spec_t *model = NULL;
    uint32_t size = vl_learner_config_model(c, &model, NULL, why, sizeof why) == 0
                        ? vl_model_spec_state_size(model)
                        : 0;
    vl_model_spec_destroy(&model);
    return size;
}

/* Returns 1 where normalisation is on unless told: box actions (CleanRL's
   continuous PPO), and a recurrent core, whose shared trunk the value
   loss of unscaled returns would drown (cartpole-masked stays at chance
   without it and solves in seconds with it). */
static int s_norm_default(const vl_learner_config_t *c)
{
    return vl_action_is_box(&c->action) || vl_learner_config_state_size(c) > 0;
}

/* Returns 1 if the network scales its own observations: conv layers (pixels,
   whose encoding already fixes their scale and whose kernels share weights
   across positions) or a PyTorch module of the user's own (torch:MOD:FN). */
static int s_scales_own_obs(const vl_learner_config_t *c)
{
    if (strncmp(c->model, "torch:", 6) == 0)
        return 1;
    char why[256];
    vl_model_spec_t *spec = NULL;
    int conv = vl_learner_config_model(c, &spec, NULL, why, sizeof why) == 0 &&
               vl_model_spec_has_conv(spec);
    vl_model_spec_destroy(&spec);
    return conv;
}

/* Observations are normalised unless told, except where a conv net or the
   user's own module reads them for discrete actions without a recurrent
   core: features that sit in a corner of their range (pong's lie in [0, 1]
   with its paddle a tenth of it) otherwise leave an MLP's first layer blind
   to the small differences that matter, and its policy settles,
   deterministic, on what it can see. */
int vl_learner_config_norm_obs(const vl_learner_config_t *c)
{
    return c->norm_obs < 0 ? s_norm_default(c) || !s_scales_own_obs(c) : c->norm_obs != 0;
}

int vl_learner_config_norm_obs_newly_on(const vl_learner_config_t *c)
{
    return !s_norm_default(c) && !s_scales_own_obs(c);
}

int vl_learner_config_norm_reward(const vl_learner_config_t *c)
{
    return c->norm_reward < 0 ? s_norm_default(c) : c->norm_reward != 0;
}

void vl_learner_config_spec(const vl_learner_config_t *c, vl_spec_t *spec)
{
    memset(spec, 0, sizeof *spec);
    snprintf(spec->policy_id, sizeof spec->policy_id, "%s", c->policy);
    spec->obs_spec = c->obs_spec;
    spec->action = c->action;
    spec->horizon = c->horizon;
    spec->hidden = c->hidden;
    char why[256];
    if (vl_learner_config_model(c, NULL, spec->model, why, sizeof why) != 0)
        spec->model[0] = '\0'; // refused at start; "" keeps the spec encodable
    spec->state_size = vl_learner_config_state_size(c);
    if (c->env && vl_wire_name_ok(c->env->name, sizeof spec->env))
        snprintf(spec->env, sizeof spec->env, "%s", c->env->name);
}

int vl_learner_config_model(const vl_learner_config_t *c, vl_model_spec_t **spec, char *canon,
                            char *why, size_t why_size)
{
    vl_model_spec_t *parsed = vl_model_spec_for(c->model, &c->obs_spec, c->hidden, why, why_size);
    if (!parsed)
        return -1;
    if (canon && vl_model_spec_format(parsed, canon, VL_SPEC_MODEL_MAX) < 0) {
        snprintf(why, why_size, "the model spec's canonical text is over %d bytes",
                 VL_SPEC_MODEL_MAX - 1);
        vl_model_spec_destroy(&parsed);
        return -1;
    }
    if (spec)
        *spec = parsed;
    else
        vl_model_spec_destroy(&parsed);
    return 0;
}

int vl_learner_config_set_model(vl_learner_config_t *c, const char *text, int check, char *canon,
                                char *why, size_t why_size)
{
    if (text && strlen(text) >= sizeof c->model) {
        snprintf(why, why_size, "%zu bytes; expected a model spec of at most %zu", strlen(text),
                 sizeof c->model - 1);
        return -1;
    }
    if (text)
        snprintf(c->model, sizeof c->model, "%s", text);
    return check ? vl_learner_config_model(c, NULL, canon, why, why_size) : 0;
}

void vl_learner_config_settle(vl_learner_config_t *c, uint64_t given)
{
    char why[256];
    vl_model_spec_t *spec = NULL;
    for (int i = 0; i < vl_learner_n_opts && i < 64; i++)
        if (strcmp(vl_learner_opts[i].name, "lr") == 0 && (given >> i & 1))
            return;
    if (vl_learner_config_model(c, &spec, NULL, why, sizeof why) == 0 &&
        vl_model_spec_has_conv(spec))
        c->lr = VL_LEARNER_CONV_LR;
    else if (vl_action_is_box(&c->action))
        c->lr = VL_LEARNER_BOX_LR;
    vl_model_spec_destroy(&spec);
}

vl_learner_config_t vl_learner_config_default(void)
{
    vl_learner_config_t c = {.broker = "127.0.0.1",
                             .policy = "default",
                             .batch_wait_ms = 50,
                             .horizon = 64,
                             .hidden = 64,
                             .batch_segments = 16,
                             .capacity = 64,
                             .epochs = 4,
                             .minibatch = 256,
                             .max_lag = 4,
                             .retain = 0,
                             .alpha = 0.6f,
                             .beta0 = 0.4f,
                             .beta_steps = 1000,
                             .lr = 1e-3f,
                             .gamma = 0.99f,
                             .lambda = 0.95f,
                             .clip = 0.2f,
                             .ent_coef = 0.01f,
                             .vf_coef = 0.5f,
                             .max_grad_norm = 0.5f,
                             .rho_bar = 1.0f,
                             .c_bar = 1.0f,
                             .seed = 1,
                             .checkpoint_every = 10,
                             .keep = 1,
                             .report_ms = 250, // 4 a second: up sees "solved" promptly
                             .norm_obs = -1,
                             .norm_reward = -1};
    vl_learner_config_set_env(&c, vl_env_find("cartpole"));
    return c;
}

void vl_learner_config_size(vl_learner_config_t *c)
{
    if (!c->batch_segments) {
        uint64_t seg = 4ull * (c->horizon + 1) * (c->obs_dim ? c->obs_dim : 1);
        uint64_t fit = VL_LEARNER_AUTO_BATCH_BYTES / seg;
        uint64_t room = c->capacity > c->retain + 1 ? (c->capacity - c->retain) / 2 : 1;
        fit = fit < VL_LEARNER_AUTO_BATCH ? fit : VL_LEARNER_AUTO_BATCH;
        fit = c->capacity && room < fit ? room : fit;
        c->batch_segments = fit ? (uint32_t)fit : 1;
    }
    if (!c->capacity) {
        uint32_t want = 2 * c->batch_segments + c->retain;
        c->capacity = want > 64 ? want : 64;
    }
}

int vl_learner_config_check(const char *cmd, const vl_learner_config_t *c)
{
    if (c->burn_in && c->burn_in >= c->horizon) {
        fprintf(stderr, "volley %s: --burn-in (%u) must be below --horizon (%u)\n", cmd, c->burn_in,
                c->horizon);
        return -1;
    }
    if (!c->batch_segments || !c->capacity || // sized later, to fit (vl_learner_config_size)
        c->capacity >= 2 * c->batch_segments + c->retain)
        return 0;
    fprintf(stderr,
            "volley %s: --capacity (%u) must be at least 2 x --batch (%u) + --retain (%u)\n", cmd,
            c->capacity, c->batch_segments, c->retain);
    return -1;
}
