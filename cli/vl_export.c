/*  vl_export: a kept policy as safetensors plus a JSON of its architecture
    and spec (format in vl_export.h). */
#include "vl_export.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/vl_flags.h"
#include "../common/vl_opts.h"
#include "../messages/vl_obs.h"
#include "../models/vl_model_spec.h"

#define S_ALIGN       8 // safetensors pads its header so the data starts 8-aligned
#define S_FORMAT      "volley.policy"
#define S_FORMAT_VERS 3 // 3: action spaces and statistics; 2: any model spec

/* Writes s as a JSON string (quoted, escaped) to f. */
static void s_json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20 || *p == 0x7f)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

/* Writes a float as a JSON number, or null when it is not finite. */
static void s_json_float(FILE *f, float x)
{
    if (isfinite(x))
        fprintf(f, "%.9g", (double)x);
    else
        fputs("null", f);
}

/* Writes the env's observation fields as a JSON array. */
static void s_json_fields(FILE *f, const vl_env_ops_t *env)
{
    fputs("[", f);
    for (uint32_t i = 0; i < env->obs_spec.n_fields; i++) {
        const vl_obs_field_t *fl = &env->obs_spec.fields[i];
        fprintf(f, "%s{\"encoding\": \"%s\", \"shape\": [", i ? ", " : "",
                vl_obs_encoding_str(fl->encoding));
        for (uint32_t d = 0; d < fl->ndim; d++)
            fprintf(f, "%s%u", d ? ", " : "", fl->shape[d]);
        fputs("]", f);
        if (fl->encoding == VL_OBS_F32 && env->low[i] < env->high[i]) {
            fputs(", \"low\": ", f);
            s_json_float(f, env->low[i]);
            fputs(", \"high\": ", f);
            s_json_float(f, env->high[i]);
        }
        fputs("}", f);
    }
    fputs("]", f);
}

/* Writes the observation fields the network reads, as a JSON array of
   {"encoding", "shape"}: its spec's, or one f32 field of obs_dim values
   for a checkpoint from before specs were kept. */
static void s_json_net_fields(FILE *f, const vl_kept_t *kept)
{
    vl_obs_spec_t flat = vl_obs_spec_flat(kept->obs_dim);
    const vl_obs_spec_t *obs = kept->has_spec ? &kept->spec.obs_spec : &flat;
    fputs("[", f);
    for (uint32_t i = 0; i < obs->n_fields; i++) {
        const vl_obs_field_t *fl = &obs->fields[i];
        fprintf(f, "%s{\"encoding\": \"%s\", \"shape\": [", i ? ", " : "",
                vl_obs_encoding_str(fl->encoding));
        for (uint32_t d = 0; d < fl->ndim; d++)
            fprintf(f, "%s%u", d ? ", " : "", fl->shape[d]);
        fputs("]}", f);
    }
    fputs("]", f);
}

/* Writes an action space as JSON: {"kind": "discrete"|"multi_discrete"|"box",
   "n": [...]} or {"kind": "box", "low": [...], "high": [...]}. */
static void s_json_action(FILE *f, const vl_action_spec_t *a)
{
    static const char *const kinds[] = {"discrete", "multi_discrete", "box"};
    int box = vl_action_is_box(a);
    fprintf(f, "{\"kind\": \"%s\", \"dims\": %u", kinds[a->kind], a->dims);
    fputs(box ? ", \"low\": [" : ", \"n\": [", f);
    for (uint32_t d = 0; d < a->dims; d++) {
        fputs(d ? ", " : "", f);
        if (box)
            s_json_float(f, a->low[d]);
        else
            fprintf(f, "%u", a->n[d]);
    }
    fputs("]", f);
    for (uint32_t d = 0; box && d < a->dims; d++) {
        fputs(d ? ", " : ", \"high\": [", f);
        s_json_float(f, a->high[d]);
    }
    fputs(box ? "]}" : "}", f);
}

/* Writes the env part of the spec: null when unknown. */
static void s_json_env(FILE *f, const vl_kept_t *kept, const vl_env_ops_t *env)
{
    if (!env && !kept->env[0]) {
        fputs("null", f);
        return;
    }
    fputs("{\"name\": ", f);
    s_json_str(f, env ? env->name : kept->env);
    fputs(", \"path\": ", f);
    if (env && env->path)
        s_json_str(f, env->path);
    else
        fputs("null", f);
    fputs(", \"arg\": ", f);
    if (kept->env_arg[0])
        s_json_str(f, kept->env_arg);
    else
        fputs("null", f);
    if (env) {
        fputs(", \"observation_fields\": ", f);
        s_json_fields(f, env);
        fprintf(f, ", \"num_actions\": %u, \"action_space\": ", vl_action_outputs(&env->action));
        s_json_action(f, &env->action);
        if (env->has_solved_return) {
            fputs(", \"solved_return\": ", f);
            s_json_float(f, env->solved_return);
        }
    }
    fputs("}", f);
}

/* Returns the JSON of kept's architecture and spec (caller frees), or NULL
   on no memory. */
static char *s_spec_json(const vl_kept_t *kept, const vl_env_ops_t *env)
{
    char *buf = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&buf, &size);
    if (!f)
        return NULL;
    fprintf(f, "{\"format\": \"%s\", \"format_version\": %d, \"policy\": ", S_FORMAT,
            S_FORMAT_VERS);
    s_json_str(f, kept->weights->policy_id);
    char model[VL_SPEC_MODEL_MAX];
    vl_kept_model(kept, model, sizeof model);
    int conv = strstr(model, "conv(") != NULL;
    fprintf(f, ", \"version\": %llu,\n \"architecture\": {\"type\": \"%s\", \"model\": ",
            (unsigned long long)kept->weights->version,
            kept->torch ? "torch"
            : conv      ? "cnn"
                        : "mlp");
    s_json_str(f, model);
    fputs(", \"observation_fields\": ", f);
    s_json_net_fields(f, kept);
    vl_model_spec_t *spec = vl_model_spec_parse(model, NULL, 0); // the kept net's: it parses
    uint32_t state = spec ? vl_model_spec_state_size(spec) : 0;
    vl_model_spec_destroy(&spec);
    if (state)
        fprintf(f,
                ", \"core\": {\"kind\": \"lstm\", \"hidden\": %u, \"state\": \"h then c per "
                "env, zero at each episode's start\"}",
                state / 2);
    else
        fputs(", \"core\": null", f);
    int box = vl_action_is_box(&kept->action);
    fprintf(f, ", \"obs_dim\": %u, \"hidden\": %u, \"num_actions\": %u, \"action_space\": ",
            kept->obs_dim, kept->hidden, kept->num_actions);
    s_json_action(f, &kept->action);
    fprintf(f,
            ", \"obs_norm\": %s, \"weight_layout\": \"PyTorch's: linear [out, in] (y = x W^T + b), "
            "conv [out, in, kh, kw]\", \"outputs\": {\"pi\": \"%s\", \"v\": \"value\"}, "
            "\"tensors\": [",
            vl_norm_present(kept->weights, kept->obs_dim) ? "true" : "false",
            box                     ? "mean (std = exp(pi.logstd))"
            : kept->action.dims > 1 ? "logits, each dimension's in turn"
                                    : "logits");
    for (uint32_t i = 0; i < kept->weights->n_tensors; i++) {
        fputs(i ? ", " : "", f);
        s_json_str(f, kept->weights->tensors[i].name);
    }
    fputs("], \"shapes\": {", f);
    for (uint32_t i = 0; i < kept->weights->n_tensors; i++) {
        char shape[64];
        fputs(i ? ", " : "", f);
        s_json_str(f, kept->weights->tensors[i].name);
        fprintf(f, ": %s", vl_tensor_shape_str(&kept->weights->tensors[i], shape, sizeof shape));
    }
    fputs("}},\n \"env\": ", f);
    s_json_env(f, kept, env);
    fputs("}\n", f);
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* qsort order of tensor pointers: by name, as safetensors lays data out. */
static int s_by_name(const void *a, const void *b)
{
    const vl_tensor_t *x = *(const vl_tensor_t *const *)a, *y = *(const vl_tensor_t *const *)b;
    return strncmp(x->name, y->name, sizeof x->name);
}

/* Returns the safetensors JSON header for the sorted tensors and the spec,
   padded with spaces to a multiple of S_ALIGN, and its length in *len
   (caller frees), or NULL on no memory. */
static char *s_header(const vl_tensor_t *const *sorted, uint32_t n, const char *spec, size_t *len)
{
    char *buf = NULL;
    size_t size = 0, offset = 0;
    FILE *f = open_memstream(&buf, &size);
    if (!f)
        return NULL;
    fputs("{\"__metadata__\": {\"format\": \"" S_FORMAT "\", \"volley\": ", f);
    s_json_str(f, spec);
    fputs("}", f);
    for (uint32_t i = 0; i < n; i++) {
        const vl_tensor_t *t = sorted[i];
        size_t bytes = vl_tensor_size(t) * sizeof(float);
        fputs(", ", f);
        s_json_str(f, t->name);
        char shape[64]; // every dimension: a conv weight is [out, in, kh, kw]
        fprintf(f, ": {\"dtype\": \"F32\", \"shape\": %s",
                vl_tensor_shape_str(t, shape, sizeof shape));
        fprintf(f, ", \"data_offsets\": [%zu, %zu]}", offset, offset + bytes);
        offset += bytes;
    }
    fputs("}", f);
    while (ftell(f) % S_ALIGN)
        fputc(' ', f);
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    *len = size;
    return buf;
}

/* Writes n bytes to fd. Returns 0, or -1 with errno. */
static int s_write_all(int fd, const void *data, size_t n)
{
    const char *p = data;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w, n -= (size_t)w;
    }
    return 0;
}

/* Writes the tensors' floats little-endian, in order. Returns 0 or -1. */
static int s_write_data(int fd, const vl_tensor_t *const *sorted, uint32_t n)
{
    unsigned char chunk[4096];
    size_t used = 0;
    for (uint32_t i = 0; i < n; i++)
        for (size_t k = 0, e = vl_tensor_size(sorted[i]); k < e; k++) {
            uint32_t bits;
            memcpy(&bits, &sorted[i]->data[k], sizeof bits);
            for (int b = 0; b < 4; b++)
                chunk[used++] = (unsigned char)(bits >> (8 * b));
            if (used == sizeof chunk) {
                if (s_write_all(fd, chunk, used) != 0)
                    return -1;
                used = 0;
            }
        }
    return s_write_all(fd, chunk, used);
}

/* Opens path as a new file (never an existing one). Returns the fd, or -1
   with why. */
static int s_create(const char *path, char *why, size_t why_size)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0 && errno == EEXIST)
        snprintf(why, why_size, "%s exists; not overwritten", path);
    else if (fd < 0)
        snprintf(why, why_size, "cannot create %s: %s", path, strerror(errno));
    return fd;
}

/* Closes fd after writing; on an earlier failure (rc != 0) or a failed
   close, removes path. Returns 0, or -1 with why. */
static int s_finish(int fd, int rc, const char *path, char *why, size_t why_size)
{
    if (fsync(fd) != 0 || close(fd) != 0)
        rc = -1;
    if (rc != 0) {
        snprintf(why, why_size, "cannot write %s: %s", path, strerror(errno));
        unlink(path);
    }
    return rc;
}

/* Writes the safetensors file: header length, header, data. Returns 0, or
   -1 with why and no file. */
static int s_write_safetensors(const char *path, const vl_weights_t *w, const char *spec, char *why,
                               size_t why_size)
{
    const vl_tensor_t *sorted[64];
    if (w->n_tensors > 64)
        return snprintf(why, why_size, "too many tensors"), -1;
    for (uint32_t i = 0; i < w->n_tensors; i++)
        sorted[i] = &w->tensors[i];
    qsort(sorted, w->n_tensors, sizeof sorted[0], s_by_name);
    size_t len = 0;
    char *header = s_header(sorted, w->n_tensors, spec, &len);
    if (!header)
        return snprintf(why, why_size, "no memory"), -1;
    unsigned char prefix[8];
    for (int b = 0; b < 8; b++)
        prefix[b] = (unsigned char)((uint64_t)len >> (8 * b));
    int fd = s_create(path, why, why_size), rc = -1;
    if (fd >= 0) {
        rc = s_write_all(fd, prefix, sizeof prefix) == 0 && s_write_all(fd, header, len) == 0 &&
                     s_write_data(fd, sorted, w->n_tensors) == 0
                 ? 0
                 : -1;
        rc = s_finish(fd, rc, path, why, why_size);
    }
    free(header);
    return fd >= 0 ? rc : -1;
}

/* Writes text to a new file at path. Returns 0, or -1 with why and no file. */
static int s_write_text(const char *path, const char *text, char *why, size_t why_size)
{
    int fd = s_create(path, why, why_size);
    if (fd < 0)
        return -1;
    return s_finish(fd, s_write_all(fd, text, strlen(text)), path, why, why_size);
}

int vl_export_json_path(const char *path, char *out, size_t size)
{
    static const char ext[] = ".safetensors";
    size_t n = strlen(path), e = sizeof ext - 1;
    int stem = n > e && strcmp(path + n - e, ext) == 0 ? (int)(n - e) : (int)n;
    int w = snprintf(out, size, "%.*s.json", stem, path);
    return w < 0 || (size_t)w >= size ? -1 : 0;
}

/* Returns 1 if path names an existing entry. */
static int s_exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

int vl_export_write(const vl_kept_t *kept, const vl_env_ops_t *env, const char *path, char *why,
                    size_t why_size)
{
    char json_path[VL_KEPT_PATH_MAX];
    if (vl_export_json_path(path, json_path, sizeof json_path) != 0)
        return snprintf(why, why_size, "path too long: %s", path), -1;
    const char *taken = s_exists(path) ? path : s_exists(json_path) ? json_path : NULL;
    if (taken)
        return snprintf(why, why_size, "%s exists; not overwritten", taken), -1;
    char *spec = s_spec_json(kept, env);
    if (!spec)
        return snprintf(why, why_size, "no memory"), -1;
    int rc = s_write_safetensors(path, kept->weights, spec, why, why_size);
    if (rc == 0 && (rc = s_write_text(json_path, spec, why, why_size)) != 0)
        unlink(path);
    free(spec);
    return rc;
}

typedef struct {
    const char *from, *to, *policy, *env;
} s_args_t;

static const vl_flag_arg_t s_operands[] = {
    {"CHECKPOINT", "a learner's checkpoint file (DIR/NAME.ckpt)"},
    {"RUN", "a run directory: RUN/checkpoints/NAME.ckpt (or RUN/NAME.ckpt) and the env in "
            "RUN/config.ini (a plugin while it is the file trained on: the size and CRC-32C of "
            "its [env])"},
    {NULL, NULL}};

static const vl_flag_t s_flags[] = {
    VL_FLAG_STR_REQUIRED(s_args_t, "to", to, "FILE.safetensors", "the .safetensors to write"),
    {"policy", 0, VL_FLAG_POLICY, offsetof(s_args_t, policy), 0, 0, "NAME", "which policy of a run",
     "'default'", 0, NULL},
    VL_FLAG_STR(s_args_t, "env", env, "NAME|PATH.so|MOD:FN",
                "the env, for its observation spec, when the run does not say; a Python env "
                "(package.module:function) is named in the spec (its spaces are Python's: no "
                "observation fields)"),
    VL_FLAG_HELP_H,
    VL_FLAG_END};

static const vl_flag_cmd_t s_cmd = {
    .name = "export",
    .operands = "CHECKPOINT|RUN",
    .about = "Writes a trained policy for other tools: FILE.safetensors holds its tensors\n"
             "(float32 in PyTorch's layouts: linear [out, in], y = x W^T + b; conv\n"
             "[out, in, kh, kw]) and FILE.json (also in the header's __metadata__ as\n"
             "\"volley\") its architecture (model spec, observation fields, obs_dim,\n"
             "num_actions, tensor names) and spec (policy, version, env). In Python:\n"
             "volley.load_safetensors(FILE) gives NumPy arrays, volley.load_torch_policy(FILE)\n"
             "the torch.nn.Module volley.torch builds for the model. Never overwrites a file.\n",
    .args = s_operands,
    .flags = s_flags,
    .footer =
        "Exit 0 when written, 1 when a file could not be written, 2 on bad usage or input.\n"};

/* Parses argv into a. Returns 0, 1 after --help, -1 after saying why. */
static int s_parse(int argc, char **argv, s_args_t *a)
{
    int first = argc, rc = vl_flags_parse(&s_cmd, argc, argv, a, a, &first, NULL);
    if (rc != 0)
        return rc;
    if (first != argc - 1) {
        fprintf(stderr, "volley export: %s (see --help)\n",
                first == argc ? "which CHECKPOINT or RUN?" : "one CHECKPOINT or RUN");
        return -1;
    }
    a->from = argv[first];
    return 0;
}

int vl_export_main(int argc, char **argv)
{
    s_args_t a = {0};
    int rc = s_parse(argc, argv, &a);
    if (rc != 0)
        return rc > 0 ? 0 : 2;
    char why[2048];
    vl_kept_t *kept = vl_kept_load(a.from, a.policy, why, sizeof why);
    if (!kept) {
        fprintf(stderr, "volley export: %s\n", why);
        return 2;
    }
    int none = 0;
    const char *python = vl_kept_python_env(a.env, kept);
    if (!python && !a.env && kept->torch && kept->env[0] && !vl_env_find(kept->env))
        python = kept->env; // a PyTorch module's env is Python's (its vector env's name): named
    const vl_env_ops_t *env = python ? NULL : vl_kept_env("export", a.env, kept, &none);
    rc = 2;
    if (python && python != kept->env) // the spec names it; its spaces are Python's to tell
        snprintf(kept->env, sizeof kept->env, "%s", python);
    if (!env && !none && !python)
        goto done; // vl_kept_env said why
    if (env && vl_kept_fits(kept, env, why, sizeof why) != 0) {
        fprintf(stderr, "volley export: %s\n", why); // the JSON would name another env's fields
        goto done;
    }
    if (vl_export_write(kept, env, a.to, why, sizeof why) != 0) {
        fprintf(stderr, "volley export: %s\n", why);
        rc = strstr(why, "not overwritten") ? 2 : 1;
        goto done;
    }
    char json_path[VL_KEPT_PATH_MAX];
    vl_export_json_path(a.to, json_path, sizeof json_path);
    char model[VL_SPEC_MODEL_MAX];
    printf("exported %s (policy %s, version %llu, %s, obs %u, model %s, outputs %u) to %s and "
           "%s\n",
           kept->checkpoint, kept->weights->policy_id, (unsigned long long)kept->weights->version,
           env      ? env->name
           : python ? python
                    : "env unknown",
           kept->obs_dim, vl_kept_model(kept, model, sizeof model), kept->num_actions, a.to,
           json_path);
    rc = 0;
done:
    vl_kept_destroy(&kept);
    return rc;
}
