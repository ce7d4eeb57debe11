/*  vl_learner_config_test: the normalisation defaults. Observations are
    normalised unless told, but for a conv net or a torch:MOD:FN module
    with discrete actions and no recurrent core; rewards are scaled unless
    told for a box action space or a recurrent core. A value given (0 or 1)
    holds whatever the model. */
#include <string.h>

#include "../tests/vl_test.h"
#include "vl_learner_config.h"

/* Sets c's env to the built-in env `env` and its model to `model` ("": the
   default for its observations); returns 0 if the model parses for it. */
static int s_setup(vl_learner_config_t *c, const char *env, const char *model)
{
    char why[256];
    const vl_env_ops_t *ops = vl_env_find(env);
    if (!ops)
        return -1;
    vl_learner_config_set_env(c, ops);
    return vl_learner_config_set_model(c, model, strncmp(model, "torch:", 6) != 0, NULL, why,
                                       sizeof why);
}

/* CartPole at the learner's defaults (the mlp, discrete actions): its
   observations normalised, its rewards not; catch's mlp likewise. */
static void test_mlp_discrete(void)
{
    vl_learner_config_t c = vl_learner_config_default();
    VL_CHECK(vl_learner_config_norm_obs(&c) == 1);
    VL_CHECK(vl_learner_config_norm_reward(&c) == 0);
    VL_CHECK(s_setup(&c, "catch", "") == 0);
    VL_CHECK(vl_learner_config_norm_obs(&c) == 1);
    VL_CHECK(vl_learner_config_norm_reward(&c) == 0);
}

/* A conv net with discrete actions: neither, with its default cnn or one
   given; an lstm on top: both. */
static void test_conv(void)
{
    vl_learner_config_t c = vl_learner_config_default();
    VL_CHECK(s_setup(&c, "catch-pixels", "") == 0);
    VL_CHECK(vl_learner_config_norm_obs(&c) == 0);
    VL_CHECK(vl_learner_config_norm_reward(&c) == 0);
    VL_CHECK(s_setup(&c, "catch-pixels", "conv(8,3,1) relu linear(32) tanh") == 0);
    VL_CHECK(vl_learner_config_norm_obs(&c) == 0);
    VL_CHECK(vl_learner_config_norm_reward(&c) == 0);
    VL_CHECK(s_setup(&c, "catch-pixels", "conv(8,3,1) relu linear(32) lstm(32)") == 0);
    VL_CHECK(vl_learner_config_norm_obs(&c) == 1);
    VL_CHECK(vl_learner_config_norm_reward(&c) == 1);
}

/* The user's own module with discrete actions: its observations as they
   come; with box actions normalised. */
static void test_torch_module(void)
{
    vl_learner_config_t c = vl_learner_config_default();
    VL_CHECK(s_setup(&c, "cartpole", "torch:mod:fn") == 0);
    VL_CHECK(vl_learner_config_norm_obs(&c) == 0);
    VL_CHECK(vl_learner_config_norm_reward(&c) == 0);
    VL_CHECK(s_setup(&c, "pendulum", "torch:mod:fn") == 0);
    VL_CHECK(vl_learner_config_norm_obs(&c) == 1);
    VL_CHECK(vl_learner_config_norm_reward(&c) == 1);
}

/* Box actions with the mlp: both. */
static void test_box(void)
{
    vl_learner_config_t c = vl_learner_config_default();
    VL_CHECK(s_setup(&c, "pendulum", "") == 0);
    VL_CHECK(vl_learner_config_norm_obs(&c) == 1);
    VL_CHECK(vl_learner_config_norm_reward(&c) == 1);
}

/* A value given holds: 0 turns off what the default turns on, 1 turns on
   what it turns off. */
static void test_given(void)
{
    vl_learner_config_t c = vl_learner_config_default();
    c.norm_obs = 0;
    c.norm_reward = 0;
    VL_CHECK(vl_learner_config_norm_obs(&c) == 0);
    VL_CHECK(s_setup(&c, "pendulum", "") == 0);
    VL_CHECK(vl_learner_config_norm_obs(&c) == 0);
    VL_CHECK(vl_learner_config_norm_reward(&c) == 0);
    VL_CHECK(s_setup(&c, "catch-pixels", "") == 0);
    c.norm_obs = 1;
    c.norm_reward = 1;
    VL_CHECK(vl_learner_config_norm_obs(&c) == 1);
    VL_CHECK(vl_learner_config_norm_reward(&c) == 1);
}

/* Newly on: only where the mlp-on-discrete-actions rule alone turns it on
   (CartPole), not where a box or an lstm did before, nor behind a conv. */
static void test_newly_on(void)
{
    vl_learner_config_t c = vl_learner_config_default();
    VL_CHECK(vl_learner_config_norm_obs_newly_on(&c) == 1);
    VL_CHECK(s_setup(&c, "pendulum", "") == 0);
    VL_CHECK(vl_learner_config_norm_obs_newly_on(&c) == 0);
    VL_CHECK(s_setup(&c, "catch-pixels", "") == 0);
    VL_CHECK(vl_learner_config_norm_obs_newly_on(&c) == 0);
    VL_CHECK(s_setup(&c, "cartpole", "linear(32) lstm(32)") == 0);
    VL_CHECK(vl_learner_config_norm_obs_newly_on(&c) == 0);
}

int main(void)
{
    VL_RUN(test_mlp_discrete);
    VL_RUN(test_conv);
    VL_RUN(test_torch_module);
    VL_RUN(test_box);
    VL_RUN(test_given);
    VL_RUN(test_newly_on);
    return VL_DONE();
}
