/*  vl_export_test: kept policies read from checkpoints and run directories
    (and refused when bad), the safetensors file read back byte by byte, the
    action space and normalisation the JSON spec states (a box policy's
    log-std and statistics exported with it), a torch:MOD:FN module's
    checkpoint kept and exported without a C network, and eval's
    statistics. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../learner/vl_kept.h"
#include "../learner/vl_resume.h"
#include "../store/vl_checkpoint.h"
#include "../tests/vl_test.h"
#include "vl_eval.h"
#include "vl_export.h"

#define OBS    4
#define ACTS   3
#define HIDDEN 8

static char s_dir[256];

/* Writes a checkpoint of a fresh policy (seeded) at path, as the learner's
   weights section; returns the policy (caller destroys). */
static vl_policy_t *s_write_ckpt(const char *path, uint64_t seed, uint32_t obs)
{
    vl_policy_t *p = vl_policy_new(obs, ACTS, HIDDEN, seed);
    vl_tensor_t t[12];
    for (uint32_t i = 0; i < vl_policy_tensor_count(p); i++)
        vl_policy_tensor(p, i, &t[i]);
    uint8_t *buf = NULL;
    size_t size = 0;
    if (vl_weights_encode("default", 7, t, 12, &buf, &size) != 0)
        abort();
    vl_section_t sec[] = {{"weights", buf, size}};
    if (vl_checkpoint_write(path, sec, 1) != 0)
        abort();
    free(buf);
    return p;
}

static void s_path(char *out, size_t size, const char *name)
{
    snprintf(out, size, "%s/%s", s_dir, name);
}

static void test_kept_file(void)
{
    char path[512], why[1024];
    s_path(path, sizeof path, "a.ckpt");
    vl_policy_t *p = s_write_ckpt(path, 1, OBS);
    vl_kept_t *k = vl_kept_load(path, NULL, why, sizeof why);
    VL_CHECK(k);
    VL_CHECK(k->obs_dim == OBS && k->num_actions == ACTS && k->hidden == HIDDEN);
    VL_CHECK(k->env[0] == '\0' && k->weights->version == 7);
    vl_tensor_t t;
    vl_policy_tensor(p, 0, &t);
    float got[HIDDEN * OBS];
    VL_CHECK(vl_kept_tensor(path, t.name, got, HIDDEN * OBS, why, sizeof why) == 0);
    VL_CHECK(memcmp(got, t.data, sizeof got) == 0);
    VL_CHECK(vl_kept_load(path, "other", why, sizeof why) == NULL && strstr(why, "'default'"));
    vl_kept_destroy(&k);
    vl_kept_destroy(&k);
    vl_policy_destroy(&p);
}

static void test_kept_refuses_bad_files(void)
{
    char path[512], why[1024];
    s_path(path, sizeof path, "nothing.ckpt");
    VL_CHECK(!vl_kept_load(path, NULL, why, sizeof why) && strstr(why, "no such"));
    s_path(path, sizeof path, "b.ckpt");
    vl_policy_t *p = s_write_ckpt(path, 2, OBS);
    vl_policy_destroy(&p);
    VL_CHECK(truncate(path, 100) == 0);
    VL_CHECK(!vl_kept_load(path, NULL, why, sizeof why) && strstr(why, "truncated"));
    FILE *f = fopen(path, "w");
    fputs("hello", f);
    fclose(f);
    VL_CHECK(!vl_kept_load(path, NULL, why, sizeof why));
}

static void test_kept_run_dir(void)
{
    char run[512], path[600], why[1024];
    s_path(run, sizeof run, "run1");
    snprintf(path, sizeof path, "%s/checkpoints", run);
    VL_CHECK(mkdir(run, 0755) == 0 && mkdir(path, 0755) == 0);
    snprintf(path, sizeof path, "%s/config.ini", run);
    FILE *f = fopen(path, "w");
    fputs("# a run\n[learner]\nenv = catch\n[up]\nenv = cartpole\nenv-arg = x y\nseed = 1\n", f);
    fclose(f);
    VL_CHECK(!vl_kept_load(run, NULL, why, sizeof why) && strstr(why, "no checkpoint"));
    snprintf(path, sizeof path, "%s/checkpoints/default.ckpt", run);
    vl_policy_t *p = s_write_ckpt(path, 3, OBS);
    vl_policy_destroy(&p);
    vl_kept_t *k = vl_kept_load(run, NULL, why, sizeof why);
    VL_CHECK(k && strcmp(k->env, "cartpole") == 0 && strcmp(k->env_arg, "x y") == 0);
    vl_kept_destroy(&k);
    k = vl_kept_load(path, NULL, why, sizeof why); // the file finds its run's config too
    VL_CHECK(k && strcmp(k->env, "cartpole") == 0);
    vl_kept_destroy(&k);
}

static void test_arch_refuses_other_shapes(void)
{
    vl_policy_t *p = vl_policy_new(OBS, ACTS, HIDDEN, 1);
    vl_weights_t w = {.n_tensors = 12};
    vl_tensor_t t[12];
    for (uint32_t i = 0; i < 12; i++)
        vl_policy_tensor(p, i, &t[i]);
    w.tensors = t;
    uint32_t o, a, h;
    char why[256];
    VL_CHECK(vl_kept_arch(&w, &o, &a, &h, why, sizeof why) == 0);
    t[7].rows = HIDDEN + 1; // v.0.bias
    VL_CHECK(vl_kept_arch(&w, &o, &a, &h, why, sizeof why) == -1 && strstr(why, "v.0.bias"));
    t[7].rows = HIDDEN;
    VL_CHECK(vl_kept_arch(&w, &o, &a, &h, why, sizeof why) == 0);
    // v.0.weight [8, 4] as [8, 2, 2]: as many rows and cols, another shape
    VL_CHECK(vl_tensor_set_shape(&t[6], 3, (uint32_t[]){HIDDEN, 2, 2}) == 0 && t[6].cols == OBS);
    VL_CHECK(vl_kept_arch(&w, &o, &a, &h, why, sizeof why) == -1);
    VL_CHECK(strstr(why, "tensor v.0.weight is [8, 2, 2], volley's MLP needs [8, 4]"));
    w.n_tensors = 11;
    VL_CHECK(vl_kept_arch(&w, &o, &a, &h, why, sizeof why) == -1);
    vl_policy_destroy(&p);
}

/* Reads a whole file; *size set. Caller frees. */
static uint8_t *s_slurp(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    *size = (size_t)ftell(f);
    rewind(f);
    uint8_t *buf = malloc(*size + 1);
    if (fread(buf, 1, *size, f) != *size)
        abort();
    buf[*size] = 0;
    fclose(f);
    return buf;
}

/* Returns the [begin, end] data offsets the header gives tensor name. */
static int s_offsets(const char *header, const char *name, size_t *begin, size_t *end)
{
    char key[80];
    snprintf(key, sizeof key, "\"%s\":", name);
    const char *at = strstr(header, key);
    at = at ? strstr(at, "\"data_offsets\": [") : NULL;
    return at && sscanf(at, "\"data_offsets\": [%zu, %zu]", begin, end) == 2 ? 0 : -1;
}

static void test_safetensors_layout(void)
{
    char ckpt[512], out[512], json[512], why[1024];
    s_path(ckpt, sizeof ckpt, "c.ckpt");
    s_path(out, sizeof out, "c.safetensors");
    vl_policy_t *p = s_write_ckpt(ckpt, 4, OBS);
    vl_kept_t *k = vl_kept_load(ckpt, NULL, why, sizeof why);
    VL_CHECK(k && vl_export_write(k, NULL, out, why, sizeof why) == 0);
    size_t size = 0;
    uint8_t *buf = s_slurp(out, &size);
    VL_CHECK(buf);
    uint64_t n = 0;
    for (int b = 0; b < 8; b++)
        n |= (uint64_t)buf[b] << (8 * b);
    VL_CHECK(n % 8 == 0 && 8 + n <= size);
    char *header = strndup((char *)buf + 8, n);
    VL_CHECK(strstr(header, "\"__metadata__\"") && strstr(header, "\"obs_dim\\\": 4"));
    size_t at = 0, total = 0;
    const char *sorted[] = {"pi.0.bias", "pi.0.weight", "pi.1.bias", "pi.1.weight",
                            "pi.2.bias", "pi.2.weight", "v.0.bias",  "v.0.weight",
                            "v.1.bias",  "v.1.weight",  "v.2.bias",  "v.2.weight"};
    for (int i = 0; i < 12; i++) {
        size_t b, e;
        VL_CHECK(s_offsets(header, sorted[i], &b, &e) == 0 && b == at);
        for (uint32_t j = 0; j < 12; j++) { // the bytes are the policy's floats, little-endian
            vl_tensor_t t;
            vl_policy_tensor(p, j, &t);
            if (strcmp(t.name, sorted[i]) == 0)
                VL_CHECK(e - b == (size_t)t.rows * t.cols * 4 &&
                         memcmp(buf + 8 + n + b, t.data, e - b) == 0);
        }
        at = e, total = e;
    }
    VL_CHECK(8 + n + total == size); // no gap, nothing after
    VL_CHECK(vl_export_write(k, NULL, out, why, sizeof why) == -1 && strstr(why, "exists"));
    VL_CHECK(vl_export_json_path(out, json, sizeof json) == 0);
    VL_CHECK(strcmp(json + strlen(json) - 7, "c.json") == 0 || strstr(json, "/c.json"));
    struct stat st;
    VL_CHECK(stat(json, &st) == 0 && st.st_size > 0);
    size_t json_size = 0;
    char *text = (char *)s_slurp(json, &json_size);
    VL_CHECK(text && strstr(text, "\"action_space\": {\"kind\": \"discrete\", \"dims\": 1, "
                                  "\"n\": [3]}, \"obs_norm\": false"));
    free(text);
    free(header);
    free(buf);
    vl_kept_destroy(&k);
    vl_policy_destroy(&p);
}

static void test_export_never_overwrites_json(void)
{
    char ckpt[512], out[512], json[512], why[1024];
    s_path(ckpt, sizeof ckpt, "c.ckpt");
    s_path(out, sizeof out, "d.safetensors");
    s_path(json, sizeof json, "d.json");
    FILE *f = fopen(json, "w");
    fputs("mine", f);
    fclose(f);
    vl_kept_t *k = vl_kept_load(ckpt, NULL, why, sizeof why);
    VL_CHECK(k && vl_export_write(k, NULL, out, why, sizeof why) == -1 && strstr(why, "d.json"));
    VL_CHECK(access(out, F_OK) != 0); // nothing written
    vl_kept_destroy(&k);
}

/* A kept policy whose weights hold a conv weight [32][4][8][8] besides the
   MLP's: the safetensors header and the JSON give all four dimensions, and
   its 8192 floats are written as they are. */
static void test_export_gives_every_dimension(void)
{
    char ckpt[512], out[512], json[512], why[1024];
    s_path(ckpt, sizeof ckpt, "e.ckpt");
    s_path(out, sizeof out, "e.safetensors");
    vl_policy_t *p = s_write_ckpt(ckpt, 5, OBS);
    vl_kept_t *k = vl_kept_load(ckpt, NULL, why, sizeof why);
    VL_CHECK(k);
    static float conv[32 * 4 * 8 * 8];
    for (size_t i = 0; i < sizeof conv / sizeof *conv; i++)
        conv[i] = (float)i;
    vl_tensor_t t[13];
    for (uint32_t i = 0; i < 12; i++)
        t[i] = k->weights->tensors[i];
    t[12] = (vl_tensor_t){.name = "conv.0.0.weight", .data = conv};
    VL_CHECK(vl_tensor_set_shape(&t[12], 4, (uint32_t[]){32, 4, 8, 8}) == 0);
    uint8_t *buf = NULL;
    size_t size = 0;
    vl_limits_t lim = vl_limits_default();
    vl_weights_t *w = NULL;
    VL_CHECK(vl_weights_encode("default", 7, t, 13, &buf, &size) == 0 &&
             vl_weights_decode(buf, size, &lim, &w) == VL_OK);
    free(buf);
    vl_weights_destroy(&k->weights);
    k->weights = w;
    VL_CHECK(vl_export_write(k, NULL, out, why, sizeof why) == 0);
    uint8_t *file = s_slurp(out, &size);
    VL_CHECK(file);
    uint64_t n = 0;
    for (int b = 0; b < 8; b++)
        n |= (uint64_t)file[b] << (8 * b);
    char *header = strndup((char *)file + 8, n);
    size_t b, e;
    VL_CHECK(strstr(header, "\"conv.0.0.weight\": {\"dtype\": \"F32\", \"shape\": [32, 4, 8, 8]"));
    VL_CHECK(strstr(header, "\"pi.0.weight\": {\"dtype\": \"F32\", \"shape\": [8, 4]"));
    VL_CHECK(strstr(header, "\"pi.0.bias\": {\"dtype\": \"F32\", \"shape\": [8]"));
    VL_CHECK(s_offsets(header, "conv.0.0.weight", &b, &e) == 0 && e - b == sizeof conv);
    VL_CHECK(memcmp(file + 8 + n + b, conv, sizeof conv) == 0);
    VL_CHECK(strstr(header, "\\\"conv.0.0.weight\\\": [32, 4, 8, 8]")); // the spec, escaped
    VL_CHECK(vl_export_json_path(out, json, sizeof json) == 0);
    size_t json_size = 0;
    char *text = (char *)s_slurp(json, &json_size);
    VL_CHECK(text && strstr(text, "\"shapes\": {\"pi.0.weight\": [8, 4], \"pi.0.bias\": [8]"));
    VL_CHECK(strstr(text, "\"conv.0.0.weight\": [32, 4, 8, 8]}"));
    free(text);
    free(header);
    free(file);
    vl_kept_destroy(&k);
    vl_policy_destroy(&p);
}

/* A checkpoint that keeps its spec plays only an env of its observation
   fields; one from before specs were kept, any env of its sizes. */
static void test_kept_fits_the_env_by_fields(void)
{
    char ckpt[512], why[1024];
    s_path(ckpt, sizeof ckpt, "fits.ckpt");
    vl_policy_t *p = s_write_ckpt(ckpt, 3, OBS);
    vl_kept_t *k = vl_kept_load(ckpt, NULL, why, sizeof why);
    VL_CHECK(k);
    vl_env_ops_t env = {.name = "bytes",
                        .obs_dim = OBS,
                        .action = vl_action_discrete(ACTS),
                        .obs_spec = {.n_fields = 1}};
    env.obs_spec.fields[0] = (vl_obs_field_t){.encoding = VL_OBS_U8, .ndim = 1, .shape = {OBS}};
    VL_CHECK(vl_kept_fits(k, &env, why, sizeof why) == 0); // no spec kept: its sizes alone
    k->has_spec = 1;
    k->spec.obs_spec = vl_obs_spec_flat(OBS);
    VL_CHECK(vl_kept_fits(k, &env, why, sizeof why) == -1);
    VL_CHECK(strstr(why, "reads observations f32[4]; env bytes gives u8[4]"));
    env.obs_spec = vl_obs_spec_flat(OBS);
    VL_CHECK(vl_kept_fits(k, &env, why, sizeof why) == 0);
    env.action = vl_action_discrete(ACTS + 1);
    VL_CHECK(vl_kept_fits(k, &env, why, sizeof why) == -1 &&
             strstr(why, "acts in discrete(3); env bytes gives 4 and discrete(4)"));
    vl_kept_destroy(&k);
    vl_policy_destroy(&p);
}

/* A box policy with normalisation, checkpointed as a learner does (its
   spec beside its weights): the export names its space and says its
   observations are normalised, and carries pi.logstd and the statistics
   as they were. */
static void test_export_box_policy_with_norm(void)
{
    char ckpt[512], out[512], json[512], why[1024];
    s_path(ckpt, sizeof ckpt, "box.ckpt");
    s_path(out, sizeof out, "box.safetensors");
    vl_spec_t spec = {.policy_id = "default",
                      .obs_spec = vl_obs_spec_flat(OBS),
                      .action = {.kind = VL_ENV_BOX, .dims = 2, .low = {-1, -2}, .high = {1, 2}},
                      .horizon = 16,
                      .hidden = HIDDEN};
    vl_model_spec_t *model = vl_model_spec_mlp(HIDDEN);
    vl_policy_t *p = vl_policy_new_spec(model, &spec.obs_spec, &spec.action, 1, 0, why, sizeof why);
    vl_model_spec_destroy(&model);
    VL_CHECK(p && vl_policy_norm_on(p, 0.99f) == 0 && vl_policy_tensor_count(p) == 16);
    const float seen[2 * OBS] = {1, 2, 3, 4, 3, 2, 1, 0};
    vl_norm_update_obs(vl_policy_norm(p), 2, seen);
    vl_tensor_t t[16];
    for (uint32_t i = 0; i < 16; i++)
        vl_policy_tensor(p, i, &t[i]);
    t[12].data[0] = -0.5f, t[12].data[1] = 0.25f; // pi.logstd
    size_t opt_size = vl_policy_optimizer_size(p);
    uint8_t *opt = malloc(opt_size);
    VL_CHECK(opt);
    vl_policy_save_optimizer(p, opt);
    vl_resume_state_t st = {.version = 3};
    int written = vl_resume_write(ckpt, "default", t, 16, opt, opt_size, &st, NULL, &spec);
    free(opt);
    VL_CHECK(written == 0);
    vl_kept_t *k = vl_kept_load(ckpt, NULL, why, sizeof why);
    VL_CHECK(k && k->has_spec && vl_action_is_box(&k->action) && k->num_actions == 2);
    VL_CHECK(vl_export_write(k, NULL, out, why, sizeof why) == 0);
    VL_CHECK(vl_export_json_path(out, json, sizeof json) == 0);
    size_t size = 0;
    char *text = (char *)s_slurp(json, &size);
    uint8_t *file = s_slurp(out, &size);
    VL_CHECK(text && file);
    VL_CHECK(strstr(text, "\"action_space\": {\"kind\": \"box\", \"dims\": 2, \"low\": [-1, -2], "
                          "\"high\": [1, 2]}"));
    VL_CHECK(strstr(text, "\"obs_norm\": true"));
    VL_CHECK(strstr(text, "\"pi\": \"mean (std = exp(pi.logstd))\""));
    VL_CHECK(strstr(text, "\"pi.logstd\": [2]") && strstr(text, "\"norm.state\": [4]"));
    uint64_t n = 0;
    for (int b = 0; b < 8; b++)
        n |= (uint64_t)file[b] << (8 * b);
    char *header = strndup((char *)file + 8, n);
    for (uint32_t i = 12; i < 16; i++) { // the log-std and the statistics, byte for byte
        size_t b, e;
        VL_CHECK(s_offsets(header, t[i].name, &b, &e) == 0);
        VL_CHECK(e - b == (size_t)t[i].rows * 4 && memcmp(file + 8 + n + b, t[i].data, e - b) == 0);
    }
    free(header);
    free(file);
    free(text);
    vl_kept_destroy(&k);
    vl_policy_destroy(&p);
}

/* A torch:MOD:FN checkpoint (a module of the user's own): kept as its spec
   and tensors with no C network, which the forward pass refuses; its export
   holds those tensors under their own names and names the model. */
static void test_kept_torch_module(void)
{
    char ckpt[512], out[512], why[1024];
    s_path(ckpt, sizeof ckpt, "torch.ckpt");
    s_path(out, sizeof out, "torch.safetensors");
    vl_spec_t spec = {.policy_id = "default",
                      .obs_spec = vl_obs_spec_flat(OBS),
                      .action = vl_action_discrete(ACTS),
                      .horizon = 16,
                      .hidden = HIDDEN,
                      .model = "torch:nets:build"};
    float w[ACTS * OBS], b[1] = {0.5f};
    for (uint32_t i = 0; i < ACTS * OBS; i++)
        w[i] = (float)i;
    vl_tensor_t t[2] = {{.name = "head.weight", .data = w}, {.name = "calls", .data = b}};
    VL_CHECK(vl_tensor_set_shape(&t[0], 2, (uint32_t[]){ACTS, OBS}) == 0);
    VL_CHECK(vl_tensor_set_shape(&t[1], 1, (uint32_t[]){1}) == 0);
    vl_resume_state_t st = {.version = 5};
    VL_CHECK(vl_resume_write(ckpt, "default", t, 2, NULL, 0, &st, NULL, &spec) == 0);
    vl_kept_t *k = vl_kept_load(ckpt, NULL, why, sizeof why);
    VL_CHECK(k && vl_kept_is_torch(k) && k->obs_dim == OBS && k->num_actions == ACTS);
    VL_CHECK(vl_kept_policy(k) == NULL && vl_kept_tensor_count(k) == 2);
    uint32_t dims[4], ndim = 0;
    const float *data = NULL;
    VL_CHECK(strcmp(vl_kept_tensor_at(k, 0, dims, &ndim, &data), "head.weight") == 0);
    VL_CHECK(ndim == 2 && dims[0] == ACTS && dims[1] == OBS && data[5] == 5.0f);
    VL_CHECK(vl_kept_tensor_at(k, 2, dims, &ndim, &data) == NULL);
    vl_env_field_t field;
    VL_CHECK(vl_kept_field(k, 0, &field) == 0 && field.ndim == 1 && field.shape[0] == OBS);
    VL_CHECK(vl_kept_field(k, 1, &field) == -1);
    float obs[OBS] = {0}, logp[ACTS];
    VL_CHECK(vl_kept_forward(ckpt, 1, OBS, ACTS, obs, logp, NULL, why, sizeof why) == -1 &&
             strstr(why, "torch:nets:build is a PyTorch module"));
    VL_CHECK(vl_export_write(k, NULL, out, why, sizeof why) == 0);
    size_t size = 0;
    char *text = (char *)s_slurp(out, &size);
    VL_CHECK(text && strstr(text + 8, "\\\"type\\\": \\\"torch\\\", \\\"model\\\": "
                                      "\\\"torch:nets:build\\\""));
    VL_CHECK(strstr(text + 8, "\"head.weight\": {\"dtype\": \"F32\", \"shape\": [3, 4]"));
    free(text);
    vl_kept_destroy(&k);
}

static void test_eval_stats(void)
{
    vl_eval_stats_t st = {0};
    vl_eval_stats_add(&st, 2, 10);
    vl_eval_stats_add(&st, 4, 30);
    double m, s;
    vl_eval_mean_std(st.n, st.ret_sum, st.ret_sq, &m, &s);
    VL_CHECK_NEAR(m, 3, 1e-12);
    VL_CHECK_NEAR(s, 1, 1e-12);
    VL_CHECK(st.ret_min == 2 && st.ret_max == 4 && st.len_min == 10 && st.len_max == 30);
}

int main(void)
{
    snprintf(s_dir, sizeof s_dir, "/tmp/vl_export_test.XXXXXX");
    if (!mkdtemp(s_dir))
        return 1;
    VL_RUN(test_kept_file);
    VL_RUN(test_kept_refuses_bad_files);
    VL_RUN(test_kept_run_dir);
    VL_RUN(test_arch_refuses_other_shapes);
    VL_RUN(test_safetensors_layout);
    VL_RUN(test_export_never_overwrites_json);
    VL_RUN(test_export_gives_every_dimension);
    VL_RUN(test_kept_fits_the_env_by_fields);
    VL_RUN(test_export_box_policy_with_norm);
    VL_RUN(test_kept_torch_module);
    VL_RUN(test_eval_stats);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", s_dir);
    if (system(cmd) != 0)
        return 1;
    return VL_DONE();
}
