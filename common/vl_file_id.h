/*  vl_file_id: what identifies a file's contents cheaply: its size and the
    CRC-32C of its bytes. A run records its plugin's, so that eval and
    export load that plugin again only while it is the same file. */
#ifndef VL_FILE_ID_H
#define VL_FILE_ID_H

#include <stdint.h>

typedef struct {
    uint64_t bytes;
    uint32_t crc32c;
} vl_file_id_t;

/* Reads the identity of the regular file at path into *out. Returns 0, or
   -1 with errno (ENOENT, EISDIR for anything not a regular file, a read
   error's). */
int vl_file_id(const char *path, vl_file_id_t *out);

/* Returns 1 if a and b identify the same contents, else 0. */
int vl_file_id_same(const vl_file_id_t *a, const vl_file_id_t *b);

#endif
