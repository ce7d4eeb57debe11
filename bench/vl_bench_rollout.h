/*  vl_bench_rollout: realistic segments for benchmarks: an environment
    stepped with uniformly random actions, cut into consecutive segments the
    way an actor cuts them (observations as rows, episode returns recorded). */
#ifndef VL_BENCH_ROLLOUT_H
#define VL_BENCH_ROLLOUT_H

#include <stddef.h>
#include <stdint.h>

#include "envs/vl_env.h"
#include "messages/vl_codec.h"

/* Fills n consecutive segments of horizon T from env seeded with seed.
   Segment k's arrays are calloc'd into arrays[k] (caller frees each).
   Returns 0, or -1 on no memory (arrays made so far are set, the rest NULL). */
int vl_bench_rollout(const vl_env_ops_t *env, uint32_t T, size_t n, uint64_t seed,
                     vl_segment_t *segs, void **arrays);

/* Encodes seg into *wire (*wire_size bytes) and copies the LZ4 block that
   wire carries into *block (*block_len bytes; raw_size when decompressed),
   for benchmarks that time bare LZ4 on exactly what travels. Caller frees
   both. Returns 0, or -1 (what was made is freed and set NULL). */
int vl_bench_encode(const vl_segment_t *seg, uint8_t **wire, size_t *wire_size, uint8_t **block,
                    int *block_len, uint32_t *raw_size);

#endif
