/*  vl_flags: a command's flags as one table, from which the command line is
    parsed, refused flags are named and --help is written, so that what a
    command accepts and what its help says cannot drift apart. */
#ifndef VL_FLAGS_H
#define VL_FLAGS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "vl_opts.h"

/* What a flag's field holds and how its value is read. The numeric kinds
   are vl_opt_kind_t's, parsed and range-checked as vl_opt_set does. */
typedef enum {
    VL_FLAG_TEXT = VL_OPT_KINDS, // const char *: the value as given
    VL_FLAG_POLICY,              // const char *: a policy id (vl_opt_policy)
    VL_FLAG_SET,                 // int: no value; the flag sets the field to lo
    VL_FLAG_WORD,                // its own parse function reads the value
    VL_FLAG_HELP                 // no value, no field: the parse prints --help
} vl_flag_kind_t;

/* Reads text into field for a VL_FLAG_WORD flag. Returns 0, or -1 with why
   (the whole message after "volley CMD: ") written. */
typedef int (*vl_flag_parse_fn)(const char *text, void *field, char *why, size_t why_size);

/* One flag of a command. */
typedef struct {
    const char *name;       // without "--"; NULL ends a table
    char short_name;        // also taken as -C (0: none)
    int kind;               // a vl_opt_kind_t or vl_flag_kind_t
    size_t offset;          // of its field in the command's args struct
    double lo, hi;          // numeric: the accepted range; VL_FLAG_SET: lo is what it sets
    const char *value;      // the value's placeholder in help ("N", "FILE"); NULL: takes none
    const char *help;       // one sentence, wrapped by --help
    const char *shown;      // the default as --help says it, where the field's is not it
                            // (NULL: the defaults struct's value; "": none)
    int required;           // refused when missing; unbracketed in the usage line
    vl_flag_parse_fn parse; // VL_FLAG_WORD's reader
} vl_flag_t;

/* Table entries for an args struct of type T. */
#define VL_FLAG_NUM(T, name, kind, field, lo, hi, value, help)                                     \
    {                                                                                              \
        name, 0, kind, offsetof(T, field), lo, hi, value, help, NULL, 0, NULL                      \
    }
#define VL_FLAG_STR(T, name, field, value, help)                                                   \
    {                                                                                              \
        name, 0, VL_FLAG_TEXT, offsetof(T, field), 0, 0, value, help, NULL, 0, NULL                \
    }
#define VL_FLAG_STR_REQUIRED(T, name, field, value, help)                                          \
    {                                                                                              \
        name, 0, VL_FLAG_TEXT, offsetof(T, field), 0, 0, value, help, NULL, 1, NULL                \
    }
#define VL_FLAG_SWITCH(T, name, field, help)                                                       \
    {                                                                                              \
        name, 0, VL_FLAG_SET, offsetof(T, field), 1, 0, NULL, help, "", 0, NULL                    \
    }
#define VL_FLAG_SETS(T, name, field, to, help)                                                     \
    {                                                                                              \
        name, 0, VL_FLAG_SET, offsetof(T, field), to, 0, NULL, help, "", 0, NULL                   \
    }
#define VL_FLAG_POLICY_ID(T, name, field, help)                                                    \
    {                                                                                              \
        name, 0, VL_FLAG_POLICY, offsetof(T, field), 0, 0, "NAME", help, NULL, 0, NULL             \
    }
#define VL_FLAG_CHOICE(T, name, field, parse, value, help)                                         \
    {                                                                                              \
        name, 0, VL_FLAG_WORD, offsetof(T, field), 0, 0, value, help, NULL, 0, parse               \
    }
#define VL_FLAG_HELP_H                                                                             \
    {                                                                                              \
        "help", 'h', VL_FLAG_HELP, 0, 0, 0, NULL, "this text", "", 0, NULL                         \
    }
#define VL_FLAG_END                                                                                \
    {                                                                                              \
        NULL, 0, 0, 0, 0, 0, NULL, NULL, NULL, 0, NULL                                             \
    }

/* A number as text, for help that names a #define's value. */
#define VL_QUOTE(x)  VL_QUOTE_(x)
#define VL_QUOTE_(x) #x

/* A positional argument, for the help text. */
typedef struct {
    const char *name; // as the usage line writes it ("RUN"); NULL ends a list
    const char *help;
} vl_flag_arg_t;

/* A command: its flags and the words of its --help around them. */
typedef struct {
    const char *name;          // "eval": messages start "volley eval: "
    const char *operands;      // the positional arguments in the usage line (NULL: none)
    const char *forms;         // further usage lines, each ending "\n" (NULL: none)
    const char *about;         // the paragraphs between the usage and the flags
    const vl_flag_arg_t *args; // positional arguments described before the flags (NULL: none)
    const vl_flag_t *flags;    // ends with VL_FLAG_END
    const char *footer;        // after the flags, e.g. the exit codes (NULL: none)
} vl_flag_cmd_t;

/* A table and the struct its offsets point into, for parsing several
   tables (a role's shared flags and its numeric ones) as one command line. */
typedef struct {
    const vl_flag_t *flags; // ends with VL_FLAG_END
    void *args;
    uint64_t given; // set by the parse: bit i when flags[i] (i < 64) was on the command line
} vl_flag_group_t;

/* Parses argv's flags into the n groups' structs (which hold the defaults
   on entry) and sets *first to the index of the first positional argument
   (getopt_long moves them last). Refuses an unknown flag, a missing or
   malformed value and a missing required flag with one line on stderr.
   Returns 0; 1 when a VL_FLAG_HELP flag came (nothing printed); -1 after
   printing why. */
int vl_flags_parse_groups(const char *cmd, int argc, char **argv, vl_flag_group_t *groups, int n,
                          int *first);

/* Parses a command's argv into args (which holds the defaults on entry),
   printing the help generated from cmd to stdout for --help, with defaults
   read from the defaults struct. *first and *given (each may be NULL) get
   the first positional argument's index and which flags came. Returns 0;
   1 after printing help; -1 after printing why. */
int vl_flags_parse(const vl_flag_cmd_t *cmd, int argc, char **argv, void *args,
                   const void *defaults, int *first, uint64_t *given);

/* Prints cmd's help: the usage line made from its flags and operands, its
   about text, its arguments and one entry per flag with its default read
   from the defaults struct. */
void vl_flags_print_help(FILE *out, const vl_flag_cmd_t *cmd, const void *defaults);

/* Prints one flag's help entry, "  --name VALUE      help (default D)",
   wrapped at 80 columns. defaults may be NULL (no default shown). */
void vl_flags_print_one(FILE *out, const vl_flag_t *f, const void *defaults);

/* Returns the flag a numeric option describes. */
vl_flag_t vl_flag_of_num(const vl_num_opt_t *o);

#endif
