/*  vl_crc32c: CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the
    checksum of iSCSI, ext4 and SCTP. Written here because Debian packages no
    maintained C library for it. vl_crc32c picks at run time the SSE4.2 crc32
    instruction (three interleaved streams) when the CPU has it, otherwise a
    slicing-by-8 table; both give the same values. All functions are
    thread-safe. */
#ifndef VL_CRC32C_H
#define VL_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Returns the CRC-32C of data[0..n) continued from crc (0 to start), so
   vl_crc32c(vl_crc32c(0, a, na), b, nb) is the CRC of a followed by b. */
uint32_t vl_crc32c(uint32_t crc, const void *data, size_t n);

/* Returns the CRC-32C of A followed by B given crc_a of A, crc_b of B and
   B's length; costs O(log len_b), reads no data. */
uint32_t vl_crc32c_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b);

/* As vl_crc32c, always with the portable table code (for tests, benches). */
uint32_t vl_crc32c_sw(uint32_t crc, const void *data, size_t n);

/* As vl_crc32c, with the SSE4.2 instruction when vl_crc32c_hw_available(),
   else the table code. */
uint32_t vl_crc32c_hw(uint32_t crc, const void *data, size_t n);

/* Returns 1 if this CPU has the SSE4.2 crc32 instruction, else 0. */
int vl_crc32c_hw_available(void);

#endif
