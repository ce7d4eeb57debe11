/*  vl_file_id: a file's size and CRC-32C, read in fixed-size pieces. */
#include "vl_file_id.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vl_crc32c.h"

#define S_PIECE 65536 // bytes read at a time: the memory used whatever the file's size

int vl_file_id(const char *path, vl_file_id_t *out)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0)
        return -1;
    int bad = fstat(fd, &st) != 0 ? errno : !S_ISREG(st.st_mode) ? EISDIR : 0;
    if (bad) {
        close(fd);
        errno = bad;
        return -1;
    }
    unsigned char piece[S_PIECE];
    uint64_t bytes = 0;
    uint32_t crc = 0;
    ssize_t n;
    while ((n = read(fd, piece, sizeof piece)) != 0) {
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int e = errno;
            close(fd);
            errno = e;
            return -1;
        }
        crc = vl_crc32c(crc, piece, (size_t)n);
        bytes += (uint64_t)n;
    }
    close(fd);
    out->bytes = bytes;
    out->crc32c = crc;
    return 0;
}

int vl_file_id_same(const vl_file_id_t *a, const vl_file_id_t *b)
{
    return a->bytes == b->bytes && a->crc32c == b->crc32c;
}
