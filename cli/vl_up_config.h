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
    const vl_env_ops_t *env;
    const char *env_arg; // passed through: --env-arg TEXT
    /* passed through to the actors: --obs-check MODE (NULL: theirs) */
    const char *obs_check;
    const char *model;                  // --model SPEC as given (NULL: the env's default)
    char model_text[VL_SPEC_MODEL_MAX]; // the model resolved: canonical, passed to every role
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

#endif
