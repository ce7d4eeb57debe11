/*  vl_checkpoint: a learner's state saved as a list of named sections of
    bytes (weights, optimizer moments, the replay buffer...), written
    atomically and fully verified on read.

    File format, version 1. All integers little-endian; "crc" is CRC-32C
    (common/vl_crc32c.h).

      header, 48 bytes
        0   magic       8  "VLCKPT\0\1"
        8   version     4  1
        12  n_sections  4  <= VL_CHECKPOINT_MAX_SECTIONS
        16  chunk_size  4  raw bytes per chunk, VL_CHECKPOINT_MIN_CHUNK..MAX_CHUNK
        20  reserved    4  0
        24  n_chunks    8  chunks in all sections
        32  file_size   8  bytes in the whole file, trailer included
        40  reserved    8  0
      section table, 40 bytes per section, in order
        0   name        32 1..31 printable ASCII characters, NUL-padded; unique
        32  raw_size    8  the section's bytes
      chunk table, 16 bytes per chunk: the chunks of section 0, then of 1...
        A section of raw_size bytes has ceil(raw_size / chunk_size) chunks
        (an empty one has none); each holds chunk_size raw bytes but the
        section's last, which holds the rest.
        0   raw_size    4  exactly as above
        4   stored_size 4  bytes in the file; == raw_size: stored as is,
                           < raw_size: one LZ4 block (raw_size <= 256 x it)
        8   raw_crc     4  crc of the raw bytes
        12  stored_crc  4  crc of the stored bytes
      meta_crc, 8 bytes: crc of everything above (4), then 4 zero bytes
      data: every chunk's stored bytes, in chunk-table order, nothing between
      trailer, 16 bytes
        0   file_crc    4  crc of every byte before the trailer
        4   reserved    4  0
        8   magic       8  "VLCKEND\0"

    Every field is checked on read before it is used: sizes are checked
    against the file's length before anything is allocated, so memory use is
    bounded by 256 x the file size whatever the header claims. Chunks are
    compressed (on write) and decompressed (on read) by two threads, each
    running LZ4 and CRC-32C on a chunk while the other's chunk is written or
    read. */
#ifndef VL_CHECKPOINT_H
#define VL_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#define VL_CHECKPOINT_NAME_MAX     31   // characters in a section name
#define VL_CHECKPOINT_MAX_SECTIONS 4096 // bounds the section table a reader accepts
// Raw bytes per chunk by default: 1 and 4 MiB bench the same; 1 MiB splits
// sections of a few MB (weights, moments) between the two threads.
#define VL_CHECKPOINT_CHUNK     (1u << 20)
#define VL_CHECKPOINT_MIN_CHUNK 64          // small chunks only make sense in tests
#define VL_CHECKPOINT_MAX_CHUNK (64u << 20) // far below LZ4_MAX_INPUT_SIZE
#define VL_CHECKPOINT_THREADS   2           // compressing / decompressing threads

typedef struct {
    const char *name; // 1..31 printable ASCII characters, unique in a checkpoint
    const void *data; // size bytes, may be NULL when size is 0
    size_t size;
} vl_section_t;

/* Tuning; a zero field takes the default. */
typedef struct {
    uint32_t chunk_size; // raw bytes per chunk (write only); default VL_CHECKPOINT_CHUNK
    int acceleration;    // LZ4_compress_fast's (write only): higher is faster, larger; default 1
    int threads;         // 1..16; default VL_CHECKPOINT_THREADS
} vl_checkpoint_opts_t;

typedef struct vl_checkpoint_s vl_checkpoint_t;

/* Writes the n sections to path atomically: a temp file in the same
   directory, fsync, rename over path, fsync the directory. Returns 0, or -1
   after logging why (bad name, disk full, permissions...), leaving any
   previous file at path intact and no temp file behind. */
int vl_checkpoint_write(const char *path, const vl_section_t *sections, int n);

/* As vl_checkpoint_write, tuned by opts (NULL: defaults). */
int vl_checkpoint_write_opts(const char *path, const vl_section_t *sections, int n,
                             const vl_checkpoint_opts_t *opts);

/* Reads and fully verifies the checkpoint at path (magic, version, every
   size against the file's, every CRC, exact decompressed sizes). Returns
   it (caller owns it), or NULL with a one-line reason in why[why_size]
   ("truncated at byte N", "checksum mismatch in section 'adam' chunk 3",
   "not a volley checkpoint"...). Nothing of a bad file is ever returned. */
vl_checkpoint_t *vl_checkpoint_read(const char *path, char *why, size_t why_size);

/* As vl_checkpoint_read, with opts->threads decompressing (NULL: defaults). */
vl_checkpoint_t *vl_checkpoint_read_opts(const char *path, const vl_checkpoint_opts_t *opts,
                                         char *why, size_t why_size);

/* Returns the section's bytes (owned by the checkpoint, valid until it is
   destroyed) and sets *size, or NULL if there is no such section. An empty
   section gives a non-NULL pointer and size 0. size may be NULL. */
const void *vl_checkpoint_get(const vl_checkpoint_t *self, const char *name, size_t *size);

/* Hands a non-empty section's bytes to the caller, who free()s them (large
   sections are 2 MiB aligned): a reader that keeps a section skips a copy.
   The section then reads as empty. Returns NULL, *size untouched, if there
   is no such non-empty section. */
void *vl_checkpoint_take(vl_checkpoint_t *self, const char *name, size_t *size);

/* Returns how many sections the checkpoint has. */
int vl_checkpoint_count(const vl_checkpoint_t *self);

/* Returns the name of section i (0..count-1), or NULL when out of range. */
const char *vl_checkpoint_name(const vl_checkpoint_t *self, int i);

/* Frees the checkpoint and its sections and nulls the pointer; safe on
   NULL and twice. */
void vl_checkpoint_destroy(vl_checkpoint_t **self_p);

#endif
