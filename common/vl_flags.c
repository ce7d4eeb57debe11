/*  vl_flags: a command's flags as one table: parsing, refusals, --help. */
#include "vl_flags.h"

#include <getopt.h>
#include <string.h>

#define S_VAL_BASE 256 // getopt_long's val for table entry k is S_VAL_BASE + k
#define S_WIDTH    80  // --help wraps its lines at this column
#define S_HELP_COL 21  // where a flag's help starts, as vl_opt_print always had it

/* Returns the number of entries in a table ending with VL_FLAG_END. */
static int s_count(const vl_flag_t *flags)
{
    int n = 0;
    while (flags[n].name)
        n++;
    return n;
}

/* Returns 1 if f's kind is numeric (vl_opt_kind_t). */
static int s_numeric(const vl_flag_t *f)
{
    return f->kind >= 0 && f->kind < VL_OPT_KINDS;
}

/* Returns the numeric option f is, for vl_opt_set and vl_opt_format. */
static vl_num_opt_t s_num(const vl_flag_t *f)
{
    return (vl_num_opt_t){f->name, (vl_opt_kind_t)f->kind, f->offset, f->lo, f->hi, f->help};
}

vl_flag_t vl_flag_of_num(const vl_num_opt_t *o)
{
    return (vl_flag_t){o->name, 0,       (int)o->kind, o->offset, o->lo, o->hi,
                       "N",     o->help, NULL,         0,         NULL};
}

/* Stores text as f's value in args. Returns 0, or -1 after printing why. */
static int s_set(const char *cmd, const vl_flag_t *f, void *args, const char *text)
{
    char *field = (char *)args + f->offset;
    char why[512];
    switch (f->kind) {
    case VL_FLAG_TEXT:
        *(const char **)field = text;
        return 0;
    case VL_FLAG_POLICY:
        *(const char **)field = text;
        return vl_opt_policy(cmd, text);
    case VL_FLAG_SET:
        *(int *)field = (int)f->lo;
        return 0;
    case VL_FLAG_WORD:
        if (f->parse(text, field, why, sizeof why) == 0)
            return 0;
        fprintf(stderr, "volley %s: %s\n", cmd, why);
        return -1;
    default: {
        vl_num_opt_t o = s_num(f);
        return vl_opt_set(cmd, &o, args, text);
    }
    }
}

/* Refuses the first required flag of the groups that did not come.
   Returns 0, or -1 after printing which. */
static int s_check_required(const char *cmd, const vl_flag_group_t *groups, int n)
{
    for (int g = 0; g < n; g++)
        for (int i = 0; groups[g].flags[i].name; i++) {
            const vl_flag_t *f = &groups[g].flags[i];
            if (f->required && !(i < 64 && (groups[g].given >> i & 1))) {
                fprintf(stderr, "volley %s: --%s%s%s is required\n", cmd, f->name,
                        f->value ? " " : "", f->value ? f->value : "");
                return -1;
            }
        }
    return 0;
}

/* Writes the getopt_long table and optstring for the groups' flags into
   opts (ending with a zeroed entry) and shorts, and each entry's flag and
   group into flags and group_of. */
static void s_options(const vl_flag_group_t *groups, int n, struct option *opts, char *shorts,
                      const vl_flag_t **flags, int *group_of)
{
    int k = 0, s = 0;
    for (int g = 0; g < n; g++)
        for (int i = 0; groups[g].flags[i].name; i++, k++) {
            const vl_flag_t *f = &groups[g].flags[i];
            int arg = f->value ? required_argument : no_argument;
            opts[k] = (struct option){f->name, arg, NULL, S_VAL_BASE + k};
            flags[k] = f;
            group_of[k] = g;
            if (f->short_name) {
                shorts[s++] = f->short_name;
                if (arg == required_argument)
                    shorts[s++] = ':';
            }
        }
    opts[k] = (struct option){0, 0, 0, 0};
    shorts[s] = 0;
}

/* Returns the entry k of the flag getopt_long returned as opt (a long
   flag's val, or a short flag's letter), or -1 for one it refused. */
static int s_entry(int opt, int total, const vl_flag_t *const *flags)
{
    if (opt >= S_VAL_BASE && opt < S_VAL_BASE + total)
        return opt - S_VAL_BASE;
    for (int k = 0; opt != '?' && opt != ':' && k < total; k++)
        if (flags[k]->short_name && flags[k]->short_name == opt)
            return k;
    return -1;
}

int vl_flags_parse_groups(const char *cmd, int argc, char **argv, vl_flag_group_t *groups, int n,
                          int *first)
{
    int total = 0;
    for (int g = 0; g < n; g++) {
        total += s_count(groups[g].flags);
        groups[g].given = 0;
    }
    struct option opts[total + 1];
    const vl_flag_t *flags[total + 1];
    int group_of[total + 1];
    char shorts[2 * total + 1];
    s_options(groups, n, opts, shorts, flags, group_of);
    optind = 0; // getopt_long starts over, forgetting an earlier parse it left midway
    opterr = 0; // a refused flag gets one line from vl_opt_refused, not getopt's
    int opt;
    while ((opt = getopt_long(argc, argv, shorts, opts, NULL)) != -1) {
        int k = s_entry(opt, total, flags);
        if (k < 0) {
            vl_opt_refused(cmd, argv, opts, shorts);
            return -1;
        }
        if (flags[k]->kind == VL_FLAG_HELP)
            return 1;
        vl_flag_group_t *grp = &groups[group_of[k]];
        if (s_set(cmd, flags[k], grp->args, optarg) != 0)
            return -1;
        int i = (int)(flags[k] - grp->flags);
        grp->given |= i < 64 ? 1ull << i : 0;
    }
    if (first)
        *first = optind;
    return s_check_required(cmd, groups, n);
}

int vl_flags_parse(const vl_flag_cmd_t *cmd, int argc, char **argv, void *args,
                   const void *defaults, int *first, uint64_t *given)
{
    vl_flag_group_t group = {cmd->flags, args, 0};
    int rc = vl_flags_parse_groups(cmd->name, argc, argv, &group, 1, first);
    if (rc > 0)
        vl_flags_print_help(stdout, cmd, defaults);
    if (given)
        *given = group.given;
    return rc;
}

/* ---- --help ------------------------------------------------------------ */

/* Prints token (len bytes) at column *col: after a space unless the line
   is at indent, and on a new line indented by indent when it would pass
   S_WIDTH and the line has something on it already. */
static void s_token(FILE *out, int *col, int indent, const char *token, int len)
{
    if (*col > indent && *col + 1 + len > S_WIDTH) {
        fprintf(out, "\n%*s", indent, "");
        *col = indent;
    } else if (*col != indent) {
        fputc(' ', out);
        (*col)++;
    }
    fprintf(out, "%.*s", len, token);
    *col += len;
}

/* Prints text's words from column col on, wrapped with indent. */
static void s_words(FILE *out, int col, int indent, const char *text)
{
    for (const char *p = text; *p;) {
        p += strspn(p, " ");
        int len = (int)strcspn(p, " ");
        if (len)
            s_token(out, &col, indent, p, len);
        p += len;
    }
}

/* Prints an entry: left ("--name VALUE") padded to the help column (or
   two spaces past a longer one), then text wrapped under that column. */
static void s_entry_line(FILE *out, const char *left, const char *text)
{
    int col = fprintf(out, "  %s", left);
    int pad = col < S_HELP_COL ? S_HELP_COL - col : 1; // s_token adds the second space
    col += fprintf(out, "%*s", pad, "");
    s_words(out, col, S_HELP_COL, text);
    fputc('\n', out);
}

/* Writes the default f's help shows, or "" for none. */
static void s_default(const vl_flag_t *f, const void *defaults, char *out, size_t size)
{
    const char *field = defaults ? (const char *)defaults + f->offset : NULL;
    out[0] = 0;
    if (f->shown)
        snprintf(out, size, "%s", f->shown);
    else if (field && s_numeric(f)) {
        vl_num_opt_t o = s_num(f);
        vl_opt_format(&o, defaults, out, size);
    } else if (field && (f->kind == VL_FLAG_TEXT || f->kind == VL_FLAG_POLICY) &&
               *(const char *const *)field)
        snprintf(out, size, "%s", *(const char *const *)field);
}

void vl_flags_print_one(FILE *out, const vl_flag_t *f, const void *defaults)
{
    char left[96], text[1024], value[256];
    int k = f->short_name ? snprintf(left, sizeof left, "-%c, ", f->short_name) : 0;
    snprintf(left + k, sizeof left - (size_t)k, "--%s%s%s", f->name, f->value ? " " : "",
             f->value ? f->value : "");
    s_default(f, defaults, value, sizeof value);
    if (f->required)
        snprintf(text, sizeof text, "%s (required)", f->help);
    else if (value[0])
        snprintf(text, sizeof text, "%s (default %s)", f->help, value);
    else
        snprintf(text, sizeof text, "%s", f->help);
    s_entry_line(out, left, text);
}

/* Prints the usage line: the command, its operands and every flag but
   help's, optional ones bracketed, wrapped under the operands. */
static void s_usage_line(FILE *out, const vl_flag_cmd_t *cmd)
{
    int col = fprintf(out, "usage: volley %s", cmd->name);
    int indent = col + 1;
    char token[160];
    if (cmd->operands)
        s_token(out, &col, indent, cmd->operands, (int)strlen(cmd->operands));
    for (const vl_flag_t *f = cmd->flags; f->name; f++) {
        if (f->kind == VL_FLAG_HELP)
            continue;
        int len = snprintf(token, sizeof token, "%s--%s%s%s%s", f->required ? "" : "[", f->name,
                           f->value ? " " : "", f->value ? f->value : "", f->required ? "" : "]");
        s_token(out, &col, indent, token, len);
    }
    fputc('\n', out);
    if (cmd->forms)
        fputs(cmd->forms, out);
}

void vl_flags_print_help(FILE *out, const vl_flag_cmd_t *cmd, const void *defaults)
{
    s_usage_line(out, cmd);
    if (cmd->about)
        fprintf(out, "\n%s", cmd->about);
    fputc('\n', out);
    for (const vl_flag_arg_t *a = cmd->args; a && a->name; a++)
        s_entry_line(out, a->name, a->help);
    for (const vl_flag_t *f = cmd->flags; f->name; f++)
        vl_flags_print_one(out, f, defaults);
    if (cmd->footer)
        fputs(cmd->footer, out);
}
