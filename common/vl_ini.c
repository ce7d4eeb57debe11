/*  vl_ini: hand-edited key = value files, every line checked. */
#include "vl_ini.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_NAME_MAX 64 // bytes of a key or a section name, NUL included

typedef struct {
    char section[S_NAME_MAX];
    char (*seen)[2 * S_NAME_MAX]; // "section\nkey" of every entry so far
    int n_seen;
} s_state_t;

/* Returns 1 if name[n] is a valid key or section name. */
static int s_name_ok(const char *name, size_t n)
{
    if (n == 0 || n >= S_NAME_MAX)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)name[i]) && name[i] != '-' && name[i] != '_' && name[i] != '.')
            return 0;
    return 1;
}

/* Trims blanks off both ends of s[*n] in place; returns the new start. */
static char *s_trim(char *s, size_t *n)
{
    while (*n && (*s == ' ' || *s == '\t')) {
        s++;
        (*n)--;
    }
    while (*n && (s[*n - 1] == ' ' || s[*n - 1] == '\t' || s[*n - 1] == '\r'))
        (*n)--;
    s[*n] = 0;
    return s;
}

/* Takes one "[section]" line. Returns 0, or -1 with why. */
static int s_section(s_state_t *st, char *line, size_t n, char *why, size_t why_size)
{
    if (line[n - 1] != ']') {
        snprintf(why, why_size, "a section header ends with ']'");
        return -1;
    }
    size_t len = n - 2;
    char *name = s_trim(line + 1, &len);
    if (!s_name_ok(name, len)) {
        snprintf(why, why_size, "bad section name '%.60s' (letters, digits, '-', '_', '.')", name);
        return -1;
    }
    memcpy(st->section, name, len + 1);
    return 0;
}

/* Takes one "key = value" line and calls fn. Returns 0, or -1 with why. */
static int s_entry(s_state_t *st, char *line, size_t n, vl_ini_fn fn, void *ctx, char *why,
                   size_t why_size)
{
    char *eq = memchr(line, '=', n);
    if (!eq) {
        snprintf(why, why_size, "expected 'key = value', '[section]' or '# comment', not '%.60s'",
                 line);
        return -1;
    }
    size_t klen = (size_t)(eq - line), vlen = n - klen - 1;
    char *key = s_trim(line, &klen), *value = s_trim(eq + 1, &vlen);
    if (!s_name_ok(key, klen)) {
        snprintf(why, why_size, "bad key '%.60s' (letters, digits, '-', '_', '.')", key);
        return -1;
    }
    if (st->n_seen == VL_INI_MAX_KEYS) {
        snprintf(why, why_size, "more than %d entries", VL_INI_MAX_KEYS);
        return -1;
    }
    char *id = st->seen[st->n_seen];
    snprintf(id, 2 * S_NAME_MAX, "%s\n%s", st->section, key);
    for (int i = 0; i < st->n_seen; i++)
        if (strcmp(st->seen[i], id) == 0) {
            snprintf(why, why_size, "'%s' given twice%s%s%s", key, st->section[0] ? " in [" : "",
                     st->section, st->section[0] ? "]" : "");
            return -1;
        }
    st->n_seen++;
    return fn(ctx, st->section, key, value, why, why_size);
}

/* Checks and takes one line (without its newline). Returns 0, or -1 with why. */
static int s_line(s_state_t *st, char *line, size_t n, vl_ini_fn fn, void *ctx, char *why,
                  size_t why_size)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)line[i] < 32 && line[i] != '\t' && line[i] != '\r') {
            snprintf(why, why_size, "a control character (byte %u) at column %zu",
                     (unsigned char)line[i], i + 1);
            return -1;
        }
    char *s = s_trim(line, &n);
    if (n == 0 || *s == '#' || *s == ';')
        return 0;
    if (*s == '[')
        return s_section(st, s, n, why, why_size);
    return s_entry(st, s, n, fn, ctx, why, why_size);
}

int vl_ini_parse_text(const char *name, const char *text, size_t n, vl_ini_fn fn, void *ctx,
                      char *why, size_t why_size)
{
    s_state_t st = {.n_seen = 0};
    char reason[512] = "";
    char *line = malloc(VL_INI_MAX_LINE + 1);
    st.seen = calloc(VL_INI_MAX_KEYS, sizeof *st.seen);
    int rc = 0, lineno = 0;
    if (!line || !st.seen) {
        snprintf(why, why_size, "%s: out of memory", name);
        rc = -1;
    }
    for (size_t at = 0; rc == 0 && at < n;) {
        const char *nl = memchr(text + at, '\n', n - at);
        size_t len = nl ? (size_t)(nl - (text + at)) : n - at;
        lineno++;
        if (len > VL_INI_MAX_LINE) {
            snprintf(reason, sizeof reason, "line longer than %d bytes", VL_INI_MAX_LINE);
            rc = -1;
        } else {
            memcpy(line, text + at, len);
            line[len] = 0;
            rc = s_line(&st, line, len, fn, ctx, reason, sizeof reason);
        }
        if (rc != 0)
            snprintf(why, why_size, "%s:%d: %s", name, lineno, reason);
        at += len + 1;
    }
    free(line);
    free(st.seen);
    return rc;
}

int vl_ini_parse(const char *path, vl_ini_fn fn, void *ctx, char *why, size_t why_size)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(why, why_size, "%s: %s", path, strerror(errno));
        return -1;
    }
    char *text = malloc((size_t)VL_INI_MAX_BYTES + 1);
    size_t n = text ? fread(text, 1, (size_t)VL_INI_MAX_BYTES + 1, f) : 0;
    int err = ferror(f);
    fclose(f);
    int rc = -1;
    if (!text)
        snprintf(why, why_size, "%s: out of memory", path);
    else if (err)
        snprintf(why, why_size, "%s: cannot read", path);
    else if (n > (size_t)VL_INI_MAX_BYTES)
        snprintf(why, why_size, "%s: larger than %d bytes: not a configuration file", path,
                 VL_INI_MAX_BYTES);
    else if (memchr(text, 0, n))
        snprintf(why, why_size, "%s: holds a NUL byte: not a text file", path);
    else
        rc = vl_ini_parse_text(path, text, n, fn, ctx, why, why_size);
    free(text);
    return rc;
}
