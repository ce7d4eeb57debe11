/*  vl_up_config: what `volley up` is told: its flags, a configuration file
    a person can edit (--config FILE, INI style, flags on the command line
    override it), and the resolved configuration it writes into the run
    directory, which --config reads back to rerun the same thing. */
#ifndef VL_UP_CONFIG_H
#define VL_UP_CONFIG_H

#include <stdio.h>

#include "../envs/vl_env.h"
#include "../messages/vl_spec.h"

#define VL_UP_MAX_ACTORS 64
#define VL_UP_MAX_PASS   64 // learner flags passed through, each a name and a value

typedef enum { VL_UNTIL_DEFAULT, VL_UNTIL_SOLVED, VL_UNTIL_STEPS, VL_UNTIL_SECONDS } vl_until_t;

typedef struct {
    const vl_env_ops_t *env; // a C env (NULL for a Python env)
    const char *python_env;  // --env MOD:FN: the actors are Python's, stepping MOD.FN() (or NULL)
    const char *env_arg;     // passed through: --env-arg TEXT
    /* passed through to the actors: --obs-check MODE (NULL: theirs) */
    const char *obs_check;
    const char *model;                  // --model SPEC as given (NULL: the env's default)
    char model_text[VL_SPEC_MODEL_MAX]; // the model resolved: canonical, passed to every role
                                        // (a Python env's: --model as given, "" for none)
    long actors, envs, port, horizon, hidden, seed, max_steps, max_seconds, batch, retain;
    long max_ahead, wait_ms; // the actors' (-1: theirs)
    vl_until_t until;
    const char *pass[2 * VL_UP_MAX_PASS]; // learner flags passed through: name, value
    int n_pass;
    const char *checkpoint; // the learner's --checkpoint DIR (default: the run's checkpoints/)
    const char *record;     // the broker's --record FILE (relative: in the run directory)
    const char *name;       // the run's name (NULL: time and env)
    const char *runs;       // where run directories go
    const char *config;     // --config FILE read first, or NULL
    const char *bind;       // the broker's interface, reached by remote actors (NULL: loopback)
    const char *keys;       // a `volley keygen` directory: every role uses CURVE (NULL: none)
    int resume;
    int force; // the learner starts over where --checkpoint DIR holds one (kept as .bak)
    int verbose;
    int lr_anneal;      // 1: lr falls linearly to 0 at --max-steps
    int deterministic;  // one actor in lockstep with the learner: the same run twice
    int torch;          // 1: the learner is the PyTorch engine's (--learner torch)
    const char *device; // the torch learner's --device D (NULL: its own choice)
    const char *amp;    // the torch learner's --amp MODE (NULL: off)
    const char *torch_model; // --torch-model MOD:FN: the user's torch module (NULL: the spec's)
    int compile;        // 1: the torch learner's --compile
    char **argv;        // the arguments parsed (the config file's first), owned
    char *notes;        // owned: lines said after parsing (a resume's overrides), or NULL
    int argc;
} vl_up_config_t;

/* Parses `volley up` arguments (argv[0] "up"): the entries of a --config
   FILE first, then the command line's. Returns 0; 1 after printing usage
   for --help; -1 after printing why ("volley up: run.ini:3: ..." for the
   file's). Call vl_up_config_free after 0 or -1. */
int vl_up_config_parse(int argc, char **argv, vl_up_config_t *c);

/* Frees what parsing kept. */
void vl_up_config_free(vl_up_config_t *c);

/* Writes the resolved configuration as a --config file: [up] with every
   key (learner flags at their effective values), so that reading it back
   runs the same thing. */
void vl_up_config_write(FILE *out, const vl_up_config_t *c);

/* Returns the env's name as a run says it: MOD:FN for a Python env, else
   the C env's name. */
const char *vl_up_config_env_name(const vl_up_config_t *c);

/* Writes the Python that runs up's Python children (the PyTorch learner,
   the actors of a Python env) and `volley eval` of a Python env into
   out[size]: $VOLLEY_PYTHON; else the .venv of the checkout this volley
   was built in (BUILD/../.venv/bin/python, which compose/setup.sh makes);
   else python3 from PATH. Points $VOLLEY_LIB at the libvolley beside this
   executable (unless set), so that Python runs the library the rest of the
   run does. */
void vl_up_config_python(char *out, size_t size);

#endif
