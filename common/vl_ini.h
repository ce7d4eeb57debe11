/*  vl_ini: configuration files a person edits by hand, INI style:

        # a comment (a line whose first non-blank is '#' or ';')
        [section]
        key = value

    Keys are letters, digits, '-' and '_'; a value is the rest of the line,
    blanks trimmed (it may be empty, may hold '#', and is never quoted).
    Everything is checked: line length, printable text, a key twice in one
    section, a key before any section when sections are required. A refusal
    says "FILE:LINE: reason". */
#ifndef VL_INI_H
#define VL_INI_H

#include <stddef.h>

#define VL_INI_MAX_LINE  4096      // bytes in a line
#define VL_INI_MAX_BYTES (1 << 20) // bytes in a file
#define VL_INI_MAX_KEYS  1024      // entries in a file

/* Called once per entry, in file order (section "" before any header).
   Returns 0, or -1 with why (the parser adds file and line). */
typedef int (*vl_ini_fn)(void *ctx, const char *section, const char *key, const char *value,
                         char *why, size_t why_size);

/* Parses the file at path, calling fn for every entry. Returns 0, or -1
   with why[why_size] = "PATH:LINE: reason" (or "PATH: reason"). */
int vl_ini_parse(const char *path, vl_ini_fn fn, void *ctx, char *why, size_t why_size);

/* As vl_ini_parse, on text[n] that came from name. */
int vl_ini_parse_text(const char *name, const char *text, size_t n, vl_ini_fn fn, void *ctx,
                      char *why, size_t why_size);

#endif
