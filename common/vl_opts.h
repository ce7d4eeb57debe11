/*  vl_opts: checked parsing of command-line values and broker addresses.
    Each parser prints a clear message naming the option on bad input. */
#ifndef VL_OPTS_H
#define VL_OPTS_H

#include <getopt.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define VL_DEFAULT_PORT 7600

/* Offsets from the broker's base port: what listens where. */
enum {
    VL_PORT_SEGMENTS = 0,    // broker PULL, actors PUSH segments
    VL_PORT_LEARNERS = 1,    // broker ROUTER, learners DEALER (hello, segments)
    VL_PORT_WEIGHTS_IN = 2,  // broker XSUB, learners PUB weights and stats
    VL_PORT_WEIGHTS_OUT = 3, // broker XPUB, actors and monitors SUB
    VL_PORT_CONTROL = 4,     // broker ROUTER: actors' beats, status, pause/resume, shutdown
    VL_PORT_COUNT = 5
};

/* Topic of learner progress reports on the weights stream; policy ids may not
   start with '~', so it never collides with a policy's weights. */
#define VL_STATS_TOPIC "~stats"

/* Parses a whole decimal integer in [lo, hi] into *out. Returns 0, or -1
   after printing "volley <cmd>: --<name> ..." to stderr. */
int vl_opt_long(const char *cmd, const char *name, const char *text, long lo, long hi, long *out);

/* Parses a finite float in [lo, hi] into *out. Returns 0, or -1 after
   printing why. */
int vl_opt_float(const char *cmd, const char *name, const char *text, double lo, double hi,
                 float *out);

/* Builds "tcp://HOST:PORT+offset" from "HOST[:PORT]" (default port
   VL_DEFAULT_PORT). Returns 0, or -1 after printing why. */
int vl_opt_endpoint(const char *cmd, const char *host_port, int offset, char *out, size_t size);

/* Checks a policy id: 1..63 printable bytes, no spaces, not starting with
   '~'. Returns 0, or -1 after printing why. */
int vl_opt_policy(const char *cmd, const char *policy);

/* Finds a base port on 127.0.0.1 with VL_PORT_COUNT consecutive free TCP
   ports, trying from `from` upward. Returns it, or -1. Start below 32768,
   Linux's ephemeral range, so that no outgoing connection takes the port
   between this check and the bind. */
int vl_free_base_port(int from);

/* How a numeric flag's field is stored. */
typedef enum {
    VL_OPT_U32,
    VL_OPT_U64,
    VL_OPT_INT,
    VL_OPT_LONG,
    VL_OPT_FLOAT,
    VL_OPT_I64,
    VL_OPT_SIZE, // size_t
    VL_OPT_KINDS // how many; vl_flags' other kinds follow
} vl_opt_kind_t;

/* A numeric flag of a command: the config field it sets and what it accepts.
   Commands keep a table of these instead of a switch per flag. */
typedef struct {
    const char *name; // the flag without "--"
    vl_opt_kind_t kind;
    size_t offset;    // of the field in the command's config struct
    double lo, hi;    // accepted range, inclusive
    const char *help; // one line; --help appends the default
} vl_num_opt_t;

#define VL_NUM_OPT(type, name, kind, field, lo, hi, help)                                          \
    {                                                                                              \
        name, kind, offsetof(type, field), lo, hi, help                                            \
    }

/* Parses text into the config field o describes. Returns 0, or -1 after
   printing why. */
int vl_opt_set(const char *cmd, const vl_num_opt_t *o, void *config, const char *text);

/* Checks text as the value of the flag o describes, setting nothing.
   Returns 0, or -1 with why ("--lr wants a number in [0, 1], not 'x'"). */
int vl_opt_check(const vl_num_opt_t *o, const char *text, char *why, size_t why_size);

/* Formats the field o describes in config as text (a float as the
   shortest text that parses back to it). */
void vl_opt_format(const vl_num_opt_t *o, const void *config, char *out, size_t size);

/* Prints one help entry per flag, "  --name N  help (default V)", V read
   from the defaults config, as vl_flags_print_one does. */
void vl_opt_print(FILE *out, const vl_num_opt_t *opts, int n, const void *defaults);

/* Writes getopt_long entries for the n flags into out, each returning
   base + its index. Returns n. */
int vl_opt_getopt(const vl_num_opt_t *opts, int n, int base, struct option *out);

/* Returns the name in opts (ending with a zeroed entry) nearest to name,
   or NULL when none is near enough to be what was meant (more than a third
   of its letters, at least 2, off). */
const char *vl_opt_nearest(const char *name, const struct option *opts);

/* Prints one line for the argument getopt_long just refused (call it when
   getopt_long returned '?', with opterr 0 so getopt printed nothing): an
   unknown flag with the nearest known one ("volley up: unknown flag
   --max-step (did you mean --max-steps?); see --help"), or a flag missing
   its value. opts ends with a zeroed entry; shorts is the optstring. */
void vl_opt_refused(const char *cmd, char **argv, const struct option *opts, const char *shorts);

/* The flags every process that talks to a broker shares. */
typedef struct {
    const char *broker;     // --broker HOST[:PORT], required
    const char *policy;     // --policy NAME
    const char *env;        // --env NAME|PATH, for the caller to look up
    const char *env_arg;    // --env-arg TEXT, for the env's create
    const char *model;      // --model SPEC, for the caller to parse
    uint64_t given;         // bit i: numeric flag i (i < 64) was on the command line
    int log_level;          // a vl_log_level_t: --quiet warns, --verbose debugs
    int learner;            // set by the caller: accept --checkpoint DIR and --resume
    const char *checkpoint; // --checkpoint DIR
    const char *metrics;    // --metrics DIR (learners)
    const char *run_dir;    // --run-dir DIR (learners)
    int resume;             // --resume
    int force;              // --force (learners)
    int replay;             // set by the caller: one FILE argument, --pace, --broker optional
    const char *file;       // that FILE
    int pace_recorded;      // --pace recorded (1) or fast (0)
    const char *cert;       // --cert FILE: our CURVE certificate (secret in FILE_secret)
    const char *broker_key; // --broker-key FILE: the broker's public certificate
} vl_role_opts_t;

/* Room a role's option table needs besides its numeric flags (the shared
   flags, the learner's and replay's, the end entry). */
#define VL_OPT_ROLE_EXTRA 18

/* Writes the getopt_long table vl_opt_parse_role uses for the n numeric
   flags and role's kind (role->learner, role->replay) into out, which has
   room for n + VL_OPT_ROLE_EXTRA entries, ending it with a zeroed entry.
   Returns the number of flags. */
int vl_opt_role_options(const vl_num_opt_t *nums, int n, const vl_role_opts_t *role,
                        struct option *out);

/* Returns the entry of opts (ending with a zeroed one) that getopt_long
   takes for the long flag name[len] (without its dashes and =value): the
   one named so, else the only one whose name begins so; NULL when none
   does or several do. */
const struct option *vl_opt_lookup(const struct option *opts, const char *name, size_t len);

/* Parses a role's argv: the shared flags into role (which holds the
   defaults on entry), the n numeric flags into config. Checks that --broker
   is given and well formed, --policy is valid and no argument is left over.
   Returns 0; 1 after printing usage for --help; -1 after printing why. */
int vl_opt_parse_role(const char *cmd, int argc, char **argv, const vl_num_opt_t *nums, int n,
                      void *config, vl_role_opts_t *role, void (*usage)(FILE *out));

/* Prints the shared role flags' help lines. */
void vl_opt_print_role(FILE *out, const char *policy_help);

/* Prints the help lines of --cert and --broker-key. */
void vl_opt_print_curve(FILE *out);

/* Prints the --model line of a role's help. */
void vl_opt_print_model(FILE *out);

/* Checks that --cert and --broker-key come together. Returns 0, or -1
   after printing why. */
int vl_opt_check_curve(const char *cmd, const char *cert, const char *broker_key);

#endif
