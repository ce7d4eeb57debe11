/*  vl_model_spec_test: the spec's grammar, presets, canonical text, every
    refusal with its exact message, shapes through the cnn preset, and a
    fuzz loop over garbage and mutated specs. */
#include "vl_model_spec.h"

#include <stdlib.h>
#include <string.h>

#include "../common/vl_rng.h"
#include "../tests/vl_test.h"

#define S_FUZZ_SEED   20261125u
#define S_FUZZ_ROUNDS 200000

/* Returns an observation spec of one field with the given shape. */
static vl_obs_spec_t s_obs(uint32_t encoding, uint32_t ndim, uint32_t a, uint32_t b, uint32_t c)
{
    vl_obs_spec_t o = {.n_fields = 1};
    o.fields[0] = (vl_obs_field_t){.encoding = encoding, .ndim = ndim, .shape = {a, b, c}};
    return o;
}

/* Returns 1 if text parses and formats to want. */
static int s_canonical(const char *text, const char *want)
{
    char err[256] = "", buf[VL_MODEL_TEXT_MAX + 1];
    vl_model_spec_t *spec = vl_model_spec_parse(text, err, sizeof err);
    if (!spec) {
        fprintf(stderr, "'%s' refused: %s\n", text, err);
        return 0;
    }
    int n = vl_model_spec_format(spec, buf, sizeof buf);
    vl_model_spec_destroy(&spec);
    if (n < 0 || strcmp(buf, want) != 0 || (size_t)n != strlen(want)) {
        fprintf(stderr, "'%s' formats as '%s', want '%s'\n", text, buf, want);
        return 0;
    }
    return 1;
}

/* Returns 1 if text is refused with exactly want. */
static int s_refused(const char *text, const char *want)
{
    char err[256] = "";
    vl_model_spec_t *spec = vl_model_spec_parse(text, err, sizeof err);
    if (spec) {
        vl_model_spec_destroy(&spec);
        fprintf(stderr, "'%s' parsed, want refusal '%s'\n", text, want);
        return 0;
    }
    if (strcmp(err, want) != 0) {
        fprintf(stderr, "'%s' refused with\n  '%s', want\n  '%s'\n", text, err, want);
        return 0;
    }
    return 1;
}

/* Returns 1 if text parses and is refused on obs with exactly want. */
static int s_check_refused(const char *text, const vl_obs_spec_t *obs, const char *want)
{
    char err[256] = "";
    vl_model_spec_t *spec = vl_model_spec_parse(text, err, sizeof err);
    if (!spec) {
        fprintf(stderr, "'%s' refused by the parser: %s\n", text, err);
        return 0;
    }
    int rc = vl_model_spec_check(spec, obs, err, sizeof err);
    vl_model_spec_destroy(&spec);
    if (rc == 0 || strcmp(err, want) != 0) {
        fprintf(stderr, "'%s' checked %d with\n  '%s', want\n  '%s'\n", text, rc, err, want);
        return 0;
    }
    return 1;
}

static void test_layers_parse_to_canonical_text(void)
{
    VL_CHECK(s_canonical("conv(32,8,4) relu linear(512)", "conv(32,8,4) relu linear(512)"));
    VL_CHECK(s_canonical("  conv( 32 , 8,4 )\n\trelu  linear (512)tanh ",
                         "conv(32,8,4) relu linear(512) tanh"));
    VL_CHECK(s_canonical("conv(16,3,1,1) conv(16,3,1,0)", "conv(16,3,1,1) conv(16,3,1)"));
    VL_CHECK(s_canonical("linear(064) lstm(64)", "linear(64) lstm(64)"));
    VL_CHECK(s_canonical("lstm(1)", "lstm(1)"));
    VL_CHECK(s_canonical("conv(4096,32,32,31)", "conv(4096,32,32,31)"));
}

static void test_presets_expand_in_place(void)
{
    VL_CHECK(s_canonical("mlp", "linear(64) tanh linear(64) tanh"));
    VL_CHECK(s_canonical("mlp(128)", "linear(128) tanh linear(128) tanh"));
    VL_CHECK(s_canonical("cnn", "conv(32,8,4) relu conv(64,4,2) relu conv(64,3,1) relu "
                                "linear(512) relu"));
    VL_CHECK(s_canonical("cnn lstm(256)", "conv(32,8,4) relu conv(64,4,2) relu conv(64,3,1) "
                                          "relu linear(512) relu lstm(256)"));
    VL_CHECK(s_canonical("mlp linear(8)", "linear(64) tanh linear(64) tanh linear(8)"));
    vl_model_spec_t *a = vl_model_spec_mlp(VL_MODEL_MLP_WIDTH);
    vl_model_spec_t *b = vl_model_spec_parse("mlp", NULL, 0);
    VL_CHECK(a && b && vl_model_spec_equal(a, b));
    VL_CHECK(vl_model_spec_count(a) == 4);
    VL_CHECK(vl_model_spec_layer(a, 0)->kind == VL_LAYER_LINEAR);
    VL_CHECK(vl_model_spec_layer(a, 0)->out == 64);
    VL_CHECK(vl_model_spec_layer(a, 1)->kind == VL_LAYER_TANH);
    VL_CHECK(vl_model_spec_layer(a, 4) == NULL);
    VL_CHECK(vl_model_spec_mlp(0) == NULL);
    VL_CHECK(vl_model_spec_mlp(VL_MODEL_WIDTH_MAX + 1) == NULL);
    vl_model_spec_destroy(&a);
    vl_model_spec_destroy(&a);
    vl_model_spec_destroy(&b);
    VL_CHECK(a == NULL && b == NULL);
}

static void test_default_preset_follows_the_observation(void)
{
    vl_obs_spec_t vec = s_obs(VL_OBS_F32, 1, 4, 0, 0);
    vl_obs_spec_t img = s_obs(VL_OBS_U8, 3, 4, 84, 84);
    VL_CHECK(strcmp(vl_model_spec_default(&vec), "mlp") == 0);
    VL_CHECK(strcmp(vl_model_spec_default(&img), "cnn") == 0);
}

static void test_format_reports_a_small_buffer(void)
{
    vl_model_spec_t *spec = vl_model_spec_parse("linear(64) tanh", NULL, 0);
    VL_CHECK(spec);
    char buf[16];
    VL_CHECK(vl_model_spec_format(spec, buf, sizeof buf) == 15);
    VL_CHECK(vl_model_spec_format(spec, buf, 15) == -1);
    VL_CHECK(strcmp(buf, "linear(64) tan") == 0);
    vl_model_spec_destroy(&spec);
}

static void test_parser_refusals_name_the_token(void)
{
    VL_CHECK(s_refused("", "empty model spec; expected layers such as 'linear(64) tanh' or a "
                           "preset (mlp, cnn)"));
    VL_CHECK(s_refused(" \t\n", "empty model spec; expected layers such as 'linear(64) tanh' or "
                                "a preset (mlp, cnn)"));
    VL_CHECK(s_refused("linear(64) dense(3)",
                       "unknown layer 'dense' at column 12; expected conv(out,k,stride[,pad]), "
                       "linear(n), lstm(n), relu, tanh or a preset (mlp, cnn)"));
    VL_CHECK(s_refused("linear(64), tanh",
                       "unexpected ',' at column 11; expected conv(out,k,stride[,pad]), "
                       "linear(n), lstm(n), relu, tanh or a preset (mlp, cnn)"));
    VL_CHECK(s_refused("linear(6x4)", "linear(6x4) at column 1: '6x4' is not a number; expected "
                                      "linear(n), n 1..4096"));
    VL_CHECK(s_refused("linear(-1)", "linear(-1) at column 1: '-1' is not a number; expected "
                                     "linear(n), n 1..4096"));
    VL_CHECK(s_refused("conv(32,,4)", "conv(32,,4) at column 1: '' is not a number; expected "
                                      "conv(out,k,stride[,pad]), k 1..32"));
    VL_CHECK(s_refused("linear(99999999999)",
                       "linear(99999999999) at column 1: '99999999999' is not a number; expected "
                       "linear(n), n 1..4096"));
    VL_CHECK(
        s_refused("linear(0)", "linear(0) at column 1: n 0 is out of range; expected 1..4096"));
    VL_CHECK(s_refused("linear(4097)",
                       "linear(4097) at column 1: n 4097 is out of range; expected 1..4096"));
    VL_CHECK(s_refused("conv(8,33,1)",
                       "conv(8,33,1) at column 1: k 33 is out of range; expected 1..32"));
    VL_CHECK(s_refused("conv(8,3,0)",
                       "conv(8,3,0) at column 1: stride 0 is out of range; expected 1..32"));
    VL_CHECK(s_refused("conv(8,3,1,32)",
                       "conv(8,3,1,32) at column 1: pad 32 is out of range; expected 0..31"));
    VL_CHECK(s_refused("conv(32,8)",
                       "conv(32,8) at column 1: 2 numbers; expected conv(out,k,stride[,pad])"));
    VL_CHECK(s_refused("conv(1,2,3,4,5)", "conv(1,2,3,4,5) at column 1: more than 4 numbers; "
                                          "expected conv(out,k,stride[,pad])"));
    VL_CHECK(s_refused("conv(32,8,4",
                       "conv(32,8,4 at column 1: missing ')'; expected conv(out,k,stride[,pad])"));
    VL_CHECK(
        s_refused("linear(64 32)", "linear(64 32) at column 1: missing ')'; expected linear(n)"));
    VL_CHECK(s_refused("linear 64", "linear at column 1: missing '('; expected linear(n)"));
    VL_CHECK(s_refused("relu(2)", "relu(2) at column 1: relu takes no numbers; expected relu"));
}

static void test_order_refusals_name_the_token(void)
{
    VL_CHECK(s_refused("linear(64) conv(32,8,4)",
                       "conv(32,8,4) at column 12 comes after a linear layer: conv layers come "
                       "first, then linear"));
    VL_CHECK(s_refused("mlp cnn", "cnn at column 5 comes after a linear layer: conv layers come "
                                  "first, then linear"));
    VL_CHECK(s_refused("lstm(64) lstm(64)",
                       "lstm(64) at column 10 follows lstm: lstm must be the last layer"));
    VL_CHECK(s_refused("linear(8) lstm(8) tanh",
                       "tanh at column 19 follows lstm: lstm must be the last layer"));
    VL_CHECK(s_refused("relu linear(8)",
                       "relu at column 1 follows no layer: an activation follows a conv or "
                       "linear layer"));
    VL_CHECK(s_refused("linear(8) tanh relu",
                       "relu at column 16 follows tanh: an activation follows a conv or linear "
                       "layer"));
    char text[33 * 11 + 1] = "";
    for (int i = 0; i < 33; i++)
        strcat(text, "linear(8) ");
    VL_CHECK(s_refused(text, "linear(8) at column 321: more than 32 layers (presets expanded)"));
    char *big = malloc(VL_MODEL_TEXT_MAX + 2);
    VL_CHECK(big);
    memset(big, ' ', VL_MODEL_TEXT_MAX + 1);
    big[VL_MODEL_TEXT_MAX + 1] = '\0';
    int ok = s_refused(big, "model spec longer than 4096 bytes");
    big[VL_MODEL_TEXT_MAX] = '\0';
    ok = ok && s_refused(big, "empty model spec; expected layers such as 'linear(64) tanh' or a "
                              "preset (mlp, cnn)");
    free(big);
    VL_CHECK(ok);
    VL_CHECK(s_refused(NULL, "no model spec; expected layers such as 'linear(64) tanh' or a "
                             "preset (mlp, cnn)"));
}

static void test_cnn_on_nature_frames_gives_3136_features(void)
{
    vl_obs_spec_t obs = s_obs(VL_OBS_U8, 3, 4, 84, 84);
    vl_model_spec_t *spec = vl_model_spec_parse("cnn", NULL, 0);
    VL_CHECK(spec);
    vl_model_shapes_t sh;
    char err[256] = "";
    int rc = vl_model_spec_shapes(spec, &obs, &sh, err, sizeof err);
    vl_model_spec_destroy(&spec);
    VL_CHECK(rc == 0);
    VL_CHECK(sh.n_convs == 3 && sh.n_images == 1 && sh.image_field[0] == 0);
    const uint32_t want[3][3] = {{32, 20, 20}, {64, 9, 9}, {64, 7, 7}};
    for (int j = 0; j < 3; j++)
        for (int d = 0; d < 3; d++)
            VL_CHECK(sh.conv_out[0][j][d] == want[j][d]);
    VL_CHECK(sh.features == 3136);
    VL_CHECK(sh.out == 512);
    // torch's Nature DQN torso: 8*8*4*32+32, 4*4*32*64+64, 3*3*64*64+64, 3136*512+512
    VL_CHECK(sh.params == 8224 + 32832 + 36928 + 1606144);
}

/* catch's 16x16 screen is too small for the Nature torso: parsed for it,
   cnn is the scaled-down torso, which fits; parsed for 84x84 frames (or none)
   it stays the Nature torso. */
static void test_cnn_scales_down_for_small_frames(void)
{
    vl_obs_spec_t small = s_obs(VL_OBS_U2, 3, 1, 16, 16), nature = s_obs(VL_OBS_U8, 3, 4, 84, 84);
    char err[256] = "", buf[VL_MODEL_TEXT_MAX + 1];
    vl_model_spec_t *spec = vl_model_spec_parse_for("cnn", &small, err, sizeof err);
    VL_CHECK(spec);
    vl_model_spec_format(spec, buf, sizeof buf);
    VL_CHECK(strcmp(buf, "conv(16,3,2) relu conv(32,3,1) relu linear(256) relu") == 0);
    vl_model_shapes_t sh;
    VL_CHECK(vl_model_spec_shapes(spec, &small, &sh, err, sizeof err) == 0);
    VL_CHECK(sh.conv_out[0][0][1] == 7 && sh.conv_out[0][1][1] == 5 && sh.features == 800);
    vl_model_spec_destroy(&spec);
    spec = vl_model_spec_parse_for("cnn", &nature, err, sizeof err);
    VL_CHECK(spec);
    vl_model_spec_format(spec, buf, sizeof buf);
    VL_CHECK(strncmp(buf, "conv(32,8,4) relu", 17) == 0);
    vl_model_spec_destroy(&spec);
}

static void test_images_and_vectors_concatenate(void)
{
    vl_obs_spec_t obs = {.n_fields = 3};
    obs.fields[0] = (vl_obs_field_t){.encoding = VL_OBS_F32, .ndim = 1, .shape = {3}};
    obs.fields[1] = (vl_obs_field_t){.encoding = VL_OBS_U2, .ndim = 3, .shape = {1, 10, 12}};
    obs.fields[2] = (vl_obs_field_t){.encoding = VL_OBS_U1, .ndim = 2, .shape = {2, 5}};
    vl_model_spec_t *spec = vl_model_spec_parse("conv(8,3,1,1) relu conv(4,3,2) linear(16) "
                                                "lstm(5)",
                                                NULL, 0);
    VL_CHECK(spec);
    vl_model_shapes_t sh;
    int rc = vl_model_spec_shapes(spec, &obs, &sh, NULL, 0);
    vl_model_spec_destroy(&spec);
    VL_CHECK(rc == 0);
    VL_CHECK(sh.n_images == 1 && sh.image_field[0] == 1);
    // 10x12 padded to 12x14 -> 10x12; then (10-3)/2+1 = 4, (12-3)/2+1 = 5
    VL_CHECK(sh.conv_out[0][0][0] == 8 && sh.conv_out[0][0][1] == 10 && sh.conv_out[0][0][2] == 12);
    VL_CHECK(sh.conv_out[0][1][0] == 4 && sh.conv_out[0][1][1] == 4 && sh.conv_out[0][1][2] == 5);
    VL_CHECK(sh.field_offset[0] == 0 && sh.field_features[0] == 3);
    VL_CHECK(sh.field_offset[1] == 3 && sh.field_features[1] == 80);
    VL_CHECK(sh.field_offset[2] == 83 && sh.field_features[2] == 10);
    VL_CHECK(sh.features == 93 && sh.out == 5);
    uint64_t convs = (8 * 1 * 9 + 8) + (4 * 8 * 9 + 4);
    uint64_t dense = (16 * 93 + 16) + (4 * 5 * 16 + 4 * 5 * 5 + 8 * 5);
    VL_CHECK(sh.params == convs + dense);
}

static void test_mlp_reads_any_field_as_values(void)
{
    vl_obs_spec_t obs = s_obs(VL_OBS_U8, 3, 2, 4, 4);
    vl_model_spec_t *spec = vl_model_spec_parse("mlp", NULL, 0);
    VL_CHECK(spec);
    vl_model_shapes_t sh;
    VL_CHECK(vl_model_spec_shapes(spec, &obs, &sh, NULL, 0) == 0);
    vl_model_spec_destroy(&spec);
    VL_CHECK(sh.n_convs == 0 && sh.n_images == 0);
    VL_CHECK(sh.features == 32 && sh.out == 64);
    VL_CHECK(sh.params == (64 * 32 + 64) + (64 * 64 + 64));
}

static void test_check_refusals_name_the_layer_and_sizes(void)
{
    vl_obs_spec_t vec = s_obs(VL_OBS_F32, 1, 4, 0, 0);
    VL_CHECK(s_check_refused("conv(32,8,4) linear(8)", &vec,
                             "conv(32,8,4) (layer 1) needs an image field (3 dimensions, "
                             "channels first); the observation is f32[4]"));
    vl_obs_spec_t two = {.n_fields = 2};
    two.fields[0] = (vl_obs_field_t){.encoding = VL_OBS_U2, .ndim = 2, .shape = {16, 16}};
    two.fields[1] = (vl_obs_field_t){.encoding = VL_OBS_F32, .ndim = 1, .shape = {2}};
    VL_CHECK(s_check_refused("cnn", &two,
                             "conv(32,8,4) (layer 1) needs an image field (3 dimensions, "
                             "channels first); the observation is u2[16x16] f32[2]"));
    vl_obs_spec_t small = s_obs(VL_OBS_U8, 3, 1, 16, 16);
    VL_CHECK(s_check_refused("cnn", &small,
                             "conv(64,4,2) (layer 3): kernel 4x4 is larger than its input 3x3 "
                             "(field 0, u8[1x16x16])"));
    vl_obs_spec_t tiny = s_obs(VL_OBS_U8, 3, 1, 2, 9);
    VL_CHECK(s_check_refused("conv(4,5,1,1)", &tiny,
                             "conv(4,5,1,1) (layer 1): kernel 5x5 is larger than its padded "
                             "input 4x11 (field 0, u8[1x2x9])"));
    vl_obs_spec_t wide = s_obs(VL_OBS_F32, 1, 1u << 20, 0, 0);
    VL_CHECK(s_check_refused("linear(4096) linear(4096)", &wide,
                             "the layers have 4311752704 parameters on these 1048576 features; "
                             "at most 33554432"));
    vl_obs_spec_t huge = s_obs(VL_OBS_U8, 3, 4096, 4096, 4096);
    VL_CHECK(s_check_refused("conv(1,1,1)", &huge,
                             "field 0 (u8[4096x4096x4096]) has more than 16777216 values"));
    vl_obs_spec_t frame = s_obs(VL_OBS_U8, 3, 1, 4096, 4096);
    VL_CHECK(s_check_refused("conv(4096,1,1)", &frame,
                             "conv(4096,1,1) (layer 1): output 4096x4096x4096 on field 0 "
                             "(u8[1x4096x4096]) is above 16777216 values"));
    vl_obs_spec_t mid = s_obs(VL_OBS_U8, 3, 1, 64, 64); // each output 1024x126x126 fits
    VL_CHECK(s_check_refused("conv(1024,1,1,31) conv(1024,1,1)", &mid,
                             "conv(1024,1,1) (layer 2): the conv outputs reach 32514048 values "
                             "per observation on field 0 (u8[1x64x64]); at most 16777216"));
    VL_CHECK(s_check_refused("conv(1,1,1,1) linear(4096)", &mid, // 66x66 features
                             "linear(4096) (layer 2): its weight has 17842176 values on these "
                             "4356 features; a weights message carries at most 16777216 per "
                             "tensor"));
    vl_obs_spec_t none = {.n_fields = 0};
    VL_CHECK(s_check_refused("mlp", &none, "observation has 0 fields; expected 1..8"));
}

/* Checks that text either is refused with a one-line message or parses to a
   spec whose canonical text parses back to an equal spec. Returns 1 if so. */
static int s_survives(const char *text)
{
    char err[256] = "", buf[VL_MODEL_TEXT_MAX + 1];
    vl_model_spec_t *spec = vl_model_spec_parse(text, err, sizeof err);
    if (!spec)
        return err[0] != '\0' && strchr(err, '\n') == NULL;
    int ok = vl_model_spec_format(spec, buf, sizeof buf) >= 0;
    vl_model_spec_t *again = ok ? vl_model_spec_parse(buf, err, sizeof err) : NULL;
    ok = again && vl_model_spec_equal(spec, again);
    vl_obs_spec_t obs = s_obs(VL_OBS_U8, 3, 3, 40, 40);
    ok = ok && (vl_model_spec_check(spec, &obs, err, sizeof err) == 0 || err[0]);
    if (!ok)
        fprintf(stderr, "'%s' -> '%s' does not round-trip\n", text, buf);
    vl_model_spec_destroy(&spec);
    vl_model_spec_destroy(&again);
    return ok;
}

static void test_fuzz_never_crashes_and_round_trips(void)
{
    static const char *const seeds[] = {"cnn lstm(256)", "conv(16,3,1,1) relu linear(64) tanh",
                                        "mlp(8) lstm(4)", "linear(1)"};
    static const char alphabet[] = "convlinearstmhumpcb()0123456789, \t\n-x";
    vl_rng_t rng;
    vl_rng_seed(&rng, S_FUZZ_SEED);
    int parsed = 0;
    char text[128];
    for (int r = 0; r < S_FUZZ_ROUNDS; r++) {
        size_t n;
        if (r % 2) { // a valid spec with a few bytes changed, digits to digits
            snprintf(text, sizeof text, "%s", seeds[vl_rng_below(&rng, 4)]);
            n = strlen(text);
            for (int m = (int)vl_rng_below(&rng, 3); m >= 0; m--) {
                size_t at = vl_rng_below(&rng, (uint32_t)n);
                int digit = text[at] >= '0' && text[at] <= '9';
                text[at] = digit ? (char)('0' + vl_rng_below(&rng, 10))
                                 : alphabet[vl_rng_below(&rng, sizeof alphabet - 1)];
            }
        } else { // garbage: grammar characters, or any byte
            n = vl_rng_below(&rng, sizeof text - 1);
            int any = vl_rng_below(&rng, 4) == 0;
            for (size_t i = 0; i < n; i++) {
                uint32_t v = (uint32_t)vl_rng_next(&rng);
                text[i] = any ? (char)(1 + v % 255) : alphabet[v % (sizeof alphabet - 1)];
            }
        }
        text[n] = '\0';
        char err[256];
        vl_model_spec_t *spec = vl_model_spec_parse(text, err, sizeof err);
        parsed += spec != NULL;
        vl_model_spec_destroy(&spec);
        if (!s_survives(text)) {
            fprintf(stderr, "fuzz seed %u round %d\n", S_FUZZ_SEED, r);
            VL_CHECK(0);
        }
    }
    printf("fuzz: %d of %d inputs parsed\n", parsed, S_FUZZ_ROUNDS);
    VL_CHECK(parsed > S_FUZZ_ROUNDS / 40); // the mutations reach past the parser
}

int main(void)
{
    VL_RUN(test_layers_parse_to_canonical_text);
    VL_RUN(test_presets_expand_in_place);
    VL_RUN(test_default_preset_follows_the_observation);
    VL_RUN(test_format_reports_a_small_buffer);
    VL_RUN(test_parser_refusals_name_the_token);
    VL_RUN(test_order_refusals_name_the_token);
    VL_RUN(test_cnn_on_nature_frames_gives_3136_features);
    VL_RUN(test_cnn_scales_down_for_small_frames);
    VL_RUN(test_images_and_vectors_concatenate);
    VL_RUN(test_mlp_reads_any_field_as_values);
    VL_RUN(test_check_refusals_name_the_layer_and_sizes);
    VL_RUN(test_fuzz_never_crashes_and_round_trips);
    return VL_DONE();
}
