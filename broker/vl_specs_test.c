/*  vl_specs_test: first come for a policy's spec, except that its learner's
    word outranks actors' (an actor, anyone on an open broker, cannot hold a
    policy's spec against its learner), and never another learner's. */
#include <string.h>

#include "../tests/vl_test.h"
#include "vl_specs.h"

static vl_spec_t s_spec(uint32_t horizon)
{
    vl_spec_t s = {.obs_spec = vl_obs_spec_flat(4),
                   .action = vl_action_discrete(2),
                   .horizon = horizon,
                   .hidden = 64};
    strcpy(s.policy_id, "default");
    return s;
}

static void test_first_come(void)
{
    vl_specs_t *t = vl_specs_new(4);
    char why[256] = "";
    vl_spec_t a = s_spec(64), b = s_spec(32);
    VL_CHECK(t && vl_specs_declare(t, &a, "this actor", 0, why, sizeof why) == 0);
    VL_CHECK(vl_specs_declare(t, &a, "this actor", 0, why, sizeof why) == 0); // agrees
    VL_CHECK(vl_specs_declare(t, &b, "this actor", 0, why, sizeof why) == 1);
    VL_CHECK(strstr(why, "horizon") != NULL);
    VL_CHECK(vl_specs_find(t, "default")->horizon == 64);
    vl_specs_destroy(&t);
}

/* Another action space is another policy's spec, even of the same width. */
static void test_action_space_differs(void)
{
    vl_specs_t *t = vl_specs_new(4);
    char why[256] = "";
    vl_spec_t a = s_spec(64), b = s_spec(64);
    b.action = (vl_action_spec_t){.kind = VL_ENV_BOX, .dims = 1, .low = {-2}, .high = {2}};
    VL_CHECK(t && vl_specs_declare(t, &a, "this actor", 0, why, sizeof why) == 0);
    VL_CHECK(vl_specs_declare(t, &b, "this actor", 0, why, sizeof why) == 1);
    VL_CHECK(strstr(why, "actions: policy 'default' has discrete(2), this actor box(1)") == why);
    VL_CHECK(vl_specs_find(t, "default")->action.kind == VL_ENV_DISCRETE);
    vl_specs_destroy(&t);
}

static void test_learner_outranks_actors(void)
{
    vl_specs_t *t = vl_specs_new(4);
    char why[256] = "";
    vl_spec_t squat = s_spec(32), real = s_spec(64), other = s_spec(16);
    VL_CHECK(t && vl_specs_declare(t, &squat, "this actor", 0, why, sizeof why) == 0);
    VL_CHECK(vl_specs_declare(t, &real, "this learner", 1, why, sizeof why) == 0);
    VL_CHECK(vl_specs_find(t, "default")->horizon == 64 && vl_specs_count(t) == 1);
    VL_CHECK(vl_specs_declare(t, &squat, "this actor", 0, why, sizeof why) == 1); // now refused
    VL_CHECK(vl_specs_declare(t, &other, "this learner", 1, why, sizeof why) == 1);
    VL_CHECK(vl_specs_find(t, "default")->horizon == 64); // a learner's spec is never replaced
    vl_specs_destroy(&t);
}

static void test_learner_agreeing_holds_it(void)
{
    vl_specs_t *t = vl_specs_new(4);
    char why[256] = "";
    vl_spec_t a = s_spec(64), b = s_spec(32);
    VL_CHECK(t && vl_specs_declare(t, &a, "this actor", 0, why, sizeof why) == 0);
    VL_CHECK(vl_specs_declare(t, &a, "this learner", 1, why, sizeof why) == 0); // agrees: holds
    VL_CHECK(vl_specs_declare(t, &b, "this learner", 1, why, sizeof why) == 1);
    VL_CHECK(vl_specs_find(t, "default")->horizon == 64);
    vl_specs_destroy(&t);
}

/* An actor that leaves the network open agrees with any network, before or
   after one is named, and the first named one becomes the policy's. */
static void test_open_model_follows(void)
{
    vl_specs_t *t = vl_specs_new(4);
    char why[256] = "";
    vl_spec_t open = s_spec(64), lstm = s_spec(64), mlp = s_spec(64), short_h = s_spec(32);
    open.model_open = 1;
    strcpy(lstm.model, "linear(64) lstm(64)");
    lstm.state_size = 128;
    short_h.model_open = 1;
    VL_CHECK(t && vl_specs_declare(t, &open, "this actor", 0, why, sizeof why) == 0);
    VL_CHECK(vl_specs_declare(t, &lstm, "this learner", 1, why, sizeof why) == 0);
    VL_CHECK(strcmp(vl_specs_find(t, "default")->model, "linear(64) lstm(64)") == 0);
    VL_CHECK(!vl_specs_find(t, "default")->model_open);
    VL_CHECK(vl_specs_declare(t, &open, "this actor", 0, why, sizeof why) == 0); // still agrees
    VL_CHECK(vl_specs_declare(t, &mlp, "this actor", 0, why, sizeof why) == 1);  // names another
    VL_CHECK(strstr(why, "state size: policy 'default' has 128, this actor 0") == why);
    VL_CHECK(vl_specs_declare(t, &short_h, "this actor", 0, why, sizeof why) == 1);
    VL_CHECK(strstr(why, "horizon") == why); // the rest is still compared
    vl_specs_destroy(&t);
}

int main(void)
{
    VL_RUN(test_first_come);
    VL_RUN(test_action_space_differs);
    VL_RUN(test_learner_outranks_actors);
    VL_RUN(test_learner_agreeing_holds_it);
    VL_RUN(test_open_model_follows);
    return VL_DONE();
}
