/*  vl_resume: learner checkpoints as three sections: "weights", "optimizer"
    and "state" (a fixed little-endian layout, versioned by its size). */
#include "vl_resume.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../common/vl_log.h"
#include "../store/vl_checkpoint.h"

#define S_STATE_WORDS 8  // version, trained, env_steps, episodes, rng s[4]
#define S_TENSORS_MAX 64 // a Weights message's most (vl_limits_default)

int vl_resume_write(const char *path, const char *policy_id, const vl_tensor_t *tensors, uint32_t n,
                    const void *opt, size_t opt_size, const vl_resume_state_t *st,
                    const char *config, const vl_spec_t *spec)
{
    uint8_t *weights = NULL, *spec_bytes = NULL;
    size_t weights_size = 0, spec_size = 0;
    if (vl_weights_encode(policy_id, st->version, tensors, n, &weights, &weights_size) != 0) {
        vl_error("checkpoint %s: its weights cannot be encoded (a bad shape, or no memory)", path);
        return -1;
    }
    if (spec && vl_spec_encode(spec, &spec_bytes, &spec_size) != 0) {
        vl_warn("checkpoint %s: the policy's spec does not encode; saved without it", path);
        spec_bytes = NULL;
    }
    uint64_t words[S_STATE_WORDS] = {st->version,  st->trained,  st->env_steps, st->episodes,
                                     st->rng.s[0], st->rng.s[1], st->rng.s[2],  st->rng.s[3]};
    vl_section_t sections[5] = {{"weights", weights, weights_size},
                                {"optimizer", opt, opt_size},
                                {"state", words, sizeof words}};
    int k = 3;
    if (config)
        sections[k++] = (vl_section_t){"config", config, strlen(config)};
    if (spec_bytes)
        sections[k++] = (vl_section_t){"spec", spec_bytes, spec_size};
    int rc = vl_checkpoint_write(path, sections, k);
    free(weights);
    free(spec_bytes);
    return rc;
}

int vl_resume_save(const char *path, const char *policy_id, vl_engine_t *engine,
                   const vl_resume_state_t *st, const char *config, const vl_spec_t *spec)
{
    vl_tensor_t tensors[S_TENSORS_MAX];
    uint32_t n = vl_engine_tensors(engine, tensors, S_TENSORS_MAX);
    const void *opt = NULL;
    size_t opt_size = 0;
    char why[512];
    if (vl_engine_optimizer(engine, &opt, &opt_size, why, sizeof why) != 0) {
        vl_error("checkpoint %s: %s", path, why);
        return -1;
    }
    return vl_resume_write(path, policy_id, tensors, n, opt, opt_size, st, config, spec);
}

/* Decodes the weights section of ck under the default limits into *out
   (NULL on failure). Returns VL_OK, VL_EPROTO when there is none, or the
   decoder's reason. */
static vl_reason_t s_decode_weights(const vl_checkpoint_t *ck, vl_weights_t **out)
{
    size_t size = 0;
    const void *data = vl_checkpoint_get(ck, "weights", &size);
    vl_limits_t lim = vl_limits_default();
    *out = NULL;
    return data ? vl_weights_decode(data, size, &lim, out) : VL_EPROTO;
}

vl_weights_t *vl_resume_read_weights(const char *path, vl_spec_t *spec, int *has_spec, char *why,
                                     size_t why_size)
{
    char reason[512];
    vl_checkpoint_t *ck = vl_checkpoint_read(path, reason, sizeof reason);
    if (!ck) {
        snprintf(why, why_size, "%s: %s", path, reason);
        return NULL;
    }
    vl_weights_t *w = NULL;
    vl_reason_t r = s_decode_weights(ck, &w);
    if (r == VL_EPROTO && !vl_checkpoint_get(ck, "weights", NULL))
        snprintf(why, why_size, "%s: not a learner checkpoint (no weights)", path);
    else if (r != VL_OK)
        snprintf(why, why_size, "%s: its weights are unreadable (%s)", path, vl_reason_str(r));
    size_t size = 0;
    const void *data = w && spec ? vl_checkpoint_get(ck, "spec", &size) : NULL;
    vl_limits_t lim = vl_limits_default();
    if (has_spec)
        *has_spec = data != NULL;
    if (data && (r = vl_spec_decode(data, size, &lim, spec)) != VL_OK) {
        snprintf(why, why_size, "%s: its spec section is unreadable (%s)", path, vl_reason_str(r));
        vl_weights_destroy(&w);
    }
    vl_checkpoint_destroy(&ck);
    return w;
}

/* Checks the weights section and loads it with the optimizer's bytes into
   the engine. Returns 0, or -1 with why. */
static int s_load_weights(const vl_checkpoint_t *ck, const char *policy_id, vl_engine_t *engine,
                          const void *opt, size_t opt_size, char *why, size_t why_size)
{
    vl_weights_t *w = NULL;
    vl_reason_t r = s_decode_weights(ck, &w);
    int rc = -1;
    if (r != VL_OK)
        snprintf(why, why_size, "its weights are unreadable (%s)", vl_reason_str(r));
    else if (strcmp(w->policy_id, policy_id) != 0)
        snprintf(why, why_size, "it is for policy '%s', not '%s'", w->policy_id, policy_id);
    else
        rc = vl_engine_load_weights(engine, w, opt, opt_size, why, why_size);
    vl_weights_destroy(&w);
    return rc;
}

int vl_resume_load(const char *path, const char *policy_id, vl_engine_t *engine,
                   vl_resume_state_t *st, char *why, size_t why_size)
{
    struct stat sb;
    if (stat(path, &sb) != 0 && errno == ENOENT)
        return 1;
    vl_checkpoint_t *ck = vl_checkpoint_read(path, why, why_size);
    if (!ck)
        return -1;
    size_t opt_size = 0, state_size = 0;
    const void *opt = vl_checkpoint_get(ck, "optimizer", &opt_size);
    const void *state = vl_checkpoint_get(ck, "state", &state_size);
    uint64_t words[S_STATE_WORDS];
    int rc = -1;
    if (!opt)
        snprintf(why, why_size, "its optimizer state does not match this network");
    else if (!state || state_size != sizeof words)
        snprintf(why, why_size, "its state section has the wrong size");
    else if (s_load_weights(ck, policy_id, engine, opt, opt_size, why, why_size) == 0) {
        memcpy(words, state, sizeof words);
        *st = (vl_resume_state_t){
            words[0], words[1], words[2], words[3], {{words[4], words[5], words[6], words[7]}}};
        rc = 0;
    }
    vl_checkpoint_destroy(&ck);
    return rc;
}

int vl_resume_config(const char *path, char *out, size_t size, char *why, size_t why_size)
{
    vl_checkpoint_t *ck = vl_checkpoint_read(path, why, why_size);
    if (!ck)
        return -1;
    size_t n = 0;
    const char *text = vl_checkpoint_get(ck, "config", &n);
    int rc = text ? 0 : 1;
    if (text && n >= size) {
        snprintf(why, why_size, "its config section is too long (%zu bytes)", n);
        rc = -1;
    } else if (text) {
        memcpy(out, text, n);
        out[n] = 0;
    }
    vl_checkpoint_destroy(&ck);
    return rc;
}
