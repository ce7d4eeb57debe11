/*  vl_opts: checked parsing of command-line values and broker addresses. */
#include "vl_opts.h"

#include "vl_flags.h"
#include "vl_log.h"
#include "vl_policy_id.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Parses a whole number in [lo, hi], also in float notation when whole
   ("1e6"). Returns 0, or -1 (*out untouched). */
static int s_parse_long(const char *text, long lo, long hi, long *out)
{
    char *end = NULL;
    errno = 0;
    long v = text ? strtol(text, &end, 10) : 0;
    if (text && *text && *end && !errno && !strpbrk(text, "xXpP")) { // "1e6", "2.5e5": whole
        double d = strtod(text, &end);
        int whole = !*end && isfinite(d) && d == floor(d) && fabs(d) <= 9007199254740992.0;
        v = whole ? (long)d : v;
        end = whole ? end : (char *)"x";
    }
    if (!text || !*text || *end || errno || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

/* Parses a finite number in [lo, hi]. Returns 0, or -1 (*out untouched). */
static int s_parse_float(const char *text, double lo, double hi, float *out)
{
    char *end = NULL;
    errno = 0;
    double v = text ? strtod(text, &end) : 0;
    if (!text || !*text || *end || errno || !isfinite(v) || v < lo || v > hi)
        return -1;
    *out = (float)v;
    return 0;
}

/* Writes why a flag's value was refused: "--NAME wants ..., not 'TEXT'". */
static void s_refusal(const vl_num_opt_t *o, const char *text, char *why, size_t why_size)
{
    if (o->kind == VL_OPT_FLOAT)
        snprintf(why, why_size, "--%s wants a number in [%g, %g], not '%s'", o->name, o->lo, o->hi,
                 text ? text : "");
    else
        snprintf(why, why_size, "--%s wants a whole number in [%ld, %ld], not '%s'", o->name,
                 (long)o->lo, (long)o->hi, text ? text : "");
}

int vl_opt_long(const char *cmd, const char *name, const char *text, long lo, long hi, long *out)
{
    if (s_parse_long(text, lo, hi, out) == 0)
        return 0;
    vl_num_opt_t o = {name, VL_OPT_LONG, 0, (double)lo, (double)hi, NULL};
    char why[320];
    s_refusal(&o, text, why, sizeof why);
    fprintf(stderr, "volley %s: %s\n", cmd, why);
    return -1;
}

int vl_opt_float(const char *cmd, const char *name, const char *text, double lo, double hi,
                 float *out)
{
    if (s_parse_float(text, lo, hi, out) == 0)
        return 0;
    vl_num_opt_t o = {name, VL_OPT_FLOAT, 0, lo, hi, NULL};
    char why[320];
    s_refusal(&o, text, why, sizeof why);
    fprintf(stderr, "volley %s: %s\n", cmd, why);
    return -1;
}

int vl_opt_check(const vl_num_opt_t *o, const char *text, char *why, size_t why_size)
{
    long v = 0;
    float f = 0;
    int ok = o->kind == VL_OPT_FLOAT ? s_parse_float(text, o->lo, o->hi, &f) == 0
                                     : s_parse_long(text, (long)o->lo, (long)o->hi, &v) == 0;
    if (!ok)
        s_refusal(o, text, why, why_size);
    return ok ? 0 : -1;
}

int vl_opt_endpoint(const char *cmd, const char *host_port, int offset, char *out, size_t size)
{
    char host[256];
    long port = VL_DEFAULT_PORT;
    const char *colon = host_port ? strrchr(host_port, ':') : NULL;
    size_t hlen = host_port ? (colon ? (size_t)(colon - host_port) : strlen(host_port)) : 0;
    if (hlen == 0 || hlen >= sizeof host) {
        fprintf(stderr, "volley %s: --broker wants HOST[:PORT], not '%s'\n", cmd,
                host_port ? host_port : "");
        return -1;
    }
    memcpy(host, host_port, hlen);
    host[hlen] = 0;
    if (colon && vl_opt_long(cmd, "broker port", colon + 1, 1, 65535 - VL_PORT_COUNT, &port))
        return -1;
    int n = snprintf(out, size, "tcp://%s:%ld", host, port + offset);
    return n > 0 && (size_t)n < size ? 0 : -1;
}

int vl_opt_policy(const char *cmd, const char *policy)
{
    int ok = policy && vl_policy_id_valid(policy, strlen(policy));
    if (!ok)
        fprintf(stderr,
                "volley %s: --policy wants 1 to 63 printable characters without spaces, "
                "not starting with '~'\n",
                cmd);
    return ok ? 0 : -1;
}

/* Returns 1 if a TCP port on 127.0.0.1 can be bound right now by a
   listener as libzmq makes one (SO_REUSEADDR): connections of a stopped
   broker still in TIME_WAIT do not hold its ports, a listening socket does. */
static int s_port_free(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0), on = 1;
    if (fd < 0)
        return 0;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int ok = bind(fd, (struct sockaddr *)&a, sizeof a) == 0;
    close(fd);
    return ok;
}

int vl_free_base_port(int from)
{
    for (int base = from; base + VL_PORT_COUNT < 65535; base += VL_PORT_COUNT) {
        int ok = 1;
        for (int i = 0; ok && i < VL_PORT_COUNT; i++)
            ok = s_port_free(base + i);
        if (ok)
            return base;
    }
    return -1;
}

int vl_opt_set(const char *cmd, const vl_num_opt_t *o, void *config, const char *text)
{
    char *field = (char *)config + o->offset;
    if (o->kind == VL_OPT_FLOAT)
        return vl_opt_float(cmd, o->name, text, o->lo, o->hi, (float *)field);
    long v = 0; // set on success; gcc -O3 cannot see that through vl_opt_long
    if (vl_opt_long(cmd, o->name, text, (long)o->lo, (long)o->hi, &v))
        return -1;
    switch (o->kind) {
    case VL_OPT_U32:
        *(uint32_t *)field = (uint32_t)v;
        break;
    case VL_OPT_U64:
        *(uint64_t *)field = (uint64_t)v;
        break;
    case VL_OPT_INT:
        *(int *)field = (int)v;
        break;
    case VL_OPT_I64:
        *(int64_t *)field = (int64_t)v;
        break;
    case VL_OPT_SIZE:
        *(size_t *)field = (size_t)v;
        break;
    default:
        *(long *)field = v;
        break;
    }
    return 0;
}

void vl_opt_format(const vl_num_opt_t *o, const void *config, char *out, size_t size)
{
    const char *field = (const char *)config + o->offset;
    switch (o->kind) {
    case VL_OPT_FLOAT: { // the shortest text that reads back as the same float
        float f = *(const float *)field;
        for (int digits = 6; digits <= 9; digits++) {
            snprintf(out, size, "%.*g", digits, (double)f);
            if (strtof(out, NULL) == f)
                break;
        }
        break;
    }
    case VL_OPT_U32:
        snprintf(out, size, "%u", *(const uint32_t *)field);
        break;
    case VL_OPT_U64:
        snprintf(out, size, "%llu", (unsigned long long)*(const uint64_t *)field);
        break;
    case VL_OPT_INT:
        snprintf(out, size, "%d", *(const int *)field);
        break;
    case VL_OPT_I64:
        snprintf(out, size, "%lld", (long long)*(const int64_t *)field);
        break;
    case VL_OPT_SIZE:
        snprintf(out, size, "%zu", *(const size_t *)field);
        break;
    default:
        snprintf(out, size, "%ld", *(const long *)field);
        break;
    }
}

void vl_opt_print(FILE *out, const vl_num_opt_t *opts, int n, const void *defaults)
{
    for (int i = 0; i < n; i++) {
        vl_flag_t f = vl_flag_of_num(&opts[i]);
        vl_flags_print_one(out, &f, defaults);
    }
}

int vl_opt_getopt(const vl_num_opt_t *opts, int n, int base, struct option *out)
{
    for (int i = 0; i < n; i++)
        out[i] = (struct option){opts[i].name, required_argument, NULL, base + i};
    return n;
}

/* Returns the edit distance between a and b (insert, delete, substitute,
   and swapping two neighbours, each 1), capped at 63. */
static int s_distance(const char *a, const char *b)
{
    enum { S_MAX = 64 };
    size_t n = strlen(a), m = strlen(b);
    if (n >= S_MAX || m >= S_MAX)
        return S_MAX - 1;
    int d[S_MAX][S_MAX];
    for (size_t i = 0; i <= n; i++)
        d[i][0] = (int)i;
    for (size_t j = 0; j <= m; j++)
        d[0][j] = (int)j;
    for (size_t i = 1; i <= n; i++)
        for (size_t j = 1; j <= m; j++) {
            int best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            best = d[i - 1][j] + 1 < best ? d[i - 1][j] + 1 : best;
            best = d[i][j - 1] + 1 < best ? d[i][j - 1] + 1 : best;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    return d[n][m] < S_MAX - 1 ? d[n][m] : S_MAX - 1;
}

const char *vl_opt_nearest(const char *name, const struct option *opts)
{
    const char *best = NULL;
    int best_d = 1 << 20;
    for (int i = 0; opts[i].name; i++) {
        int d = s_distance(name, opts[i].name);
        size_t len = strlen(opts[i].name);
        int near = d <= 2 || (size_t)d * 3 <= len;
        if (near && d < best_d) {
            best = opts[i].name;
            best_d = d;
        }
    }
    return best;
}

void vl_opt_refused(const char *cmd, char **argv, const struct option *opts, const char *shorts)
{
    const char *arg = optind > 0 ? argv[optind - 1] : "";
    char name[64];
    const char *start = arg + strspn(arg, "-");
    size_t len = strcspn(start, "=");
    snprintf(name, sizeof name, "%.*s", (int)(len < sizeof name ? len : sizeof name - 1), start);
    // A known long flag given wrongly: getopt says which by its val in optopt, except for a
    // flag whose val is 0 (the first numeric option), which only its name tells from unknown.
    for (int i = 0; opts[i].name; i++)
        if ((optopt && opts[i].val == optopt) ||
            (!optopt && strncmp(arg, "--", 2) == 0 && strcmp(opts[i].name, name) == 0)) {
            fprintf(stderr, "volley %s: --%s %s; see --help\n", cmd, opts[i].name,
                    opts[i].has_arg == no_argument ? "takes no value" : "wants a value");
            return;
        }
    if (optopt && optopt != '?' && strchr(shorts, optopt)) { // a short flag without its value
        fprintf(stderr, "volley %s: -%c wants a value; see --help\n", cmd, optopt);
        return;
    }
    if (optopt) { // an unknown short flag
        fprintf(stderr, "volley %s: unknown flag -%c; see --help\n", cmd, optopt);
        return;
    }
    const char *near = vl_opt_nearest(name, opts);
    if (near)
        fprintf(stderr, "volley %s: unknown flag --%s (did you mean --%s?); see --help\n", cmd,
                name, near);
    else
        fprintf(stderr, "volley %s: unknown flag --%s; see --help\n", cmd, name);
}

/* Checks what no single role flag can, the positional arguments from
   argv[first] on. Returns 0 or -1 after printing why. */
static int s_check_role(const char *cmd, int argc, char **argv, int first, vl_role_opts_t *role)
{
    char endpoint[300];
    if (role->replay && first == argc - 1) {
        role->file = argv[first++];
    } else if (role->replay) {
        fprintf(stderr, "volley %s: %s\n", cmd,
                first < argc ? "one recording at a time" : "which recording? (a FILE argument)");
        return -1;
    }
    if (first < argc) {
        fprintf(stderr, "volley %s: unexpected argument '%s'\n", cmd, argv[first]);
        return -1;
    }
    if (!role->broker && role->replay)
        return 0; // into a learner of its own
    if (!role->broker) {
        fprintf(stderr, "volley %s: --broker HOST[:PORT] is required\n", cmd);
        return -1;
    }
    return vl_opt_endpoint(cmd, role->broker, 0, endpoint, sizeof endpoint);
}

/* Reads --pace: fast or recorded. */
static int s_parse_pace(const char *text, void *field, char *why, size_t why_size)
{
    if (strcmp(text, "fast") != 0 && strcmp(text, "recorded") != 0)
        return snprintf(why, why_size, "--pace wants fast or recorded, not '%s'", text), -1;
    *(int *)field = text[0] == 'r';
    return 0;
}

#define S_ROLE(name, kind, field, value)                                                           \
    {                                                                                              \
        name, 0, kind, offsetof(vl_role_opts_t, field), 0, 0, value, "", NULL, 0, NULL             \
    }

/* The flags every role takes (their help is the roles' own), then the
   replay's and the learner's. */
static const vl_flag_t s_role_common[] = {
    S_ROLE("cert", VL_FLAG_TEXT, cert, "FILE"),
    S_ROLE("broker-key", VL_FLAG_TEXT, broker_key, "FILE"),
    S_ROLE("broker", VL_FLAG_TEXT, broker, "HOST[:PORT]"),
    S_ROLE("policy", VL_FLAG_POLICY, policy, "NAME"),
    S_ROLE("env", VL_FLAG_TEXT, env, "NAME"),
    S_ROLE("env-arg", VL_FLAG_TEXT, env_arg, "TEXT"),
    S_ROLE("model", VL_FLAG_TEXT, model, "SPEC"),
    VL_FLAG_SETS(vl_role_opts_t, "quiet", log_level, VL_LOG_WARN, ""),
    VL_FLAG_SETS(vl_role_opts_t, "verbose", log_level, VL_LOG_DEBUG, ""),
    VL_FLAG_HELP_H,
    VL_FLAG_END};
static const vl_flag_t s_role_replay[] = {
    VL_FLAG_CHOICE(vl_role_opts_t, "pace", pace_recorded, s_parse_pace, "fast|recorded", ""),
    VL_FLAG_END};
static const vl_flag_t s_role_learner[] = {S_ROLE("checkpoint", VL_FLAG_TEXT, checkpoint, "DIR"),
                                           VL_FLAG_SWITCH(vl_role_opts_t, "resume", resume, ""),
                                           S_ROLE("metrics", VL_FLAG_TEXT, metrics, "DIR"),
                                           VL_FLAG_SWITCH(vl_role_opts_t, "force", force, ""),
                                           S_ROLE("run-dir", VL_FLAG_TEXT, run_dir, "DIR"),
                                           VL_FLAG_END};

/* Fills groups with a role's tables: its numeric flags (nums, n of them,
   copied into flags, which has room for n + 1) into config, the shared
   ones and its kind's into role. Returns how many groups. */
static int s_role_groups(const vl_num_opt_t *nums, int n, void *config, vl_role_opts_t *role,
                         vl_flag_t *flags, vl_flag_group_t *groups)
{
    for (int i = 0; i < n; i++)
        flags[i] = vl_flag_of_num(&nums[i]);
    flags[n] = (vl_flag_t)VL_FLAG_END;
    int k = 0;
    groups[k++] = (vl_flag_group_t){flags, config, 0};
    groups[k++] = (vl_flag_group_t){s_role_common, role, 0};
    if (role->replay)
        groups[k++] = (vl_flag_group_t){s_role_replay, role, 0};
    if (role->learner)
        groups[k++] = (vl_flag_group_t){s_role_learner, role, 0};
    return k;
}

int vl_opt_role_options(const vl_num_opt_t *nums, int n, const vl_role_opts_t *role,
                        struct option *out)
{
    vl_flag_t flags[n + 1];
    vl_flag_group_t groups[4];
    vl_role_opts_t kind = *role;
    int k = 0, ng = s_role_groups(nums, n, NULL, &kind, flags, groups);
    for (int g = 0; g < ng; g++)
        for (const vl_flag_t *f = groups[g].flags; f->name; f++, k++)
            out[k] = (struct option){f->name, f->value ? required_argument : no_argument, 0, k};
    out[k] = (struct option){0, 0, 0, 0};
    return k;
}

const struct option *vl_opt_lookup(const struct option *opts, const char *name, size_t len)
{
    const struct option *found = NULL;
    for (int i = 0; opts[i].name; i++) {
        if (strncmp(opts[i].name, name, len) != 0)
            continue;
        if (strlen(opts[i].name) == len) // an exact name wins over the names it begins
            return &opts[i];
        if (found) // two names begin so: getopt_long refuses it as ambiguous
            return NULL;
        found = &opts[i];
    }
    return found;
}

int vl_opt_parse_role(const char *cmd, int argc, char **argv, const vl_num_opt_t *nums, int n,
                      void *config, vl_role_opts_t *role, void (*usage)(FILE *out))
{
    vl_flag_t flags[n + 1];
    vl_flag_group_t groups[4];
    int ng = s_role_groups(nums, n, config, role, flags, groups), first = argc;
    int rc = vl_flags_parse_groups(cmd, argc, argv, groups, ng, &first);
    role->given = groups[0].given;
    if (rc > 0)
        usage(stdout);
    if (rc != 0)
        return rc;
    int bad = vl_opt_check_curve(cmd, role->cert, role->broker_key) != 0;
    if (!bad && role->resume && !role->checkpoint && !role->run_dir) {
        fprintf(stderr, "volley %s: --resume needs --checkpoint DIR\n", cmd);
        bad = 1;
    }
    if (!bad && role->force && !role->checkpoint && !role->run_dir) {
        fprintf(stderr, "volley %s: --force needs --checkpoint DIR\n", cmd);
        bad = 1;
    }
    return bad || s_check_role(cmd, argc, argv, first, role) ? -1 : 0;
}

void vl_opt_print_role(FILE *out, const char *policy_help)
{
    fprintf(out,
            "  --broker HOST[:PORT]  the broker (default port %d)\n"
            "  --policy NAME      %s (default 'default')\n",
            VL_DEFAULT_PORT, policy_help);
}

void vl_opt_print_model(FILE *out)
{
    fprintf(out, "  --model SPEC       the network: layers such as 'conv(32,8,4) relu linear(512)\n"
                 "                     relu' or a preset: mlp (= mlp(64)), mlp(N), cnn (default:\n"
                 "                     cnn for image observations, else mlp(--hidden)); the\n"
                 "                     policy's learner decides it, its actors must match\n");
}

void vl_opt_print_curve(FILE *out)
{
    fprintf(out,
            "  --cert FILE        our CURVE certificate (from `volley keygen`; the secret key\n"
            "                     is read from FILE_secret): encrypt and authenticate\n"
            "  --broker-key FILE  the broker's public certificate (with --cert)\n");
}

int vl_opt_check_curve(const char *cmd, const char *cert, const char *broker_key)
{
    if (!cert == !broker_key)
        return 0;
    fprintf(stderr, "volley %s: --cert and --broker-key go together\n", cmd);
    return -1;
}
