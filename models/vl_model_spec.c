/*  vl_model_spec: see vl_model_spec.h.

    The parser reads one item (a layer or a preset) at a time: a name, then
    its numbers in parentheses. Each number is bounded where it is read and
    each layer is checked against the one before it where it is appended, so
    a refusal names the token the user wrote (a preset's name when the
    refused layer came from a preset). Text is hostile: its length is
    bounded before anything else, and tokens quoted in a message are cut
    short and have their unprintable bytes replaced. */
#include "vl_model_spec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/vl_log.h"
#include "../messages/vl_wire.h"

#define S_ARGS_MAX  4  // numbers in one item: conv's out, k, stride, pad
#define S_TOKEN_MAX 40 // bytes of a token quoted in a message

struct vl_model_spec_s {
    uint32_t n_layers;
    vl_model_layer_t layers[VL_MODEL_LAYERS_MAX];
    char torch[VL_MODEL_TORCH_MAX + 1]; // MOD:FN of a "torch:MOD:FN" spec (no layers), else ""
};

/* One number an item takes: its name in messages and its bounds. */
typedef struct {
    const char *name;
    uint32_t min, max;
} s_arg_t;

/* One item of the grammar: a layer, or a preset that expands into layers. */
typedef struct {
    const char *name;
    int kind;          // a vl_layer_kind_t, or -1 for a preset
    const char *usage; // what the item looks like, for messages
    uint32_t min_args, max_args;
    s_arg_t args[S_ARGS_MAX];
} s_item_t;

static const s_item_t s_items[] = {
    {.name = "conv",
     .kind = VL_LAYER_CONV,
     .usage = "conv(out,k,stride[,pad])",
     .min_args = 3,
     .max_args = 4,
     .args = {{"out", 1, VL_MODEL_WIDTH_MAX},
              {"k", 1, VL_MODEL_KERNEL_MAX},
              {"stride", 1, VL_MODEL_STRIDE_MAX},
              {"pad", 0, VL_MODEL_PAD_MAX}}},
    {.name = "linear",
     .kind = VL_LAYER_LINEAR,
     .usage = "linear(n)",
     .min_args = 1,
     .max_args = 1,
     .args = {{"n", 1, VL_MODEL_WIDTH_MAX}}},
    {.name = "lstm",
     .kind = VL_LAYER_LSTM,
     .usage = "lstm(n)",
     .min_args = 1,
     .max_args = 1,
     .args = {{"n", 1, VL_MODEL_WIDTH_MAX}}},
    {.name = "relu", .kind = VL_LAYER_RELU, .usage = "relu"},
    {.name = "tanh", .kind = VL_LAYER_TANH, .usage = "tanh"},
    {.name = "mlp",
     .kind = -1,
     .usage = "mlp or mlp(n)",
     .min_args = 0,
     .max_args = 1,
     .args = {{"n", 1, VL_MODEL_WIDTH_MAX}}},
    {.name = "cnn", .kind = -1, .usage = "cnn"},
};

#define S_EXPECTED                                                                                 \
    "expected conv(out,k,stride[,pad]), linear(n), lstm(n), relu, tanh or a preset (mlp, cnn)"

/* The cnn preset: the Nature-DQN torso (Mnih et al. 2015), whose three convs
   take an 84x84 frame to 20x20, 9x9 and 7x7 (3136 features at 64 channels)
   and need a frame of at least 36x36. */
static const vl_model_layer_t s_cnn[] = {
    {VL_LAYER_CONV, 32, 8, 4, 0},    {VL_LAYER_RELU, 0, 0, 0, 0},  {VL_LAYER_CONV, 64, 4, 2, 0},
    {VL_LAYER_RELU, 0, 0, 0, 0},     {VL_LAYER_CONV, 64, 3, 1, 0}, {VL_LAYER_RELU, 0, 0, 0, 0},
    {VL_LAYER_LINEAR, 512, 0, 0, 0}, {VL_LAYER_RELU, 0, 0, 0, 0},
};

/* The cnn preset on frames under 36 pixels a side: the same shape scaled
   down (half the channels, 3x3 kernels, stride 2 then 1, 256 units), which
   takes a 16x16 frame to 7x7 and 5x5 and needs at least 7x7. */
static const vl_model_layer_t s_cnn_small[] = {
    {VL_LAYER_CONV, 16, 3, 2, 0},    {VL_LAYER_RELU, 0, 0, 0, 0}, {VL_LAYER_CONV, 32, 3, 1, 0},
    {VL_LAYER_RELU, 0, 0, 0, 0},     {VL_LAYER_LINEAR, 256, 0, 0, 0},
    {VL_LAYER_RELU, 0, 0, 0, 0},
};
#define S_CNN_SMALL_BELOW 36 // frame side under which cnn is s_cnn_small

#define S_TORCH "torch:" // a spec naming a PyTorch module of the user's: torch:MOD:FN

/* The parser's state: the text, where it is, and where errors go. */
typedef struct {
    const char *text;
    size_t pos;
    char *err;
    size_t errlen;
    int small_frames; // an image field has a side under S_CNN_SMALL_BELOW
} s_parser_t;

/* Copies text[from, to) into out for a message: at most S_TOKEN_MAX bytes
   (then "..."), unprintable bytes as '?'. */
static void s_quote(const char *text, size_t from, size_t to, char *out)
{
    size_t n = 0;
    for (size_t i = from; i < to && n < S_TOKEN_MAX; i++) {
        unsigned char c = (unsigned char)text[i];
        out[n++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
    }
    if (to - from > S_TOKEN_MAX)
        memcpy(out + n, "...", 3), n += 3;
    out[n] = '\0';
}

static int s_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static int s_alpha(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static void s_skip_space(s_parser_t *p)
{
    while (s_space(p->text[p->pos]))
        p->pos++;
}

/* Returns the item named text[from, to), or NULL. */
static const s_item_t *s_item_find(const char *text, size_t from, size_t to)
{
    for (size_t i = 0; i < sizeof s_items / sizeof s_items[0]; i++)
        if (strlen(s_items[i].name) == to - from &&
            memcmp(s_items[i].name, text + from, to - from) == 0)
            return &s_items[i];
    return NULL;
}

/* Returns the end of the token that starts at `from`: a name and, when a
   '(' follows it, everything up to its ')' (or the end of the text). */
static size_t s_token_end(const char *text, size_t from)
{
    size_t i = from;
    while (s_alpha(text[i]) || (text[i] >= '0' && text[i] <= '9'))
        i++;
    size_t j = i;
    while (s_space(text[j]))
        j++;
    if (text[j] != '(')
        return i == from && text[i] ? i + 1 : i;
    while (text[j] && text[j] != ')')
        j++;
    return text[j] ? j + 1 : j;
}

/* Reads one number of item at p->pos into *value: digits only, within the
   argument's bounds. Returns 0, or -1 after writing why (the token being the
   item's text from `start`). */
static int s_number(s_parser_t *p, const s_item_t *item, uint32_t index, size_t start,
                    uint32_t *value)
{
    char token[S_TOKEN_MAX + 4], num[S_TOKEN_MAX + 4];
    const s_arg_t *arg = &item->args[index];
    s_skip_space(p);
    size_t from = p->pos;
    while (p->text[p->pos] && p->text[p->pos] != ',' && p->text[p->pos] != ')' &&
           !s_space(p->text[p->pos]))
        p->pos++;
    s_quote(p->text, start, s_token_end(p->text, start), token);
    s_quote(p->text, from, p->pos, num);
    uint64_t v = 0;
    int digits = p->pos > from && p->pos - from <= 10;
    for (size_t i = from; digits && i < p->pos; i++) {
        digits = p->text[i] >= '0' && p->text[i] <= '9';
        v = v * 10 + (uint64_t)(p->text[i] - '0');
    }
    if (!digits) {
        vl_why(p->err, p->errlen, "%s at column %zu: '%s' is not a number; expected %s, %s %u..%u",
               token, start + 1, num, item->usage, arg->name, arg->min, arg->max);
        return -1;
    }
    if (v < arg->min || v > arg->max) {
        vl_why(p->err, p->errlen, "%s at column %zu: %s %s is out of range; expected %u..%u", token,
               start + 1, arg->name, num, arg->min, arg->max);
        return -1;
    }
    *value = (uint32_t)v;
    return 0;
}

/* Reads item's "(n, ...)" at p->pos into args. Returns the count of numbers
   read, or -1 after writing why. */
static int s_args(s_parser_t *p, const s_item_t *item, size_t start, uint32_t *args)
{
    char token[S_TOKEN_MAX + 4];
    s_quote(p->text, start, s_token_end(p->text, start), token);
    s_skip_space(p);
    if (p->text[p->pos] != '(') {
        if (item->min_args == 0)
            return 0;
        vl_why(p->err, p->errlen, "%s at column %zu: missing '('; expected %s", token, start + 1,
               item->usage);
        return -1;
    }
    if (item->max_args == 0) {
        vl_why(p->err, p->errlen, "%s at column %zu: %s takes no numbers; expected %s", token,
               start + 1, item->name, item->usage);
        return -1;
    }
    p->pos++;
    uint32_t n = 0;
    for (;;) {
        if (n == item->max_args) {
            vl_why(p->err, p->errlen, "%s at column %zu: more than %u numbers; expected %s", token,
                   start + 1, item->max_args, item->usage);
            return -1;
        }
        if (s_number(p, item, n, start, &args[n]) != 0)
            return -1;
        n++;
        s_skip_space(p);
        char c = p->text[p->pos];
        if (c == ')')
            break;
        if (c != ',') {
            vl_why(p->err, p->errlen, "%s at column %zu: missing ')'; expected %s", token,
                   start + 1, item->usage);
            return -1;
        }
        p->pos++;
    }
    p->pos++;
    if (n < item->min_args) {
        vl_why(p->err, p->errlen, "%s at column %zu: %u number%s; expected %s", token, start + 1, n,
               n == 1 ? "" : "s", item->usage);
        return -1;
    }
    return (int)n;
}

/* Writes a layer's canonical text into out (at least 32 bytes). */
static void s_layer_str(const vl_model_layer_t *l, char *out, size_t size)
{
    switch (l->kind) {
    case VL_LAYER_CONV:
        if (l->pad)
            snprintf(out, size, "conv(%u,%u,%u,%u)", l->out, l->kernel, l->stride, l->pad);
        else
            snprintf(out, size, "conv(%u,%u,%u)", l->out, l->kernel, l->stride);
        break;
    case VL_LAYER_LINEAR:
        snprintf(out, size, "linear(%u)", l->out);
        break;
    case VL_LAYER_LSTM:
        snprintf(out, size, "lstm(%u)", l->out);
        break;
    case VL_LAYER_RELU:
        snprintf(out, size, "relu");
        break;
    default:
        snprintf(out, size, "tanh");
        break;
    }
}

static int s_activation(uint32_t kind)
{
    return kind == VL_LAYER_RELU || kind == VL_LAYER_TANH;
}

/* Appends layer l (written as token at column col) to spec, checking that it
   may follow the layer before it. Returns 0, or -1 after writing why. */
static int s_append(vl_model_spec_t *spec, const vl_model_layer_t *l, const char *token, size_t col,
                    char *err, size_t errlen)
{
    char prev[32] = "";
    const vl_model_layer_t *last = spec->n_layers ? &spec->layers[spec->n_layers - 1] : NULL;
    uint32_t front = VL_LAYER_CONV; // the furthest stage reached: conv, then linear, then lstm
    for (uint32_t i = 0; i < spec->n_layers; i++)
        if (spec->layers[i].kind == VL_LAYER_LINEAR || spec->layers[i].kind == VL_LAYER_LSTM)
            front = spec->layers[i].kind;
    if (last)
        s_layer_str(last, prev, sizeof prev);
    if (spec->n_layers == VL_MODEL_LAYERS_MAX) {
        vl_why(err, errlen, "%s at column %zu: more than %u layers (presets expanded)", token, col,
               VL_MODEL_LAYERS_MAX);
        return -1;
    }
    if (front == VL_LAYER_LSTM) {
        vl_why(err, errlen, "%s at column %zu follows lstm: lstm must be the last layer", token,
               col);
        return -1;
    }
    if (l->kind == VL_LAYER_CONV && front == VL_LAYER_LINEAR) {
        vl_why(err, errlen,
               "%s at column %zu comes after a linear layer: conv layers come first, then linear",
               token, col);
        return -1;
    }
    if (s_activation(l->kind) && (!last || s_activation(last->kind))) {
        vl_why(err, errlen,
               "%s at column %zu follows %s: an activation follows a conv or linear layer", token,
               col, last ? prev : "no layer");
        return -1;
    }
    spec->layers[spec->n_layers++] = *l;
    return 0;
}

/* Expands item (with its n numbers) into layers appended to spec. Returns 0,
   or -1 after writing why. */
static int s_expand(vl_model_spec_t *spec, const s_item_t *item, const uint32_t *args, int n,
                    const char *token, size_t col, int small_frames, char *err, size_t errlen)
{
    if (item->kind >= 0) {
        vl_model_layer_t l = {.kind = (uint32_t)item->kind};
        if (item->kind == VL_LAYER_CONV)
            l = (vl_model_layer_t){VL_LAYER_CONV, args[0], args[1], args[2], n > 3 ? args[3] : 0};
        else if (n > 0)
            l.out = args[0];
        return s_append(spec, &l, token, col, err, errlen);
    }
    if (strcmp(item->name, "cnn") == 0) {
        const vl_model_layer_t *cnn = small_frames ? s_cnn_small : s_cnn;
        size_t count = small_frames ? sizeof s_cnn_small / sizeof s_cnn_small[0]
                                    : sizeof s_cnn / sizeof s_cnn[0];
        for (size_t i = 0; i < count; i++)
            if (s_append(spec, &cnn[i], token, col, err, errlen) != 0)
                return -1;
        return 0;
    }
    uint32_t width = n > 0 ? args[0] : VL_MODEL_MLP_WIDTH;
    const vl_model_layer_t mlp[] = {{VL_LAYER_LINEAR, width, 0, 0, 0},
                                    {VL_LAYER_TANH, 0, 0, 0, 0},
                                    {VL_LAYER_LINEAR, width, 0, 0, 0},
                                    {VL_LAYER_TANH, 0, 0, 0, 0}};
    for (size_t i = 0; i < sizeof mlp / sizeof mlp[0]; i++)
        if (s_append(spec, &mlp[i], token, col, err, errlen) != 0)
            return -1;
    return 0;
}

/* Parses one item at p->pos (not at the end) into spec. Returns 0, or -1
   after writing why. */
static int s_item(s_parser_t *p, vl_model_spec_t *spec)
{
    char token[S_TOKEN_MAX + 4];
    size_t start = p->pos;
    while (s_alpha(p->text[p->pos]) || (p->text[p->pos] >= '0' && p->text[p->pos] <= '9'))
        p->pos++;
    const s_item_t *item = s_item_find(p->text, start, p->pos);
    if (!item) {
        if (p->pos == start) {
            s_quote(p->text, start, start + 1, token);
            vl_why(p->err, p->errlen, "unexpected '%s' at column %zu; " S_EXPECTED, token,
                   start + 1);
        } else {
            s_quote(p->text, start, p->pos, token);
            vl_why(p->err, p->errlen, "unknown layer '%s' at column %zu; " S_EXPECTED, token,
                   start + 1);
        }
        return -1;
    }
    size_t name_end = p->pos;
    uint32_t args[S_ARGS_MAX] = {0};
    int n = s_args(p, item, start, args);
    if (n < 0)
        return -1;
    s_quote(p->text, start, n > 0 ? p->pos : name_end, token);
    return s_expand(spec, item, args, n, token, start + 1, p->small_frames, p->err, p->errlen);
}

/* Returns the length of a dotted name at text (identifiers joined by
   '.'), or 0 when none starts there. */
static size_t s_dotted(const char *text)
{
    size_t i = 0;
    for (;;) {
        if (!s_alpha(text[i]))
            return 0;
        while (s_alpha(text[i]) || (text[i] >= '0' && text[i] <= '9'))
            i++;
        if (text[i] != '.')
            return i;
        i++;
    }
}

/* Reads "torch:MOD:FN" at p->pos (which starts with S_TORCH) into spec: a
   PyTorch module of the user's, which no C network runs, named by where
   its build function is. Returns 0, or -1 after writing why. */
static int s_torch(s_parser_t *p, vl_model_spec_t *spec)
{
    const char *name = p->text + p->pos + strlen(S_TORCH);
    size_t mod = s_dotted(name), fn = mod && name[mod] == ':' ? s_dotted(name + mod + 1) : 0;
    size_t len = fn ? mod + 1 + fn : 0, end = len;
    while (s_space(name[end]))
        end++;
    char token[S_TOKEN_MAX + 4];
    if (!len || name[end]) {
        s_quote(name, 0, strlen(name), token);
        vl_why(p->err, p->errlen,
               S_TORCH "%s at column %zu: expected " S_TORCH "package.module:function (a "
                       "--torch-model's name)",
               token, p->pos + 1);
        return -1;
    }
    if (len > VL_MODEL_TORCH_MAX) {
        vl_why(p->err, p->errlen, S_TORCH "%.40s...: longer than %u bytes", name,
               VL_MODEL_TORCH_MAX);
        return -1;
    }
    memcpy(spec->torch, name, len);
    spec->torch[len] = '\0';
    return 0;
}

/* Returns 1 if an image field of obs has a side under S_CNN_SMALL_BELOW. */
static int s_small_frames(const vl_obs_spec_t *obs)
{
    for (uint32_t i = 0; obs && i < obs->n_fields && i < VL_OBS_FIELDS_MAX; i++) {
        const vl_obs_field_t *f = &obs->fields[i];
        if (f->ndim == 3 && (f->shape[1] < S_CNN_SMALL_BELOW || f->shape[2] < S_CNN_SMALL_BELOW))
            return 1;
    }
    return 0;
}

vl_model_spec_t *vl_model_spec_parse(const char *text, char *err, size_t errlen)
{
    return vl_model_spec_parse_for(text, NULL, err, errlen);
}

vl_model_spec_t *vl_model_spec_parse_for(const char *text, const vl_obs_spec_t *obs, char *err,
                                         size_t errlen)
{
    if (!text) {
        vl_why(err, errlen,
               "no model spec; expected layers such as 'linear(64) tanh' or a preset "
               "(mlp, cnn)");
        return NULL;
    }
    size_t len = 0; // bounded: text may be a long hostile string
    while (len <= VL_MODEL_TEXT_MAX && text[len])
        len++;
    if (len > VL_MODEL_TEXT_MAX) {
        vl_why(err, errlen, "model spec longer than %u bytes", VL_MODEL_TEXT_MAX);
        return NULL;
    }
    vl_model_spec_t *spec = calloc(1, sizeof *spec);
    if (!spec) {
        vl_why(err, errlen, "no memory for a model spec");
        return NULL;
    }
    s_parser_t p = {.text = text, .err = err, .errlen = errlen, .small_frames = s_small_frames(obs)};
    s_skip_space(&p);
    if (strncmp(text + p.pos, S_TORCH, strlen(S_TORCH)) == 0) {
        if (s_torch(&p, spec) != 0)
            free(spec), spec = NULL;
        return spec;
    }
    for (; text[p.pos]; s_skip_space(&p))
        if (s_item(&p, spec) != 0) {
            free(spec);
            return NULL;
        }
    if (spec->n_layers == 0) {
        vl_why(err, errlen,
               "empty model spec; expected layers such as 'linear(64) tanh' or a "
               "preset (mlp, cnn)");
        free(spec);
        return NULL;
    }
    return spec;
}

vl_model_spec_t *vl_model_spec_for(const char *text, const vl_obs_spec_t *obs, uint32_t hidden,
                                   char *err, size_t errlen)
{
    char fallback[32];
    if (!text || !text[0]) {
        if (strcmp(vl_model_spec_default(obs), "cnn") == 0)
            snprintf(fallback, sizeof fallback, "cnn");
        else
            snprintf(fallback, sizeof fallback, "mlp(%u)", hidden);
        text = fallback;
    }
    vl_model_spec_t *spec = vl_model_spec_parse_for(text, obs, err, errlen);
    if (spec && !spec->torch[0] && vl_model_spec_check(spec, obs, err, errlen) != 0)
        vl_model_spec_destroy(&spec);
    return spec;
}

vl_model_spec_t *vl_model_spec_mlp(uint32_t width)
{
    if (width == 0 || width > VL_MODEL_WIDTH_MAX)
        return NULL;
    char text[32];
    snprintf(text, sizeof text, "mlp(%u)", width);
    return vl_model_spec_parse(text, NULL, 0);
}

void vl_model_spec_destroy(vl_model_spec_t **self_p)
{
    if (self_p && *self_p) {
        free(*self_p);
        *self_p = NULL;
    }
}

int vl_model_spec_format(const vl_model_spec_t *self, char *buf, size_t size)
{
    char text[VL_MODEL_TEXT_MAX + 1]; // 32 layers of at most 20 bytes and a space
    size_t n = self->torch[0] ? (size_t)snprintf(text, sizeof text, S_TORCH "%s", self->torch) : 0;
    for (uint32_t i = 0; i < self->n_layers; i++) {
        if (i)
            text[n++] = ' ';
        s_layer_str(&self->layers[i], text + n, sizeof text - n);
        n += strlen(text + n);
    }
    text[n] = '\0';
    if (size > 0)
        snprintf(buf, size, "%s", text);
    return n < size ? (int)n : -1;
}

int vl_model_spec_equal(const vl_model_spec_t *a, const vl_model_spec_t *b)
{
    if (a->n_layers != b->n_layers || strcmp(a->torch, b->torch) != 0)
        return 0;
    for (uint32_t i = 0; i < a->n_layers; i++) {
        const vl_model_layer_t *x = &a->layers[i], *y = &b->layers[i];
        if (x->kind != y->kind || x->out != y->out || x->kernel != y->kernel ||
            x->stride != y->stride || x->pad != y->pad)
            return 0;
    }
    return 1;
}

int vl_model_spec_has_conv(const vl_model_spec_t *self)
{
    for (uint32_t i = 0; i < self->n_layers; i++)
        if (self->layers[i].kind == VL_LAYER_CONV)
            return 1;
    return 0;
}

uint32_t vl_model_spec_state_size(const vl_model_spec_t *self)
{
    for (uint32_t i = 0; i < self->n_layers; i++)
        if (self->layers[i].kind == VL_LAYER_LSTM)
            return 2 * self->layers[i].out;
    return 0;
}

uint32_t vl_model_spec_count(const vl_model_spec_t *self)
{
    return self->n_layers;
}

const vl_model_layer_t *vl_model_spec_layer(const vl_model_spec_t *self, uint32_t i)
{
    return i < self->n_layers ? &self->layers[i] : NULL;
}

const char *vl_model_spec_default(const vl_obs_spec_t *obs)
{
    for (uint32_t i = 0; i < obs->n_fields && i < VL_OBS_FIELDS_MAX; i++)
        if (obs->fields[i].ndim == 3)
            return "cnn";
    return "mlp";
}

/* Writes one field as "u8[4x84x84]" into out (at least 64 bytes). */
static void s_field_str(const vl_obs_field_t *f, char *out, size_t size)
{
    size_t n = (size_t)snprintf(out, size, "%s[", vl_obs_encoding_str(f->encoding));
    for (uint32_t d = 0; d < f->ndim && d < VL_OBS_NDIM_MAX && n < size; d++)
        n += (size_t)snprintf(out + n, size - n, "%s%u", d ? "x" : "", f->shape[d]);
    if (n < size)
        snprintf(out + n, size - n, "]");
}

/* Returns the number of values in field f, capped at VL_MODEL_FEATURES_MAX + 1
   so that sums of a few stay far from overflow. */
static uint64_t s_field_values(const vl_obs_field_t *f)
{
    uint64_t n = 1;
    for (uint32_t d = 0; d < f->ndim && d < VL_OBS_NDIM_MAX; d++) {
        n *= f->shape[d];
        if (n > VL_MODEL_FEATURES_MAX)
            return (uint64_t)VL_MODEL_FEATURES_MAX + 1;
    }
    return n;
}

/* Runs image field `field` (shape {c, h, w}) through the spec's conv layers,
   writing each output shape into shapes as image number `image`. Returns the
   flattened output size, or 0 after writing why. */
/* Notes that layer l has a weight tensor of `values` floats, keeping the
   largest. */
static void s_weight(vl_model_shapes_t *shapes, uint32_t l, uint64_t values)
{
    if (values > shapes->largest) {
        shapes->largest = values;
        shapes->largest_layer = l;
    }
}

static uint64_t s_convs(const vl_model_spec_t *self, const vl_obs_spec_t *obs, uint32_t field,
                        uint32_t image, vl_model_shapes_t *shapes, char *err, size_t errlen)
{
    const vl_obs_field_t *f = &obs->fields[field];
    uint64_t c = f->shape[0], h = f->shape[1], w = f->shape[2];
    char fs[64], layer[40];
    s_field_str(f, fs, sizeof fs);
    uint32_t j = 0;
    for (uint32_t l = 0; l < self->n_layers; l++) {
        const vl_model_layer_t *cv = &self->layers[l];
        if (cv->kind != VL_LAYER_CONV)
            continue;
        s_layer_str(cv, layer, sizeof layer);
        uint64_t ph = h + 2u * cv->pad, pw = w + 2u * cv->pad;
        if (c == 0 || cv->kernel > ph || cv->kernel > pw) {
            vl_why(
                err, errlen,
                "%s (layer %u): kernel %ux%u is larger than its %sinput %llux%llu (field %u, %s)",
                layer, l + 1, cv->kernel, cv->kernel, cv->pad ? "padded " : "",
                (unsigned long long)ph, (unsigned long long)pw, field, fs);
            return 0;
        }
        shapes->params += (uint64_t)cv->out * c * cv->kernel * cv->kernel + cv->out;
        s_weight(shapes, l, (uint64_t)cv->out * c * cv->kernel * cv->kernel);
        c = cv->out, h = (ph - cv->kernel) / cv->stride + 1, w = (pw - cv->kernel) / cv->stride + 1;
        if (h * w > VL_MODEL_FEATURES_MAX || c * h * w > VL_MODEL_FEATURES_MAX) {
            vl_why(err, errlen,
                   "%s (layer %u): output %llux%llux%llu on field %u (%s) is above %u values",
                   layer, l + 1, (unsigned long long)c, (unsigned long long)h,
                   (unsigned long long)w, field, fs, VL_MODEL_FEATURES_MAX);
            return 0;
        }
        shapes->activations += c * h * w;
        if (shapes->activations > VL_MODEL_ACTIVATIONS_MAX) {
            vl_why(err, errlen,
                   "%s (layer %u): the conv outputs reach %llu values per observation on field "
                   "%u (%s); at most %u",
                   layer, l + 1, (unsigned long long)shapes->activations, field, fs,
                   VL_MODEL_ACTIVATIONS_MAX);
            return 0;
        }
        shapes->conv_out[image][j][0] = (uint32_t)c;
        shapes->conv_out[image][j][1] = (uint32_t)h;
        shapes->conv_out[image][j][2] = (uint32_t)w;
        j++;
    }
    return c * h * w;
}

/* Adds the linear and lstm layers' parameters to shapes, reading `in`
   features, and sets shapes->out. */
static void s_dense(const vl_model_spec_t *self, uint64_t in, vl_model_shapes_t *shapes)
{
    for (uint32_t l = 0; l < self->n_layers; l++) {
        uint64_t n = self->layers[l].out;
        if (self->layers[l].kind == VL_LAYER_LINEAR)
            shapes->params += n * in + n, s_weight(shapes, l, n * in), in = n;
        else if (self->layers[l].kind == VL_LAYER_LSTM)
            shapes->params += 4 * n * in + 4 * n * n + 8 * n,
                s_weight(shapes, l, 4 * n * (in > n ? in : n)), in = n;
    }
    shapes->out = (uint32_t)in;
}

/* Returns the index of the first conv layer, or the count when there is none. */
static uint32_t s_first_conv(const vl_model_spec_t *self)
{
    uint32_t l = 0;
    while (l < self->n_layers && self->layers[l].kind != VL_LAYER_CONV)
        l++;
    return l;
}

int vl_model_spec_shapes(const vl_model_spec_t *self, const vl_obs_spec_t *obs,
                         vl_model_shapes_t *shapes, char *err, size_t errlen)
{
    memset(shapes, 0, sizeof *shapes);
    if (self->torch[0]) {
        vl_why(err, errlen,
               "a PyTorch module of your own, which volley's C network cannot run: act with "
               "PYTHON -m volley actor --torch-model %s (the Python with volley's package: "
               "the checkout's .venv/bin/python after compose/setup.sh)",
               self->torch);
        return -1;
    }
    if (obs->n_fields == 0 || obs->n_fields > VL_OBS_FIELDS_MAX) {
        vl_why(err, errlen, "observation has %u fields; expected 1..%u", obs->n_fields,
               VL_OBS_FIELDS_MAX);
        return -1;
    }
    for (uint32_t l = 0; l < self->n_layers; l++)
        shapes->n_convs += self->layers[l].kind == VL_LAYER_CONV;
    uint64_t features = 0;
    for (uint32_t i = 0; i < obs->n_fields; i++) {
        const vl_obs_field_t *f = &obs->fields[i];
        uint64_t values = s_field_values(f);
        if (values > VL_MODEL_FEATURES_MAX) {
            char fs[64];
            s_field_str(f, fs, sizeof fs);
            vl_why(err, errlen, "field %u (%s) has more than %u values", i, fs,
                   VL_MODEL_FEATURES_MAX);
            return -1;
        }
        if (shapes->n_convs && f->ndim == 3) {
            shapes->image_field[shapes->n_images] = i;
            values = s_convs(self, obs, i, shapes->n_images++, shapes, err, errlen);
            if (values == 0)
                return -1;
        }
        shapes->field_offset[i] = (uint32_t)features;
        shapes->field_features[i] = (uint32_t)values;
        features += values;
        if (features > VL_MODEL_FEATURES_MAX) {
            vl_why(err, errlen, "features: %llu values through field %u; at most %u",
                   (unsigned long long)features, i, VL_MODEL_FEATURES_MAX);
            return -1;
        }
    }
    if (shapes->n_convs && shapes->n_images == 0) {
        char layer[40], os[VL_OBS_FIELDS_MAX * 64];
        uint32_t l = s_first_conv(self);
        s_layer_str(&self->layers[l], layer, sizeof layer);
        size_t n = 0;
        for (uint32_t i = 0; i < obs->n_fields && n < sizeof os; i++) {
            s_field_str(&obs->fields[i], os + n, sizeof os - n);
            n += strlen(os + n);
            if (i + 1 < obs->n_fields && n + 1 < sizeof os)
                os[n++] = ' ', os[n] = '\0';
        }
        vl_why(err, errlen,
               "%s (layer %u) needs an image field (3 dimensions, channels first); the "
               "observation is %s",
               layer, l + 1, os);
        return -1;
    }
    shapes->features = (uint32_t)features;
    s_dense(self, features, shapes);
    if (shapes->params > VL_MODEL_PARAMS_MAX) {
        vl_why(err, errlen, "the layers have %llu parameters on these %u features; at most %u",
               (unsigned long long)shapes->params, shapes->features, VL_MODEL_PARAMS_MAX);
        return -1;
    }
    // Weights travel as one message, whose receivers refuse more tensors or a larger one.
    vl_limits_t lim = vl_limits_default();
    uint32_t linears = 0;
    for (uint32_t l = 0; l < self->n_layers; l++)
        linears += self->layers[l].kind == VL_LAYER_LINEAR;
    shapes->tensors = shapes->n_convs ? 2 * (shapes->n_convs * shapes->n_images + linears) + 4
                                      : 4 * (linears + 1); // one torso; or two towers
    if (shapes->tensors > lim.max_tensors) {
        vl_why(err, errlen,
               "the network has %u tensors; a weights message carries at most %u (fewer layers "
               "or image fields)",
               shapes->tensors, lim.max_tensors);
        return -1;
    }
    uint32_t most = lim.max_tensor_elems;
    if (shapes->largest > most) {
        char layer[40];
        s_layer_str(&self->layers[shapes->largest_layer], layer, sizeof layer);
        vl_why(err, errlen,
               "%s (layer %u): its weight has %llu values on these %u features; a weights "
               "message carries at most %u per tensor",
               layer, shapes->largest_layer + 1, (unsigned long long)shapes->largest,
               shapes->features, most);
        return -1;
    }
    return 0;
}

int vl_model_spec_check(const vl_model_spec_t *self, const vl_obs_spec_t *obs, char *err,
                        size_t errlen)
{
    vl_model_shapes_t *shapes = malloc(sizeof *shapes);
    if (!shapes) {
        vl_why(err, errlen, "no memory to check a model spec");
        return -1;
    }
    int rc = vl_model_spec_shapes(self, obs, shapes, err, errlen);
    free(shapes);
    return rc;
}
