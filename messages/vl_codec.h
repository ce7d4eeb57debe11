/*  vl_codec: volley's messages to and from wire bytes.
    Every decoder treats its input as hostile: it bounds-checks, validates and
    returns a named reason; it never crashes and never allocates more than the
    limits allow. The wire itself is documented in messages/volley.proto. */
#ifndef VL_CODEC_H
#define VL_CODEC_H

#include <stddef.h>
#include <stdint.h>

#define VL_SCHEMA_VERSION  1
#define VL_POLICY_ID_MAX   64 // bytes, including the terminating NUL
#define VL_TENSOR_NAME_MAX 32 // bytes, including the terminating NUL
#define VL_OBS_NDIM_MAX    4

/* Why a message was refused. VL_OK is 0; the others index counters. */
typedef enum {
    VL_OK = 0,
    VL_EPROTO,     // not a parsable protobuf message (truncated, garbage)
    VL_EVERSION,   // schema field is not VL_SCHEMA_VERSION
    VL_ETOOBIG,    // a declared size exceeds the configured limits
    VL_ESHAPE,     // declared sizes disagree with each other or with the data
    VL_ELZ4,       // LZ4 payload corrupt or decompresses to the wrong size
    VL_ENONFINITE, // NaN or Inf in a float field
    VL_EACTION,    // action outside [0, num_actions)
    VL_EDONE,      // done flag other than 0 or 1, or log-prob > 0
    VL_EPOLICY,    // policy id empty, too long or not printable
    VL_EMISMATCH,  // well formed, but not what this receiver serves (shape, horizon)
    VL_EREASONS    // count of reasons, not a reason
} vl_reason_t;

/* Returns a short constant description of a reason ("malformed protobuf", ...). */
const char *vl_reason_str(vl_reason_t reason);

/* Limits a decoder enforces before allocating or decompressing anything. */
typedef struct {
    uint32_t max_horizon;      // e.g. 4096
    uint32_t max_obs_dim;      // product of obs_shape, e.g. 1 << 16
    uint32_t max_actions;      // e.g. 1024
    uint32_t max_tensors;      // per Weights message, e.g. 64
    uint32_t max_tensor_elems; // per tensor, e.g. 1 << 24
} vl_limits_t;

/* Returns sane default limits. */
vl_limits_t vl_limits_default(void);

/* A segment's header and pointers into its decompressed arrays. */
typedef struct {
    uint32_t actor_id;
    uint32_t env_id;
    uint64_t seq;
    char policy_id[VL_POLICY_ID_MAX];
    uint64_t policy_version;
    uint32_t horizon; // T
    uint32_t obs_ndim;
    uint32_t obs_shape[VL_OBS_NDIM_MAX];
    uint32_t obs_dim; // product of obs_shape
    uint32_t num_actions;
    int64_t send_ns;
    float *obs;                // [(T + 1) * obs_dim]
    int32_t *actions;          // [T]
    float *rewards;            // [T]
    float *dones;              // [T]
    float *logp;               // [T]
    uint32_t n_episodes;       // <= T
    float *episode_returns;    // [n_episodes]
    uint32_t *episode_lengths; // [n_episodes]
} vl_segment_t;

/* Returns the bytes of array storage a segment of horizon T and obs_dim D
   needs: the payload arrays plus room for T episode returns and lengths. */
size_t vl_segment_arrays_size(uint32_t T, uint32_t D);

/* Points seg's array fields into `arrays` (vl_segment_arrays_size bytes,
   4-byte aligned) for seg->horizon and seg->obs_dim, in payload order. */
void vl_segment_bind(vl_segment_t *seg, void *arrays);

/* Encodes seg (its arrays must be bound and filled) into a new buffer.
   Returns 0 and sets *out (caller frees with free()) and *out_size, or -1. */
int vl_segment_encode(const vl_segment_t *seg, uint8_t **out, size_t *out_size);

/* Reads only the header of a segment: fills seg's scalar fields (not its
   arrays) after checking schema, policy id and limits. Lets a receiver pick
   the storage before decompressing. Returns VL_OK or the reason. */
vl_reason_t vl_segment_peek(const uint8_t *data, size_t size, const vl_limits_t *lim,
                            vl_segment_t *seg);

/* Decodes and fully validates a segment: header as vl_segment_peek, then the
   LZ4 payload decompressed straight into `arrays` (capacity arrays_cap bytes;
   VL_ETOOBIG if too small), then every value checked. On VL_OK seg's arrays
   point into `arrays`. On failure the content of `arrays` is unspecified. */
vl_reason_t vl_segment_decode(const uint8_t *data, size_t size, const vl_limits_t *lim,
                              vl_segment_t *seg, void *arrays, size_t arrays_cap);

/* One named float tensor of rank 1 or 2 (rows x cols; cols = 1 for rank 1). */
typedef struct {
    char name[VL_TENSOR_NAME_MAX];
    uint32_t rows;
    uint32_t cols;
    uint32_t ndim; // 1 or 2
    float *data;   // rows * cols floats
} vl_tensor_t;

/* Decoded weights; vl_weights_decode allocates, vl_weights_destroy frees. */
typedef struct {
    char policy_id[VL_POLICY_ID_MAX];
    uint64_t version;
    uint32_t n_tensors;
    vl_tensor_t *tensors; // owned
} vl_weights_t;

/* Encodes a policy's tensors at a version into a new buffer.
   Returns 0 and sets *out (caller frees with free()) and *out_size, or -1. */
int vl_weights_encode(const char *policy_id, uint64_t version, const vl_tensor_t *tensors,
                      uint32_t n_tensors, uint8_t **out, size_t *out_size);

/* Decodes and validates weights (shapes bounded, sizes consistent, floats
   finite). Returns VL_OK and sets *out (caller destroys), or the reason. */
vl_reason_t vl_weights_decode(const uint8_t *data, size_t size, const vl_limits_t *lim,
                              vl_weights_t **out);

/* Frees weights and nulls the pointer; safe on NULL and twice. */
void vl_weights_destroy(vl_weights_t **self_p);

/* Returns 1 if the float is finite, judged by its exponent bits so that it
   holds under -ffast-math too; 0 for NaN and +-Inf. */
int vl_float_is_finite(float f);

/* A learner's announcement to the broker: the policy id it serves. */
int vl_hello_encode(const char *policy_id, uint8_t **out, size_t *out_size);

/* Decodes a Hello into policy_id. Returns VL_OK or the reason. */
vl_reason_t vl_hello_decode(const uint8_t *data, size_t size, char policy_id[VL_POLICY_ID_MAX]);

/* A learner's progress report; fields as in volley.proto's Stats. */
typedef struct {
    char policy_id[VL_POLICY_ID_MAX];
    uint64_t version;
    uint64_t env_steps;
    uint64_t episodes;
    float mean_return;
    uint32_t window;
    float lag_mean;
    uint32_t lag_max;
    float policy_loss;
    float value_loss;
    float entropy;
    uint64_t segments_trained;
    uint64_t segments_dropped;
    double uptime_s;
} vl_stats_t;

/* Encodes stats into a new buffer (caller frees). Returns 0 or -1. */
int vl_stats_encode(const vl_stats_t *stats, uint8_t **out, size_t *out_size);

/* Decodes stats (floats must be finite). Returns VL_OK or the reason. */
vl_reason_t vl_stats_decode(const uint8_t *data, size_t size, vl_stats_t *stats);

#endif
