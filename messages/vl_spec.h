/*  vl_spec: what a policy's segments look like (volley.proto's Spec):
    observation fields, actions, horizon and the network that acts (a model
    spec's canonical text, and the MLP's hidden size older peers read). Actors
    declare it in their beats, a learner with the environment declares it,
    a learner without one asks the broker for it. Comparisons say which
    field differs, with both values, so a refusal names its cause. */
#ifndef VL_SPEC_H
#define VL_SPEC_H

#include <stddef.h>
#include <stdint.h>

#include "vl_action.h"
#include "vl_codec.h"
#include "volley.pb-c.h"

#define VL_SPEC_REASON_MAX 480 // bytes of a reason text, NUL included
#define VL_SPEC_HIDDEN_MAX 65536
#define VL_SPEC_MODEL_MAX  1024 // bytes of a model spec's canonical text, NUL included

typedef struct {
    char policy_id[VL_POLICY_ID_MAX];
    vl_obs_spec_t obs_spec;
    vl_action_spec_t action; // the action space
    uint32_t state_size;     // floats of the recurrent state a segment carries (0: none)
    uint32_t horizon;
    uint32_t hidden;               // hidden units per layer of volley's MLP
    char env[VL_POLICY_ID_MAX];    // the environment's name, for people ("" if unknown)
    char model[VL_SPEC_MODEL_MAX]; // canonical model spec; "" = mlp of `hidden` (see below)
    int model_open; // 1: the sender follows the policy's network; model, hidden, state_size
                    // are placeholders that no other spec is compared with
} vl_spec_t;

/* Writes the model spec's canonical text spec stands for into out: its
   model, or for "" (a peer from before model specs) volley's MLP of its
   hidden size, "linear(H) tanh linear(H) tanh". */
void vl_spec_model(const vl_spec_t *spec, char *out, size_t out_size);

/* Encodes a Spec into a new buffer (caller frees). Returns 0, or -1 on an
   invalid spec or no memory. */
int vl_spec_encode(const vl_spec_t *spec, uint8_t **out, size_t *out_size);

/* Decodes and checks a Spec (schema, policy id, fields, sizes within lim).
 *spec is written on VL_OK alone. Returns VL_OK or the reason. */
vl_reason_t vl_spec_decode(const uint8_t *data, size_t size, const vl_limits_t *lim,
                           vl_spec_t *spec);

/* Points ptrs[i] at fields[i] filled from obs's fields (strings and shapes
   borrowed from obs), for a message's repeated ObsField. */
void vl_obs_fields_to_msg(const vl_obs_spec_t *obs, Volley__ObsField *fields,
                          Volley__ObsField **ptrs);

/* Copies a message's n ObsFields into obs. Returns VL_OK, VL_ESHAPE for
   zero counts or ranks, VL_ETOOBIG for too many (values are checked by
   vl_obs_spec_check, not here). */
vl_reason_t vl_obs_fields_from_msg(size_t n, Volley__ObsField *const *fields, vl_obs_spec_t *obs);

/* Fills msg (n, low and high borrowed from a) from an action space. */
void vl_action_to_msg(const vl_action_spec_t *a, Volley__ActionSpace *msg);

/* Copies an ActionSpace message into *a and checks it (vl_action_check
   under lim). Returns VL_OK, or VL_EACTION. */
vl_reason_t vl_action_from_msg(const Volley__ActionSpace *msg, const vl_limits_t *lim,
                               vl_action_spec_t *a);

/* Fills msg (with fields and ptrs as its storage, VL_OBS_FIELDS_MAX each)
   from spec; msg's strings point into spec. */
void vl_spec_to_msg(const vl_spec_t *spec, Volley__Spec *msg, Volley__ObsField *fields,
                    Volley__ObsField **ptrs, Volley__ActionSpace *action);

/* Checks an unpacked Spec and copies it into *spec. Returns VL_OK or the
   reason. */
vl_reason_t vl_spec_from_msg(const Volley__Spec *msg, const vl_limits_t *lim, vl_spec_t *spec);

/* Compares a sender's spec with the policy's. Returns 0 when they agree
   (the env name is not compared), else 1 after writing the first field that
   differs, e.g. "horizon: policy 'default' has 64, this actor 32", with `who`
   naming the sender ("this actor", "this learner"). The network (model,
   state size) is not compared when either spec leaves it open. */
int vl_spec_diff(const vl_spec_t *policy, const vl_spec_t *sender, const char *who, char *why,
                 size_t why_size);

/* Checks a segment's header against its policy's spec. Returns 0 when it
   fits, else 1 after writing why, e.g. "horizon 32, policy 'default' has 64". */
int vl_spec_check_segment(const vl_spec_t *spec, const vl_segment_t *seg, char *why,
                          size_t why_size);

/* Returns 1 if text is a model spec text a Spec may carry: printable
   ASCII, shorter than VL_SPEC_MODEL_MAX (its grammar is the models' to
   check), else 0. */
int vl_spec_model_ok(const char *text);

/* Writes one line describing the observation fields, e.g. "f32[4]" or
   "u2[16x16] u1[32] f32[2]". */
void vl_spec_obs_str(const vl_obs_spec_t *obs, char *out, size_t out_size);

/* Writes a spec in one line: "obs f32[4] actions discrete(2) horizon 64 model ... env cartpole". */
void vl_spec_str(const vl_spec_t *spec, char *out, size_t out_size);

#endif
