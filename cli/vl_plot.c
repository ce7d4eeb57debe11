/*  vl_plot: hands `volley plot` to the Python package, which draws with
    matplotlib: the curves, legends and PNG/SVG output are what matplotlib
    does well, and the package already reads runs for scripts. */
#include "vl_plot.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

// Debian's python3 (sees python3-matplotlib); another may come first on PATH.
#define S_PYTHON "/usr/bin/python3"
#ifndef VL_PYTHONPATH
#define VL_PYTHONPATH "" // set by CMake: this checkout's bindings/python
#endif

/* Puts this checkout's bindings/python (if it is there) in front of
   PYTHONPATH, unless VOLLEY_PYTHONPATH names another. */
static void s_pythonpath(void)
{
    const char *dir = getenv("VOLLEY_PYTHONPATH");
    struct stat st;
    if (!dir || !dir[0])
        dir = VL_PYTHONPATH;
    if (!dir[0] || stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return;
    const char *old = getenv("PYTHONPATH");
    size_t n = strlen(dir) + (old ? strlen(old) : 0) + 2;
    char *path = malloc(n);
    if (!path)
        return;
    snprintf(path, n, "%s%s%s", dir, old && old[0] ? ":" : "", old && old[0] ? old : "");
    setenv("PYTHONPATH", path, 1);
    free(path);
}

int vl_plot_main(int argc, char **argv)
{
    char **args = calloc((size_t)argc + 4, sizeof *args);
    if (!args) {
        fprintf(stderr, "volley plot: no memory\n");
        return 1;
    }
    args[0] = S_PYTHON;
    args[1] = "-m";
    args[2] = "volley.plot";
    for (int i = 1; i < argc; i++)
        args[i + 2] = argv[i];
    s_pythonpath();
    execv(S_PYTHON, args);
    fprintf(stderr,
            "volley plot: cannot run %s: %s (volley plot needs python3 and "
            "python3-matplotlib)\n",
            S_PYTHON, strerror(errno));
    free(args);
    return 1;
}
