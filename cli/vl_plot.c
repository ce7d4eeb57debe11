/*  vl_plot: hands `volley plot` to the Python package, which draws with
    matplotlib: the curves, legends and PNG/SVG output are what matplotlib
    does well, and the package already reads runs for scripts. The Python
    it starts runs on the libvolley.so beside this program (VOLLEY_LIB),
    wherever it was built or installed: nothing about this machine is
    compiled in. */
#include "vl_plot.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define S_PYTHON   "python3" // looked for on PATH
#define S_PATH_MAX 4096
#ifndef VL_LIBDIR_FROM_BINDIR
#define VL_LIBDIR_FROM_BINDIR "../lib" // cli/CMakeLists.txt gives the install's own
#endif

extern char **environ;

/* Puts $VOLLEY_PYTHONPATH (the volley program sets it to its checkout's
   bindings/python when it runs from a build tree) in front of PYTHONPATH. */
static void s_pythonpath(void)
{
    const char *dir = getenv("VOLLEY_PYTHONPATH");
    struct stat st;
    if (!dir || !dir[0] || stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
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

/* Sets VOLLEY_LIB to the libvolley.so built or installed beside this
   program (the same sources as the objects it holds), so that the Python
   package loads that library and not another one on the machine: in a
   build tree it sits in the program's folder, installed in
   VL_LIBDIR_FROM_BINDIR from it. Left alone when neither is there. */
static void s_own_library(void)
{
    char exe[S_PATH_MAX], lib[S_PATH_MAX + 64];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return;
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash)
        return;
    *slash = '\0';
    const char *tries[] = {"libvolley.so", VL_LIBDIR_FROM_BINDIR "/libvolley.so.0"};
    for (size_t i = 0; i < sizeof tries / sizeof tries[0]; i++) {
        if (tries[i][0] == '/')
            snprintf(lib, sizeof lib, "%s", tries[i]);
        else
            snprintf(lib, sizeof lib, "%s/%s", exe, tries[i]);
        char *real = realpath(lib, NULL);
        if (real) {
            setenv("VOLLEY_LIB", real, 1);
            free(real);
            return;
        }
    }
}

/* Returns 1 if python runs `-c probe` with exit 0 (its output discarded). */
static int s_python_has(const char *python, const char *probe)
{
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    char *args[] = {(char *)python, "-c", (char *)probe, NULL};
    pid_t pid;
    int status = 1;
    if (posix_spawn(&pid, python, &fa, NULL, args, environ) == 0)
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            ;
    posix_spawn_file_actions_destroy(&fa);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* Chooses the Python to run into out[size]: $VOLLEY_PYTHON when set, else
   the first python3 on PATH that imports what the command needs (probe):
   a Python of a virtualenv or pyenv first on PATH may lack what the
   system's has. Returns 0, or -1 when no python3 on PATH runs the probe. */
static int s_choose_python(const char *probe, char *out, size_t size)
{
    const char *given = getenv("VOLLEY_PYTHON");
    snprintf(out, size, "%s", given && given[0] ? given : S_PYTHON);
    const char *path = getenv("PATH");
    if ((given && given[0]) || !probe)
        return 0;
    if (!path)
        return -1;
    char dirs[S_PATH_MAX], cand[S_PATH_MAX + 16];
    snprintf(dirs, sizeof dirs, "%s", path);
    char *save = NULL;
    for (char *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        if (snprintf(cand, sizeof cand, "%s/%s", *d ? d : ".", S_PYTHON) >= (int)sizeof cand ||
            access(cand, X_OK) != 0)
            continue;
        if (s_python_has(cand, probe)) {
            snprintf(out, size, "%s", cand);
            return 0;
        }
    }
    return -1;
}

int vl_python_exec(const char *cmd, const char *module, const char *probe, int argc, char **argv)
{
    char python[S_PATH_MAX + 16];
    char **args = calloc((size_t)argc + 4, sizeof *args);
    if (!args) {
        fprintf(stderr, "volley %s: no memory\n", cmd);
        return 1;
    }
    s_pythonpath();
    s_own_library();
    if (s_choose_python(probe, python, sizeof python) != 0) {
        fprintf(stderr,
                "volley %s: no python3 on PATH can run `%s` (install what it needs, e.g. "
                "python3-numpy%s, or name a Python: VOLLEY_PYTHON=/path/to/python3)\n",
                cmd, probe, strstr(probe, "matplotlib") ? " python3-matplotlib" : "");
        free(args);
        return 1;
    }
    args[0] = python;
    args[1] = "-m";
    args[2] = (char *)module;
    for (int i = 1; i < argc; i++)
        args[i + 2] = argv[i];
    fflush(stdout);
    execvp(python, args);
    fprintf(stderr, "volley %s: cannot run %s: %s (volley %s needs python3 on PATH%s)\n", cmd,
            python, strerror(errno), cmd,
            strcmp(cmd, "plot") == 0 ? " and python3-matplotlib" : "");
    free(args);
    return 1;
}

int vl_plot_main(int argc, char **argv)
{
    return vl_python_exec("plot", "volley.plot", "import numpy, matplotlib", argc, argv);
}
