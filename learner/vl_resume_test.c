/*  Tests of vl_resume: a learner's checkpoint keeps its weights' shapes
    whole (a conv weight [32][4][8][8] comes back as one, not as a [32, 256]),
    a trainer's checkpoint still saves and loads, and weights with a bad
    shape in a checkpoint are refused naming the file and the reason. */
#include "vl_resume.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../store/vl_checkpoint.h"
#include "../tests/vl_test.h"

static char s_dir[256];

static void s_path(char *out, size_t size, const char *name)
{
    snprintf(out, size, "%s/%s", s_dir, name);
}

/* A conv torso's tensors: conv weight [32][4][8][8], its bias [32], a
   rank-3 [2][3][5] and a linear weight [16][256], filled with distinct
   values from storage (at least S_FLOATS). */
#define S_FLOATS (32 * 4 * 8 * 8 + 32 + 30 + 16 * 256)
static void s_cnn_tensors(vl_tensor_t t[4], float *storage)
{
    static const uint32_t dims[4][4] = {{32, 4, 8, 8}, {32}, {2, 3, 5}, {16, 256}};
    static const uint32_t ranks[4] = {4, 1, 3, 2};
    static const char *const names[4] = {"conv.0.0.weight", "conv.0.0.bias", "cube",
                                         "torso.0.weight"};
    for (size_t i = 0; i < S_FLOATS; i++)
        storage[i] = (float)i * 0.001f - 1.0f;
    size_t at = 0;
    for (int i = 0; i < 4; i++) {
        memset(&t[i], 0, sizeof t[i]);
        snprintf(t[i].name, sizeof t[i].name, "%s", names[i]);
        if (vl_tensor_set_shape(&t[i], ranks[i], dims[i]) != 0)
            abort();
        t[i].data = storage + at;
        at += vl_tensor_size(&t[i]);
    }
}

static void test_rank4_survives_save_and_load(void)
{
    static float storage[S_FLOATS];
    vl_tensor_t t[4];
    s_cnn_tensors(t, storage);
    char path[512], why[512], text[64];
    s_path(path, sizeof path, "cnn.ckpt");
    uint8_t opt[24] = {1, 2, 3};
    vl_resume_state_t st = {.version = 42, .trained = 7, .env_steps = 4096};
    VL_CHECK(vl_resume_write(path, "cnn", t, 4, opt, sizeof opt, &st, "model = cnn\n", NULL) == 0);
    vl_weights_t *w = vl_resume_read_weights(path, NULL, NULL, why, sizeof why);
    VL_CHECK(w && strcmp(w->policy_id, "cnn") == 0 && w->version == 42 && w->n_tensors == 4);
    VL_CHECK(strcmp(vl_tensor_shape_str(&w->tensors[0], text, sizeof text), "[32, 4, 8, 8]") == 0);
    VL_CHECK(strcmp(vl_tensor_shape_str(&w->tensors[2], text, sizeof text), "[2, 3, 5]") == 0);
    for (int i = 0; i < 4; i++)
        VL_CHECK(strcmp(w->tensors[i].name, t[i].name) == 0 &&
                 vl_tensor_same_shape(&w->tensors[i], &t[i]) &&
                 memcmp(w->tensors[i].data, t[i].data, vl_tensor_size(&t[i]) * 4) == 0);
    VL_CHECK(vl_tensors_checksum(w->tensors, 4) == vl_tensors_checksum(t, 4));
    vl_weights_destroy(&w);
    char config[64];
    VL_CHECK(vl_resume_config(path, config, sizeof config, why, sizeof why) == 0);
    VL_CHECK(strcmp(config, "model = cnn\n") == 0);
    vl_checkpoint_t *ck = vl_checkpoint_read(path, why, sizeof why);
    size_t size = 0;
    const void *got = ck ? vl_checkpoint_get(ck, "optimizer", &size) : NULL;
    VL_CHECK(got && size == sizeof opt && memcmp(got, opt, size) == 0);
    vl_checkpoint_destroy(&ck);
}

/* The trainer's own checkpoint (volley's MLP) saves and loads through the
   same path, its tensors' shapes unchanged. */
static void test_trainer_checkpoint_round_trip(void)
{
    vl_learner_config_t c = vl_learner_config_default();
    c.horizon = 8;
    c.batch_segments = 2;
    c.hidden = 16;
    char why[512];
    vl_engine_t *tr = vl_engine_new_learner(&c, NULL, why, sizeof why);
    VL_CHECK(tr);
    char path[512];
    s_path(path, sizeof path, "mlp.ckpt");
    vl_resume_state_t st = {.version = 5, .episodes = 3}, back;
    VL_CHECK(vl_resume_save(path, "default", tr, &st, NULL, NULL) == 0);
    vl_weights_t *w = vl_resume_read_weights(path, NULL, NULL, why, sizeof why);
    vl_tensor_t mine[VL_ENGINE_TENSORS_MAX];
    uint32_t n = vl_engine_tensors(tr, mine, VL_ENGINE_TENSORS_MAX);
    VL_CHECK(w && w->n_tensors == n);
    for (uint32_t i = 0; w && i < w->n_tensors; i++)
        VL_CHECK(vl_tensor_same_shape(&w->tensors[i], &mine[i]) && mine[i].ndim <= 2);
    vl_weights_destroy(&w);
    VL_CHECK(vl_resume_load(path, "default", tr, &back, why, sizeof why) == 0);
    VL_CHECK(back.version == 5 && back.episodes == 3);
    VL_CHECK(vl_resume_load(path, "other", tr, &back, why, sizeof why) == -1 &&
             strstr(why, "policy 'default'"));
    vl_engine_destroy(&tr);
}

/* A weights section whose rank-4 tensor has a dimension of 0 (its bytes
   edited in place, the checkpoint's CRCs made over them) is refused with
   the decoder's reason; a checkpoint without weights is named as such. */
static void test_bad_shape_in_a_checkpoint_refused(void)
{
    float data[6] = {0};
    vl_tensor_t t = {.name = "conv", .data = data};
    VL_CHECK(vl_tensor_set_shape(&t, 4, (uint32_t[]){3, 1, 1, 2}) == 0);
    uint8_t *buf = NULL;
    size_t size = 0;
    VL_CHECK(vl_weights_encode("cnn", 1, &t, 1, &buf, &size) == 0);
    static const uint8_t packed[] = {0x12, 0x04, 3, 1, 1, 2}; // shape, packed: 4 bytes
    uint8_t *at = memmem(buf, size, packed, sizeof packed);
    VL_CHECK(at);
    at[3] = 0; // [3, 0, 1, 2]
    char path[512], why[512];
    s_path(path, sizeof path, "bad.ckpt");
    vl_section_t sec[] = {{"weights", buf, size}};
    VL_CHECK(vl_checkpoint_write(path, sec, 1) == 0);
    free(buf);
    VL_CHECK(!vl_resume_read_weights(path, NULL, NULL, why, sizeof why));
    VL_CHECK(strstr(why, path) && strstr(why, "its weights are unreadable (sizes inconsistent)"));
    s_path(path, sizeof path, "none.ckpt");
    vl_section_t other[] = {{"state", data, sizeof data}};
    VL_CHECK(vl_checkpoint_write(path, other, 1) == 0);
    VL_CHECK(!vl_resume_read_weights(path, NULL, NULL, why, sizeof why) &&
             strstr(why, "no weights"));
}

int main(void)
{
    snprintf(s_dir, sizeof s_dir, "/tmp/vl_resume_test.XXXXXX");
    if (!mkdtemp(s_dir))
        return 1;
    VL_RUN(test_rank4_survives_save_and_load);
    VL_RUN(test_trainer_checkpoint_round_trip);
    VL_RUN(test_bad_shape_in_a_checkpoint_refused);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", s_dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", s_dir);
    return VL_DONE();
}
