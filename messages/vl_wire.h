/*  vl_wire: what every volley decoder shares: the schema version, the named
    reasons a message is refused for, the limits checked before anything is
    allocated or decompressed, and the small checks and LZ4 helpers the
    message codecs are built from. */
#ifndef VL_WIRE_H
#define VL_WIRE_H

#include <protobuf-c/protobuf-c.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/vl_policy_id.h"

#define VL_SCHEMA_VERSION  3  // 3: action spaces; 2: observations declared as encoded fields
#define VL_SCHEMA_OLDEST   2  // the oldest schema a receiver still reads
#define VL_TENSOR_NAME_MAX 32 // bytes, including the terminating NUL

/* Why a message was refused. VL_OK is 0; the others index counters. */
typedef enum {
    VL_OK = 0,
    VL_EPROTO,     // not a parsable protobuf message (truncated, garbage)
    VL_EVERSION,   // schema field is not VL_SCHEMA_OLDEST .. VL_SCHEMA_VERSION
    VL_ETOOBIG,    // a declared size exceeds the configured limits
    VL_ESHAPE,     // declared sizes disagree with each other or with the data
    VL_ELZ4,       // LZ4 payload corrupt, impossible or decompressing to the wrong size
    VL_ENONFINITE, // NaN or Inf in a float field
    VL_EACTION,    // action outside its space (or the space itself invalid)
    VL_EDONE,      // done other than 0, 1 or 2 (or 2s not as many as the header's
                   // truncations), or log-prob > 0 for a discrete space
    VL_EPOLICY,    // policy id (or tensor name) breaking the name rule, or a string
                   // field holding a NUL byte
    VL_EMISMATCH,  // well formed, but not what this receiver serves (shape, horizon)
    VL_EREASONS    // count of reasons, not a reason
} vl_reason_t;

/* Returns a short constant description of a reason ("malformed protobuf",
   ...), "unknown" out of range. */
const char *vl_reason_str(vl_reason_t reason);

/* Limits a decoder enforces before allocating or decompressing anything. */
typedef struct {
    uint32_t max_horizon;      // steps per segment, e.g. 4096
    uint32_t max_obs_dim;      // values per observation, e.g. 1 << 16
    uint32_t max_actions;      // e.g. 1024
    uint32_t max_tensors;      // per Weights message, e.g. 64
    uint32_t max_tensor_elems; // per tensor, e.g. 1 << 24
    uint32_t max_raw_bytes;    // declared decompressed size of one LZ4 block, e.g. 64 MiB
} vl_limits_t;

/* Returns sane default limits. */
vl_limits_t vl_limits_default(void);

/* Returns 1 if the float is finite, judged by its exponent bits so that it
   holds under -ffast-math too; 0 for NaN and +-Inf. */
int vl_float_is_finite(float f);

/* Returns 1 if the double is finite, judged by its exponent bits. */
int vl_double_is_finite(double d);

/* Returns 1 if all n floats are finite. */
int vl_wire_all_finite(const float *x, size_t n);

/* Returns 1 if s is non-empty printable ASCII shorter than cap bytes (NUL
   included); reads at most cap bytes; NULL gives 0. */
int vl_wire_name_ok(const char *s, size_t cap);

/* Reads a protobuf varint at *p (below end) into *v, advancing *p past it.
   Returns 0, or -1 when it runs past end or over 64 bits. */
int vl_wire_varint(const uint8_t **p, const uint8_t *end, uint64_t *v);

/* Returns 1 if every string field of the encoded message (nested messages
   included) holds no NUL byte, so that what protobuf-c unpacks as a C string
   is the field's bytes whole; 0 otherwise, or on a malformed encoding. */
int vl_wire_strings_whole(const ProtobufCMessageDescriptor *desc, const uint8_t *data, size_t size);

/* Unpacks a message of type desc, refusing one whose strings are not whole
   (vl_wire_strings_whole). Returns it (caller frees with
   protobuf_c_message_free_unpacked, or the type's own free), or NULL with
   *reason VL_EPROTO or VL_EPOLICY. */
void *vl_wire_unpack(const ProtobufCMessageDescriptor *desc, const uint8_t *data, size_t size,
                     vl_reason_t *reason);

/* Checks what every message starts with: the schema version, then a valid
   policy id (vl_policy_id_valid). Returns VL_OK, VL_EVERSION or VL_EPOLICY. */
vl_reason_t vl_wire_check_head(uint32_t schema, const char *policy_id);

/* Checks an LZ4 block before it is decompressed: `expected` raw bytes
   implied by the declared shape, raw_size as declared, len compressed bytes.
   VL_ETOOBIG over lim->max_raw_bytes; VL_ESHAPE if raw_size != expected;
   VL_ELZ4 if len is 0, above LZ4_compressBound(raw_size), or too small for
   raw_size (LZ4 never expands more than 255:1, so a bomb claiming more is
   refused before anything is allocated). */
vl_reason_t vl_wire_check_block(const vl_limits_t *lim, uint64_t expected, uint32_t raw_size,
                                size_t len);

/* Decompresses a checked block of len bytes into dst (raw_size bytes).
   Returns VL_OK, or VL_ELZ4 if it is corrupt or not exactly raw_size. */
vl_reason_t vl_wire_decompress(const uint8_t *block, size_t len, uint32_t raw_size, void *dst);

/* Compresses n bytes into a new LZ4 block. Returns it (caller frees) and
   sets *len, or NULL on no memory or n over LZ4_MAX_INPUT_SIZE. */
uint8_t *vl_wire_compress(const void *src, size_t n, size_t *len);

/* Packs a protobuf-c message into a new buffer. Returns 0 and sets *out
   (caller frees) and *out_size, or -1 on no memory. */
int vl_wire_pack(const ProtobufCMessage *msg, uint8_t **out, size_t *out_size);

#endif
