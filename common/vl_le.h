/*  vl_le: little-endian fields in byte buffers, whatever the host, for the
    file formats (store/vl_checkpoint.c, messages/vl_stream.c). */
#ifndef VL_LE_H
#define VL_LE_H

#include <stdint.h>

/* Writes v at p, least significant byte first. */
static inline void vl_le_put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* Writes v at p, least significant byte first. */
static inline void vl_le_put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* Reads a little-endian uint32 at p. */
static inline uint32_t vl_le_get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Reads a little-endian uint64 at p. */
static inline uint64_t vl_le_get64(const uint8_t *p)
{
    return (uint64_t)vl_le_get32(p) | (uint64_t)vl_le_get32(p + 4) << 32;
}

#endif
