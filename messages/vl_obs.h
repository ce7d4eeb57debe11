/*  vl_obs: how observations are described, held and sent. An observation is
    one or more fields, each with a shape and an encoding: f32 as is, u8 one
    value a byte, u2 four values a byte, u1 eight flags a byte (a game's
    2-bit screen and a bit vector of flags cost ~1/40 of their floats).

    An observation has three forms:
    - floats: what an environment writes and a network reads, the fields'
      values concatenated in declared order (u8 as 0..255, u2 as 0..3, u1 as
      0 or 1);
    - a row: what a segment and the learner's buffer hold: an f32 field as
      its floats, any other field one byte a value, each field starting
      4-byte aligned (an all-f32 row is exactly its floats);
    - wire: each field packed, low bits first, padded to a whole byte. */
#ifndef VL_OBS_H
#define VL_OBS_H

#include <stddef.h>
#include <stdint.h>

#include "vl_wire.h"

#define VL_OBS_FIELDS_MAX 8 // fields per observation
#define VL_OBS_NDIM_MAX   4 // dimensions per field

typedef enum {
    VL_OBS_F32 = 0,
    VL_OBS_U8 = 1,
    VL_OBS_U2 = 2,
    VL_OBS_U1 = 3,
    VL_OBS_ENCODINGS
} vl_obs_encoding_t;

typedef struct {
    uint32_t encoding; // a vl_obs_encoding_t
    uint32_t ndim;     // 1 .. VL_OBS_NDIM_MAX
    uint32_t shape[VL_OBS_NDIM_MAX];
} vl_obs_field_t;

typedef struct {
    uint32_t n_fields; // 1 .. VL_OBS_FIELDS_MAX
    vl_obs_field_t fields[VL_OBS_FIELDS_MAX];
} vl_obs_spec_t;

/* Returns a spec of one f32 field of n values. */
vl_obs_spec_t vl_obs_spec_flat(uint32_t n);

/* Returns the encoding's name ("f32", "u8", "u2", "u1") or "?". */
const char *vl_obs_encoding_str(uint32_t encoding);

/* Checks a spec from the wire: field count, encodings, ranks and dims, and
   total values against lim->max_obs_dim. Returns VL_OK, VL_ESHAPE (zero or
   unknown) or VL_ETOOBIG. On VL_OK sets *dim (values per observation) and
   *wire_bytes (packed bytes per observation). */
vl_reason_t vl_obs_spec_check(const vl_obs_spec_t *spec, const vl_limits_t *lim, uint32_t *dim,
                              uint32_t *wire_bytes);

/* Returns the bytes of one row of a checked spec (a multiple of 4). */
uint32_t vl_obs_row_bytes(const vl_obs_spec_t *spec);

/* Returns 1 if two specs declare the same fields. */
int vl_obs_spec_equal(const vl_obs_spec_t *a, const vl_obs_spec_t *b);

/* Turns n observations of floats [n][dim] into rows [n][row_bytes].
   Integer encodings round to nearest and clamp to their range; NaN gives 0. */
void vl_obs_to_rows(const vl_obs_spec_t *spec, size_t n, const float *obs, uint8_t *rows);

/* Turns n rows into floats [n][dim] (what a network reads). */
void vl_obs_from_rows(const vl_obs_spec_t *spec, size_t n, const uint8_t *rows, float *obs);

/* Packs n rows into wire bytes [n][wire_bytes]. */
void vl_obs_pack_rows(const vl_obs_spec_t *spec, size_t n, const uint8_t *rows, uint8_t *wire);

/* Unpacks n observations' wire bytes into rows. f32 values are copied
   unchecked (see vl_obs_rows_finite). */
void vl_obs_unpack_rows(const vl_obs_spec_t *spec, size_t n, const uint8_t *wire, uint8_t *rows);

/* Returns 1 if every f32 value in n rows is finite (the other encodings
   cannot hold a non-finite value). */
int vl_obs_rows_finite(const vl_obs_spec_t *spec, size_t n, const uint8_t *rows);

/* Packs n observations of floats straight into wire bytes (through rows).
   Returns 0, or -1 on no memory. */
int vl_obs_pack(const vl_obs_spec_t *spec, size_t n, const float *obs, uint8_t *out);

/* Unpacks n observations' wire bytes straight into floats. Returns 0, or -1
   on no memory. */
int vl_obs_unpack(const vl_obs_spec_t *spec, size_t n, const uint8_t *in, float *obs);

#endif
