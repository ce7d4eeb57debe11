/*  vl_fs: directory sync. */
#include "vl_fs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int vl_fs_sync_dir(const char *path)
{
    char *dir = strdup(path);
    if (!dir)
        return -1;
    char *slash = strrchr(dir, '/');
    if (slash)
        slash[slash == dir] = '\0'; // keep "/" itself
    int fd = open(slash ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int rc = fd >= 0 && fsync(fd) == 0 ? 0 : -1;
    int err = errno;
    if (fd >= 0)
        close(fd);
    free(dir);
    errno = err;
    return rc;
}
