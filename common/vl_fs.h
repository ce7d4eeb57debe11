/*  vl_fs: file-system steps the durable file formats share (checkpoints,
    recordings). */
#ifndef VL_FS_H
#define VL_FS_H

/* Makes a new entry (a created or renamed file) in path's directory durable
   with fsync on the directory. Returns 0, or -1 with errno. */
int vl_fs_sync_dir(const char *path);

#endif
