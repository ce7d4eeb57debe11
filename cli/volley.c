/*  volley: one executable, one subcommand per role. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../actors/vl_actor.h"
#include "../broker/vl_broker.h"
#include "../common/vl_opts.h"
#include "../learner/vl_learner.h"
#include "vl_eval.h"
#include "vl_export.h"
#include "vl_keygen.h"
#include "vl_playback.h"
#include "vl_plot.h"
#include "vl_top.h"
#include "vl_up.h"
#include "volley/volley.h"

typedef struct {
    const char *name;
    int (*main)(int argc, char **argv);
    const char *summary;
} s_command_t;

static const s_command_t s_commands[] = {
    {.name = "up", .main = vl_up_main, .summary = "train on this box: broker, learner, N actors"},
    {.name = "broker", .main = vl_broker_main, .summary = "route segments and weights"},
    {.name = "learner", .main = vl_learner_main, .summary = "train a policy, publish weights"},
    {.name = "actor", .main = vl_actor_main, .summary = "step environments, push segments"},
    {.name = "replay",
     .main = vl_playback_main,
     .summary = "train again on a recording, bit for bit"},
    {.name = "top", .main = vl_top_main, .summary = "live view of a run, from the broker"},
    {.name = "ctl", .main = vl_ctl_main, .summary = "ask the broker: status, pause, resume, stop"},
    {.name = "keygen", .main = vl_keygen_main, .summary = "CURVE certificates for a secured run"},
    {.name = "eval",
     .main = vl_eval_main,
     .summary = "score a kept policy on its env; --render to watch"},
    {.name = "export",
     .main = vl_export_main,
     .summary = "a kept policy as safetensors, for PyTorch"},
    {.name = "plot", .main = vl_plot_main, .summary = "learning curves of runs, to PNG/SVG"},
};
#define S_NCOMMANDS (sizeof s_commands / sizeof s_commands[0])

static void s_usage(FILE *out)
{
    fprintf(out, "usage: volley <command> [options]   (volley <command> --help for its options)\n\n"
                 "volley is an actor-learner framework for reinforcement learning on ZeroMQ.\n\n"
                 "commands:\n");
    for (size_t i = 0; i < S_NCOMMANDS; i++)
        fprintf(out, "  %-9s %s\n", s_commands[i].name, s_commands[i].summary);
    fprintf(out, "\nquick start: volley up    (learns CartPole on this machine)\n"
                 "volley --version prints the version of the libvolley it runs on.\n");
}

/* Prints one line refusing an unknown command, naming the nearest one as
   an unknown flag's line does. */
static void s_unknown(const char *name)
{
    struct option names[S_NCOMMANDS + 1] = {{0}};
    for (size_t i = 0; i < S_NCOMMANDS; i++)
        names[i].name = s_commands[i].name;
    const char *near = vl_opt_nearest(name, names);
    if (near)
        fprintf(stderr, "volley: unknown command '%s' (did you mean '%s'?); see --help\n", name,
                near);
    else
        fprintf(stderr, "volley: unknown command '%s'; see --help\n", name);
}

/* From a build tree, points the Python package's commands (plot, eval of a
   Python env) at this checkout's bindings/python, unless VOLLEY_PYTHONPATH
   says otherwise; an installed volley uses the installed package. */
static void s_python_package(void)
{
#ifdef VL_SOURCE_PYTHONPATH
    struct stat st;
    if (stat(VL_SOURCE_PYTHONPATH, &st) == 0 && S_ISDIR(st.st_mode))
        setenv("VOLLEY_PYTHONPATH", VL_SOURCE_PYTHONPATH, 0);
#endif
}

int main(int argc, char **argv)
{
    s_python_package();
    if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
        s_usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("volley %s\n", vl_version());
        return 0;
    }
    for (size_t i = 0; i < S_NCOMMANDS; i++)
        if (strcmp(argv[1], s_commands[i].name) == 0)
            return s_commands[i].main(argc - 1, argv + 1);
    s_unknown(argv[1]);
    return 2;
}
