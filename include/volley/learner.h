/*  volley/learner.h: a learner's transport, for outside code (a PyTorch
    learner through the Python package, say). It is the C learner's own
    receiving end: a thread of its own says hello to the broker for one
    policy, declares or fetches the policy's spec, grants credit as its
    buffer frees room, and decodes each segment (validated as hostile input)
    straight into a slot of a [capacity] buffer of segments of `horizon`
    steps; the caller takes the oldest committed segments as a batch, reads
    them per array, releases them, and publishes weights (named float
    tensors) with a version for the actors.

    A batch is n slots of the buffer, not one block: each segment's arrays
    can be viewed in place (vl_transport_segment_array), and
    vl_transport_gather copies one array of every taken segment into one
    contiguous [n, ...] array the caller owns (unpacking observations to
    floats on request). One batch is held at a time. Each call is for one
    thread at a time; the receiving thread runs on its own. */
#ifndef VOLLEY_LEARNER_H
#define VOLLEY_LEARNER_H

#include <stddef.h>
#include <stdint.h>

#include <volley/env.h>
#include <volley/volley.h>

#ifdef __cplusplus
extern "C" {
#endif

#define VL_TRANSPORT_FIELDS_MAX  8    // observation fields
#define VL_TRANSPORT_NDIM_MAX    4    // dimensions per field, and per published tensor
#define VL_TRANSPORT_TENSORS_MAX 64   // tensors per publication
#define VL_TRANSPORT_MODEL_MAX   1024 // bytes of a model spec's text, NUL included

/* An observation field's encoding (messages/volley.proto's ObsEncoding). */
enum { VL_TRANSPORT_F32 = 0, VL_TRANSPORT_U8 = 1, VL_TRANSPORT_U2 = 2, VL_TRANSPORT_U1 = 3 };

typedef struct {
    uint32_t encoding; // a VL_TRANSPORT_F32 .. U1
    uint32_t ndim;     // 1 .. VL_TRANSPORT_NDIM_MAX
    uint32_t shape[VL_TRANSPORT_NDIM_MAX];
} vl_transport_field_t;

/* What a policy's segments hold. The caller sets the fields, the action
   space, horizon, hidden and model; obs_dim and row_bytes are filled by the
   transport. */
typedef struct {
    uint32_t n_fields; // 1 .. VL_TRANSPORT_FIELDS_MAX
    vl_transport_field_t fields[VL_TRANSPORT_FIELDS_MAX];
    vl_env_action_t action;             // the action space (volley/env.h)
    uint32_t horizon;                   // T: steps per segment
    uint32_t hidden;                    // hidden units of volley's MLP (what C actors build)
    uint32_t obs_dim;                   // out: floats per observation (every field's values)
    uint32_t row_bytes;                 // out: bytes of one stored observation row (see gather)
    char model[VL_TRANSPORT_MODEL_MAX]; // the network C actors build: in, a model spec
                                        // ("": the default for the observations, cnn for an
                                        // image field, else mlp(hidden)); out, its canonical
                                        // text (include/volley/model.h builds it)
} vl_transport_spec_t;

/* The arrays of a taken batch of n segments of T steps (D = obs_dim). */
typedef enum {
    VL_TRANSPORT_OBS,             // float32 [n, T+1, D], rows unpacked; row T is the bootstrap
    VL_TRANSPORT_OBS_ROWS,        // uint8 [n, T+1, row_bytes]: rows as stored (f32 fields
                                  // as floats, others one byte a value, fields 4-aligned)
    VL_TRANSPORT_ACTIONS,         // float32 [n, T, dims]: as the actor took them (discrete
                                  // choices as whole numbers, a box's unclipped samples)
    VL_TRANSPORT_REWARDS,         // float32 [n, T]
    VL_TRANSPORT_DONES,           // float32 [n, T]: 1 when the episode ended after action t
    VL_TRANSPORT_TRUNCATED,       // uint8 [n, T]: 1 when that end was a time limit's
    VL_TRANSPORT_LOGP,            // float32 [n, T]: the behaviour policy's log-prob of a_t
    VL_TRANSPORT_FINAL_OBS,       // float32 [n, T, D]: at each truncated step, the episode's
                                  // final observation (for V(x_final)); 0 at other steps
    VL_TRANSPORT_POLICY_VERSION,  // uint64 [n]: the weights version that acted
    VL_TRANSPORT_ACTOR_ID,        // uint32 [n]
    VL_TRANSPORT_ENV_ID,          // uint32 [n]
    VL_TRANSPORT_SEQ,             // uint64 [n]: the actor's sequence number for the segment
    VL_TRANSPORT_N_EPISODES,      // uint32 [n]: episodes that finished in each segment
    VL_TRANSPORT_EPISODE_RETURNS, // float32 [sum of N_EPISODES], segment by segment
    VL_TRANSPORT_EPISODE_LENGTHS, // uint32 [sum of N_EPISODES]
    VL_TRANSPORT_ARRAYS
} vl_transport_array_t;

/* What the transport has counted since it started. */
typedef struct {
    uint64_t accepted;  // segments committed to the buffer
    uint64_t refused;   // segments refused (vl_transport_refused says why)
    uint64_t evicted;   // committed segments overwritten unread (the caller took too slowly)
    uint64_t env_steps; // in accepted segments
    uint64_t episodes;  // finished in accepted segments
    float mean_return;  // of the last `window` (<= 100) finished episodes
    uint32_t window;
    uint32_t waiting; // committed segments not yet taken
} vl_transport_counts_t;

/* One float32 tensor to publish, row-major (a conv weight [out][in][kh][kw]
   as PyTorch holds it). */
typedef struct {
    const char *name;                      // printable, < 32 bytes, unique in the publication
    uint32_t ndim;                         // 1 .. VL_TRANSPORT_NDIM_MAX
    uint32_t shape[VL_TRANSPORT_NDIM_MAX]; // shape[0 .. ndim): every dimension, none 0
    const float *data;                     // shape's product of finite floats
} vl_transport_tensor_t;

typedef struct vl_transport_s vl_transport_t;

/* Connects to broker ("HOST[:PORT]") for policy with a buffer of capacity
   segments (2 .. 2^20) and starts receiving. With spec, declares it to the
   broker and waits for its OK; with spec NULL, takes the spec an actor
   declared (GETSPEC). Waits at most about timeout_ms (-1: no limit).
   Returns the transport (caller destroys), or NULL after writing why. */
VL_EXPORT vl_transport_t *vl_transport_new(const char *broker, const char *policy,
                                           const vl_transport_spec_t *spec, uint32_t capacity,
                                           int timeout_ms, char *why, size_t why_size);

/* Stops receiving, closes the sockets, frees the transport and nulls the
   pointer; safe on NULL and twice. */
VL_EXPORT void vl_transport_destroy(vl_transport_t **self_p);

/* Fills spec with the policy's spec (obs_dim and row_bytes included). */
VL_EXPORT void vl_transport_spec(const vl_transport_t *self, vl_transport_spec_t *spec);

/* Waits up to timeout_ms (-1: no limit) until n segments wait, then takes
   the n oldest as the batch. Returns how many it took: n, fewer if some
   were evicted meanwhile, 0 on timeout, -1 if a batch is still held or n is
   not in 1 .. capacity / 2 (the most the broker is allowed to have sent). */
VL_EXPORT int vl_transport_take(vl_transport_t *self, uint32_t n, int timeout_ms);

/* Returns the bytes vl_transport_gather writes for array of the batch
   held (0 without one, or for an unknown array). */
VL_EXPORT size_t vl_transport_array_bytes(const vl_transport_t *self, vl_transport_array_t array);

/* Copies array of every segment of the batch held, in take order, into
   out (out_size >= vl_transport_array_bytes). Returns 0, or -1 without a
   batch, for an unknown array or when out is too small. */
VL_EXPORT int vl_transport_gather(const vl_transport_t *self, vl_transport_array_t array, void *out,
                                  size_t out_size);

/* Returns segment i's array in place (valid until release), setting *bytes,
   for OBS_ROWS, ACTIONS, REWARDS, DONES, TRUNCATED, LOGP, EPISODE_RETURNS
   and EPISODE_LENGTHS; NULL for the other arrays, without a batch or for i
   out of range. */
VL_EXPORT const void *vl_transport_segment_array(const vl_transport_t *self, uint32_t i,
                                                 vl_transport_array_t array, size_t *bytes);

/* Gives the batch's slots back to be written again; safe without one. */
VL_EXPORT void vl_transport_release(vl_transport_t *self);

/* Fills counts with the books now. */
VL_EXPORT void vl_transport_counts(vl_transport_t *self, vl_transport_counts_t *counts);

/* Returns how many segments were refused for reason (0 .. n - 1, n from
   vl_transport_reasons) and sets *name to its name; 0 and NULL past n. */
VL_EXPORT uint64_t vl_transport_refused(vl_transport_t *self, int reason, const char **name);

/* Returns the number of refusal reasons. */
VL_EXPORT int vl_transport_reasons(void);

/* Publishes n tensors as weights `version` (>= any version published
   before) to the policy's actors, after checking them as a receiver does
   (names, ranks 1 .. 4 with every dimension kept, sizes, finite floats).
   With check_policy, they must also be exactly volley's MLP for the spec
   (the tensors a C actor loads: pi.0.weight [hidden, obs_dim] ... v.2.bias
   [1]). Returns 0, or -1 after writing why (nothing sent). */
VL_EXPORT int vl_transport_publish(vl_transport_t *self, uint64_t version,
                                   const vl_transport_tensor_t *tensors, uint32_t n,
                                   int check_policy, char *why, size_t why_size);

/* Publishes a progress report (what `volley top` and `volley up` read): the
   version and losses given, the rest from the transport's books. Returns 0
   or -1. */
VL_EXPORT int vl_transport_publish_stats(vl_transport_t *self, uint64_t version,
                                         uint64_t segments_trained, float policy_loss,
                                         float value_loss, float entropy);

/* Writes the weights published last as a learner checkpoint at path, the
   file `volley eval` and `volley export` read: a "weights" section (that
   publication as sent), a "spec" section (the policy's spec, its model and
   env (NULL: none) included) and a "config" section, INI lines naming the
   policy, env, observation fields, actions, hidden, model, horizon and
   version, then the caller's extra lines (NULL: none). Atomic: a temp file
   renamed over path. Returns 0, or -1 after writing why (nothing published
   yet, an env that is not a wire name, the config too long, a file that
   cannot be written). */
VL_EXPORT int vl_transport_checkpoint(const vl_transport_t *self, const char *path, const char *env,
                                      const char *extra, char *why, size_t why_size);

#ifdef __cplusplus
}
#endif

#endif
