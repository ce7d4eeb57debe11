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

#define S_STATE_WORDS 8 // version, trained, env_steps, episodes, rng s[4]

/* Encodes the policy's tensors as a Weights message. Returns 0 or -1. */
static int s_weights(const char *policy_id, vl_trainer_t *trainer, uint64_t version, uint8_t **out,
                     size_t *size)
{
    vl_policy_t *p = vl_trainer_policy(trainer);
    uint32_t n = vl_policy_tensor_count(p);
    vl_tensor_t tensors[64];
    if (n > 64)
        return -1;
    for (uint32_t i = 0; i < n; i++)
        vl_policy_tensor(p, i, &tensors[i]);
    return vl_weights_encode(policy_id, version, tensors, n, out, size);
}

int vl_resume_save(const char *path, const char *policy_id, vl_trainer_t *trainer,
                   const vl_resume_state_t *st, const char *config, const vl_spec_t *spec)
{
    uint8_t *weights = NULL, *spec_bytes = NULL;
    size_t weights_size = 0, spec_size = 0;
    vl_policy_t *p = vl_trainer_policy(trainer);
    size_t opt_size = vl_policy_optimizer_size(p);
    uint8_t *opt = malloc(opt_size);
    int rc = -1;
    if (!opt || s_weights(policy_id, trainer, st->version, &weights, &weights_size) != 0)
        goto done;
    if (spec && vl_spec_encode(spec, &spec_bytes, &spec_size) != 0) {
        vl_warn("checkpoint %s: the policy's spec does not encode; saved without it", path);
        spec_bytes = NULL;
    }
    vl_policy_save_optimizer(p, opt);
    uint64_t words[S_STATE_WORDS] = {st->version,  st->trained,  st->env_steps, st->episodes,
                                     st->rng.s[0], st->rng.s[1], st->rng.s[2],  st->rng.s[3]};
    vl_section_t sections[5] = {{"weights", weights, weights_size},
                                {"optimizer", opt, opt_size},
                                {"state", words, sizeof words}};
    int n = 3;
    if (config)
        sections[n++] = (vl_section_t){"config", config, strlen(config)};
    if (spec_bytes)
        sections[n++] = (vl_section_t){"spec", spec_bytes, spec_size};
    rc = vl_checkpoint_write(path, sections, n);
done:
    free(weights);
    free(spec_bytes);
    free(opt);
    return rc;
}

/* Checks and applies the weights section. Returns 0, or -1 with why. */
static int s_load_weights(const vl_checkpoint_t *ck, const char *policy_id, vl_policy_t *p,
                          char *why, size_t why_size)
{
    size_t size;
    const void *data = vl_checkpoint_get(ck, "weights", &size);
    vl_limits_t lim = vl_limits_default();
    vl_weights_t *w = NULL;
    vl_reason_t r = data ? vl_weights_decode(data, size, &lim, &w) : VL_EPROTO;
    int rc = -1;
    if (r != VL_OK)
        snprintf(why, why_size, "its weights are unreadable (%s)", vl_reason_str(r));
    else if (strcmp(w->policy_id, policy_id) != 0)
        snprintf(why, why_size, "it is for policy '%s', not '%s'", w->policy_id, policy_id);
    else if (vl_policy_load(p, w) != 0)
        snprintf(why, why_size, "its network does not match (--hidden, --env?)");
    else
        rc = 0;
    vl_weights_destroy(&w);
    return rc;
}

int vl_resume_load(const char *path, const char *policy_id, vl_trainer_t *trainer,
                   vl_resume_state_t *st, char *why, size_t why_size)
{
    struct stat sb;
    if (stat(path, &sb) != 0 && errno == ENOENT)
        return 1;
    vl_checkpoint_t *ck = vl_checkpoint_read(path, why, why_size);
    if (!ck)
        return -1;
    vl_policy_t *p = vl_trainer_policy(trainer);
    size_t opt_size = 0, state_size = 0;
    const void *opt = vl_checkpoint_get(ck, "optimizer", &opt_size);
    const void *state = vl_checkpoint_get(ck, "state", &state_size);
    uint64_t words[S_STATE_WORDS];
    int rc = -1;
    if (!opt || opt_size != vl_policy_optimizer_size(p))
        snprintf(why, why_size, "its optimizer state does not match this network");
    else if (!state || state_size != sizeof words)
        snprintf(why, why_size, "its state section has the wrong size");
    else if (s_load_weights(ck, policy_id, p, why, why_size) == 0) {
        vl_policy_load_optimizer(p, opt, opt_size);
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
