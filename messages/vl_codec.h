/*  vl_codec: volley's messages to and from wire bytes: segments, weights,
    hellos and stats (reasons and limits in vl_wire.h, observations in vl_obs.h).
    Every decoder treats its input as hostile: it bounds-checks, validates and
    returns a named reason; it never crashes and never allocates more than the
    limits allow. The wire itself is documented in messages/volley.proto. */
#ifndef VL_CODEC_H
#define VL_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "vl_action.h"
#include "vl_figures.h"
#include "vl_obs.h"
#include "vl_wire.h"

/* A segment's header and pointers into its arrays. */
typedef struct {
    uint32_t actor_id;
    uint32_t env_id;
    uint64_t seq;
    char policy_id[VL_POLICY_ID_MAX];
    uint64_t policy_version;
    uint32_t horizon;        // T
    vl_obs_spec_t obs_spec;  // fields of one observation
    uint32_t obs_dim;        // D: floats per observation, from obs_spec
    uint32_t obs_row_bytes;  // bytes of one observation row (vl_obs.h), from obs_spec
    uint32_t obs_wire_bytes; // packed bytes per observation, from obs_spec
    vl_action_spec_t action; // the action space: action.dims floats per step
    uint32_t schema; // the schema it was decoded from (encoding: ignored, writes the newest)
    int64_t send_ns;
    int64_t recv_ns;           // receiver's wall clock when it took the segment (not on the wire)
    uint8_t *obs;              // [T + 1][obs_row_bytes] rows; floats [T + 1][D] when all f32
    uint8_t *final_obs;        // [T][obs_row_bytes]: the first n_truncated rows are the final
                               // observations of the truncated steps, in step order
    float *actions;            // [T][action.dims]
    float *rewards;            // [T]
    float *dones;              // [T] 1 when the episode ended after action t (either way)
    uint8_t *truncated;        // [T] 1 when that end was a time limit's (dones[t] is 1 too)
    uint32_t n_truncated;      // steps with truncated[t] = 1
    float *logp;               // [T]
    uint32_t state_size;       // floats of the recurrent state (0: a memoryless policy)
    float *state;              // [state_size] the policy's state before step 0 (h then c)
    uint32_t n_episodes;       // <= T
    float *episode_returns;    // [n_episodes]
    uint32_t *episode_lengths; // [n_episodes]
    vl_figures_t figures;      // the env's own figures of those episodes
    uint8_t *wire;             // decoder's scratch for the packed payload
} vl_segment_t;

/* Sets seg's obs_spec, obs_dim, obs_row_bytes and obs_wire_bytes from a spec. Returns 0, or
   -1 if the spec fails vl_obs_spec_check under the default limits. */
int vl_segment_set_spec(vl_segment_t *seg, const vl_obs_spec_t *spec);

#define VL_SEGMENT_STATE_MAX 16384 // floats of a recurrent state (an lstm(8192)'s h and c)

/* Returns the bytes of array storage a segment of horizon T, this
   observation spec, action_dims values per action and a recurrent state of
   state_size floats needs: the rows (T + 1 observations and room for T
   final observations), the step arrays, the state, room for T episode
   returns and lengths, and the decoder's scratch for the
   largest packed payload. SIZE_MAX if the spec is invalid, action_dims is 0
   or over VL_ACTION_DIMS_MAX, state_size over VL_SEGMENT_STATE_MAX, or the
   size does not fit. */
size_t vl_segment_arrays_size(uint32_t T, const vl_obs_spec_t *spec, uint32_t action_dims,
                              uint32_t state_size);

/* Points seg's array fields into `arrays` (vl_segment_arrays_size bytes,
   4-byte aligned) for seg->horizon, action.dims, state_size, obs_row_bytes
   and obs_wire_bytes. */
void vl_segment_bind(vl_segment_t *seg, void *arrays);

/* Encodes seg (its arrays filled, its spec set) into a new buffer, packing
   observations by its spec.
   Returns 0 and sets *out (caller frees with free()) and *out_size, or -1. */
int vl_segment_encode(const vl_segment_t *seg, uint8_t **out, size_t *out_size);

/* Reads only the header of a segment: fills seg's scalar fields (not its
   arrays) after checking schema, policy id, observation fields, limits and
   the LZ4 block's declared sizes. Lets a receiver pick
   the storage before decompressing. Returns VL_OK or the reason. */
vl_reason_t vl_segment_peek(const uint8_t *data, size_t size, const vl_limits_t *lim,
                            vl_segment_t *seg);

/* Decodes and fully validates a segment: header as vl_segment_peek, then the
   LZ4 payload decompressed into the scratch part of `arrays` (capacity
   arrays_cap bytes; VL_ETOOBIG if too small) and unpacked into its rows and
   arrays,
   then every value checked. On VL_OK seg's arrays
   point into `arrays`. On failure the content of `arrays` is unspecified. */
vl_reason_t vl_segment_decode(const uint8_t *data, size_t size, const vl_limits_t *lim,
                              vl_segment_t *seg, void *arrays, size_t arrays_cap);

/* Gives storage of at least `need` bytes (4-byte aligned) for a segment
   whose header passed every check, or NULL to refuse it (VL_ETOOBIG). */
typedef void *(*vl_segment_reserve_fn)(void *ctx, size_t need);

/* Decodes like vl_segment_decode, but asks reserve for the storage once
   the header has passed, so a receiver that sizes its storage per segment
   parses each message once. */
vl_reason_t vl_segment_decode_with(const uint8_t *data, size_t size, const vl_limits_t *lim,
                                   vl_segment_t *seg, vl_segment_reserve_fn reserve, void *ctx);

#define VL_TENSOR_NDIM_MAX 4 // a conv weight's [out][in][kh][kw]

/* One named float tensor of rank 1 to VL_TENSOR_NDIM_MAX, row-major. rows is
   the first dimension and cols the product of the others (1 for rank 1), so
   rows * cols floats whatever the rank. Ranks 1 and 2 are rows (x cols)
   alone; ranks 3 and 4 also give every dimension in shape[0 .. ndim). */
typedef struct {
    char name[VL_TENSOR_NAME_MAX];
    uint32_t rows;
    uint32_t cols;
    uint32_t ndim;                      // 1 .. VL_TENSOR_NDIM_MAX
    uint32_t shape[VL_TENSOR_NDIM_MAX]; // ranks 3, 4: every dimension; else unused
    float *data;                        // rows * cols floats
} vl_tensor_t;

/* Decoded weights; vl_weights_decode allocates, vl_weights_destroy frees. */
typedef struct {
    char policy_id[VL_POLICY_ID_MAX];
    uint64_t version;
    int64_t publish_ns; // publisher's CLOCK_REALTIME when encoded (0: unknown)
    uint32_t n_tensors;
    vl_tensor_t *tensors; // owned
} vl_weights_t;

/* Sets t's rank and dimensions from dims[ndim]: ndim, rows, cols and (ranks
   3 and 4) shape. Returns 0, or -1 (t unchanged) when ndim is not 1 ..
   VL_TENSOR_NDIM_MAX, a dimension is 0 or cols would not fit 32 bits. */
int vl_tensor_set_shape(vl_tensor_t *t, uint32_t ndim, const uint32_t *dims);

/* Writes every dimension of t into dims[VL_TENSOR_NDIM_MAX] (rank 1: rows;
   2: rows, cols; 3 and 4: shape) and returns its rank. */
uint32_t vl_tensor_dims(const vl_tensor_t *t, uint32_t dims[VL_TENSOR_NDIM_MAX]);

/* Returns t's number of floats, rows * cols, whatever its rank. */
size_t vl_tensor_size(const vl_tensor_t *t);

/* Returns 1 when a and b have the same rank and every dimension equal (a
   [32, 4, 8, 8] is not a [32, 256]), else 0. */
int vl_tensor_same_shape(const vl_tensor_t *a, const vl_tensor_t *b);

/* Writes t's shape as "[32, 4, 8, 8]" into buf[size] (truncated to fit).
   Returns buf. */
const char *vl_tensor_shape_str(const vl_tensor_t *t, char *buf, size_t size);

/* Checks that got holds every one of the n tensors want by name, each with
   want's full shape (extra tensors are not looked at). Returns 0, or -1
   after writing the first difference into why[size]: "they have no tensor
   NAME" or "their NAME is [64, 4, 1], this network's [64, 4]". */
int vl_tensors_mismatch(const vl_tensor_t *want, uint32_t n, const vl_tensor_t *got, uint32_t n_got,
                        char *why, size_t size);

/* Returns the FNV-1a 64-bit checksum of n tensors in order: each one's
   name (with its NUL), its shape as u32s and its data. The shape of a rank
   1 or 2 tensor is {ndim, rows, cols} (as before ranks 3 and 4 existed, so
   recorded runs keep their checksums); of a rank 3 or 4 tensor {ndim,
   shape[0], .., shape[ndim - 1]}. Equal weights give equal checksums
   wherever they are held (`volley replay`'s and `volley up
   --deterministic`'s last lines). */
uint64_t vl_tensors_checksum(const vl_tensor_t *tensors, uint32_t n);

/* Encodes a policy's tensors at a version into a new buffer, stamped with
   the wall-clock time now (weights are encoded as they are published).
   Returns 0 and sets *out (caller frees with free()) and *out_size, or -1. */
int vl_weights_encode(const char *policy_id, uint64_t version, const vl_tensor_t *tensors,
                      uint32_t n_tensors, uint8_t **out, size_t *out_size);

/* Decodes and validates weights: every tensor of rank 1 .. 4 with no
   dimension 0 and at most lim->max_tensor_elems floats (else VL_ESHAPE,
   VL_ETOOBIG), raw_size 4 x that many (VL_ESHAPE), floats finite. Returns
   VL_OK and sets *out (caller destroys), or the reason. */
vl_reason_t vl_weights_decode(const uint8_t *data, size_t size, const vl_limits_t *lim,
                              vl_weights_t **out);

/* Frees weights and nulls the pointer; safe on NULL and twice. */
void vl_weights_destroy(vl_weights_t **self_p);

/* A learner's announcement to the broker: the policy id it serves. */
int vl_hello_encode(const char *policy_id, uint8_t **out, size_t *out_size);

/* Decodes a Hello into policy_id. Returns VL_OK or the reason. */
vl_reason_t vl_hello_decode(const uint8_t *data, size_t size, char policy_id[VL_POLICY_ID_MAX]);

/* Largest credit a learner may hold open: total_granted - total_received. */
#define VL_CREDIT_MAX (1u << 20)

/* A learner's flow-control report; counters as in volley.proto's Credit. */
typedef struct {
    char policy_id[VL_POLICY_ID_MAX];
    uint64_t total_granted;  // segments it can take since its connection began
    uint64_t total_received; // segments it has received since then
} vl_credit_t;

/* Encodes a Credit (total_granted > 0, at most VL_CREDIT_MAX above
   total_received) into a new buffer (caller frees). Returns 0 or -1. */
int vl_credit_encode(const vl_credit_t *credit, uint8_t **out, size_t *out_size);

/* Decodes a Credit. Returns VL_OK, VL_EMISMATCH when it carries no
   counters (it is a Hello), VL_ESHAPE when total_received > total_granted,
   VL_ETOOBIG when it grants more than VL_CREDIT_MAX, or the reason (protobuf,
   schema, policy id). *credit is written on VL_OK alone. */
vl_reason_t vl_credit_decode(const uint8_t *data, size_t size, vl_credit_t *credit);

#define VL_REFUSALS_MAX     32  // refusal rows in one Stats
#define VL_REFUSAL_TEXT_MAX 128 // bytes of a refusal reason, NUL included

/* Segments a learner refused from one actor for one reason (cumulative). */
typedef struct {
    uint32_t actor_id;
    char reason[VL_REFUSAL_TEXT_MAX];
    uint64_t count;
} vl_refusal_t;

/* A learner's progress report; fields as in volley.proto's Stats. */
typedef struct {
    char policy_id[VL_POLICY_ID_MAX];
    uint64_t version;
    uint64_t env_steps;
    uint64_t episodes;
    float mean_return;
    uint32_t window;
    float lag_mean;
    uint32_t lag_min;
    uint32_t lag_median;
    uint32_t lag_max;
    float policy_loss;
    float value_loss;
    float entropy;
    uint64_t segments_trained;
    uint64_t segments_dropped; // the sum of the four causes below
    uint64_t dropped_lag;      // more than max_lag versions old when their turn came
    uint64_t dropped_capacity; // evicted unread from a full buffer
    uint64_t dropped_budget;   // came after the step budget was spent, not taken
    uint64_t dropped_invalid;  // refused, every reason
    uint64_t segments_arrived; // accepted + refused + over budget
    double uptime_s;
    float ingest_ms; // actor send -> learner ingest, mean since the last report
    float train_ms;  // learner ingest -> weights published after training on it, mean
    uint32_t n_refusals;
    vl_refusal_t refusals[VL_REFUSALS_MAX]; // since the learner started, by actor and reason
    uint32_t n_figures;                     // the env's own figures, each's mean (Stats.figures)
    char figure_names[VL_FIGURES_KEPT][VL_FIGURE_NAME_MAX];
    float figure_means[VL_FIGURES_KEPT];
} vl_stats_t;

/* Encodes stats into a new buffer (caller frees). Returns 0 or -1. */
int vl_stats_encode(const vl_stats_t *stats, uint8_t **out, size_t *out_size);

/* Decodes stats (floats must be finite). Returns VL_OK or the reason. */
vl_reason_t vl_stats_decode(const uint8_t *data, size_t size, vl_stats_t *stats);

#endif
