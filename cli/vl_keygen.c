/*  vl_keygen: a broker certificate, one per client name, and the broker's
    directory of allowed public certificates. */
#include "vl_keygen.h"
#include "vl_keygen_k8s.h"

#include <czmq.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "../common/vl_curve.h"
#include "../common/vl_flags.h"
#include "../common/vl_opts.h"
#include "../messages/vl_wire.h"

#define S_MAX_CLIENTS 64
#define S_LIST_MAX    1024 // bytes of --clients

/* Returns 1 if path exists. */
static int s_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* Writes one pair (and, for a client, its public copy into allowed/).
   Returns 0, or -1 after saying why. */
static int s_make(const char *dir, const char *name, int client, const char *role,
                  const char *policies)
{
    char path[4096], pub[4096], why[512];
    snprintf(path, sizeof path, "%s/%s.cert", dir, name);
    if (s_exists(path)) {
        fprintf(stderr, "volley keygen: %s exists; not overwritten\n", path);
        return -1;
    }
    if (vl_curve_keygen(path, name, role, policies, why, sizeof why) != 0) {
        fprintf(stderr, "volley keygen: %s\n", why);
        return -1;
    }
    printf("wrote %s and %s_secret%s%s\n", path, path, role ? " role " : "", role ? role : "");
    if (!client)
        return 0;
    snprintf(pub, sizeof pub, "%s/allowed/%s.cert", dir, name);
    zcert_t *cert = zcert_load(path);
    int rc = cert ? zcert_save_public(cert, pub) : -1;
    zcert_destroy(&cert);
    if (rc != 0)
        fprintf(stderr, "volley keygen: cannot write %s\n", pub);
    else
        printf("wrote %s\n", pub);
    return rc == 0 ? 0 : -1;
}

/* Returns the role a client named name gets: what its name begins with. */
static const char *s_role_of(const char *name)
{
    static const char *roles[] = {"learner", "admin", "observer"};
    for (int i = 0; i < 3; i++)
        if (strncmp(name, roles[i], strlen(roles[i])) == 0)
            return roles[i];
    return strncmp(name, "monitor", 7) == 0 ? "observer" : "actor";
}

/* Makes dir (0700) if missing. Returns 0, or -1 after saying why. */
static int s_mkdir(const char *dir)
{
    if (mkdir(dir, 0700) == 0 || errno == EEXIST)
        return 0;
    fprintf(stderr, "volley keygen: cannot make %s: %s\n", dir, strerror(errno));
    return -1;
}

/* Splits list at commas into names (at most S_MAX_CLIENTS, each a valid
   file name). Returns how many, or -1 after saying why. */
static int s_split(char *list, char **names)
{
    int n = 0;
    for (char *save, *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (n == S_MAX_CLIENTS || !t[0] || strchr(t, '/') || strcmp(t, "broker") == 0 ||
            t[0] == '.') {
            fprintf(stderr, "volley keygen: bad client name '%s'\n", t);
            return -1;
        }
        for (int i = 0; i < n; i++)
            if (strcmp(names[i], t) == 0) {
                fprintf(stderr, "volley keygen: client '%s' named twice\n", t);
                return -1;
            }
        names[n++] = t;
    }
    if (n == 0)
        fprintf(stderr, "volley keygen: --clients names no client\n");
    return n > 0 ? n : -1;
}

/* Writes n certificates named role-1 .. role-n. Returns 0, or -1. */
static int s_make_role(const char *dir, const char *role, long n, const char *policies)
{
    char name[64];
    for (long i = 1; i <= n; i++) {
        snprintf(name, sizeof name, "%s-%ld", role, i);
        if (s_make(dir, name, 1, role, strcmp(role, "learner") == 0 ? policies : NULL) != 0)
            return -1;
    }
    return 0;
}

/* Writes Secret manifests into dir for the clients named (n) or, when n is
   0, counted per role (role-1 .. role-N). Returns vl_keygen_k8s's code. */
static int s_k8s(const char *dir, char **names, int n, const long *counts, const char *const *roles,
                 const char *policies)
{
    static char numbered[4 * S_MAX_CLIENTS][64];
    const char *all[4 * S_MAX_CLIENTS], *their[4 * S_MAX_CLIENTS];
    int m = 0;
    for (int i = 0; i < n; i++, m++) {
        all[m] = names[i];
        their[m] = s_role_of(names[i]);
    }
    for (int r = 0; r < 4; r++)
        for (long i = 1; i <= counts[r]; i++, m++) {
            snprintf(numbered[m], sizeof numbered[m], "%s-%ld", roles[r], i);
            all[m] = numbered[m];
            their[m] = roles[r];
        }
    return vl_keygen_k8s(dir, all, their, m, policies);
}

/* Reads --policies: policy ids separated by commas, each one valid (no
   spaces: "a, b" would grant " b"). */
static int s_parse_policies(const char *text, void *field, char *why, size_t why_size)
{
    char copy[256], *save = NULL;
    if (strlen(text) >= 200 || strchr(text, '\n'))
        return snprintf(why, why_size, "--policies list too long"), -1;
    snprintf(copy, sizeof copy, "%s", text);
    int n = 0;
    for (char *p = strtok_r(copy, ",", &save); p; p = strtok_r(NULL, ",", &save), n++)
        if (!vl_policy_id_ok(p))
            return snprintf(why, why_size,
                            "--policies: '%s' is not a policy id (1 to 63 printable characters, "
                            "no spaces, not starting with '~'; ids separated by commas)",
                            p),
                   -1;
    if (n == 0)
        return snprintf(why, why_size, "--policies wants policy ids separated by commas"), -1;
    *(const char **)field = text;
    return 0;
}

typedef struct {
    const char *clients;  // --clients LIST
    long counts[4];       // --actors, --learners, --admins, --observers
    const char *policies; // --policies LIST (NULL: any)
    const char *k8s_dir;  // --k8s-secrets DIR
} s_args_t;

#define S_COUNT(name, i, role)                                                                     \
    {                                                                                              \
        name, 0, VL_OPT_LONG, offsetof(s_args_t, counts[i]), 0, S_MAX_CLIENTS, "N",                \
            "N " role " certificates, " role "-1 .. " role "-N", "", 0, NULL                       \
    }

static const vl_flag_t s_flags[] = {
    S_COUNT("actors", 0, "actor"),
    S_COUNT("learners", 1, "learner"),
    S_COUNT("admins", 2, "admin"),
    S_COUNT("observers", 3, "observer"),
    {"policies", 0, VL_FLAG_WORD, offsetof(s_args_t, policies), 0, 0, "LIST",
     "the policies the learners may serve (comma-separated)", "any", 0, s_parse_policies},
    VL_FLAG_STR(s_args_t, "clients", clients, "NAME[,NAME...]",
                "client names instead, each's role from how it begins (actor, learner, admin, "
                "monitor or observer; else actor)"),
    VL_FLAG_STR(s_args_t, "k8s-secrets", k8s_dir, "DIR",
                "Kubernetes Secret manifests instead of files (DIR made, mode 0700; each "
                "manifest 0600; the keys are written nowhere else): volley-broker.yaml "
                "(broker.cert, broker.cert_secret: the broker's container only), "
                "volley-allowed.yaml (the clients' public certificates: --allow), "
                "volley-NAME.yaml per client (NAME.cert, NAME.cert_secret, broker.cert); names in "
                "lower case. kubectl apply -f DIR (deploy/k8s/README.md)"),
    VL_FLAG_HELP_H,
    VL_FLAG_END};

static const vl_flag_cmd_t s_cmd = {
    .name = "keygen",
    .operands = "DIR",
    .forms = "       volley keygen --k8s-secrets DIR [the same flags]\n",
    .about =
        "Writes the CURVE certificates of a secured run into DIR (made, mode 0700):\n"
        "  DIR/broker.cert, DIR/broker.cert_secret      the broker's (--cert on the broker;\n"
        "                                               broker.cert alone is --broker-key\n"
        "                                               for everyone else)\n"
        "  DIR/NAME.cert, DIR/NAME.cert_secret          one per client (--cert on its hosts)\n"
        "  DIR/allowed/NAME.cert                        public keys let in (--allow DIR/allowed\n"
        "                                               on the broker); delete one to shut a\n"
        "                                               client out, add one to let it in\n"
        "Never overwrites a certificate. Secret files stay on the hosts that use them.\n"
        "\n"
        "Each client certificate carries its role (metadata `role`), which the broker\n"
        "reads from its --allow directory: an actor pushes segments and subscribes to\n"
        "weights; a learner serves policies (hello, credit, spec) and publishes their\n"
        "weights and stats; an admin may pause, resume and shut the broker down; an\n"
        "observer asks for status and watches (volley top). Status is open to any key.\n",
    .flags = s_flags};

/* Checks what no single flag can, and the positional arguments from
   argv[first] on: one DIR, none with --k8s-secrets. Returns 0, or -1 after
   saying why. */
static int s_check_args(int argc, int first, const s_args_t *a)
{
    if (strlen(a->clients) >= S_LIST_MAX) {
        fprintf(stderr, "volley keygen: --clients list too long\n");
        return -1;
    }
    if (first == argc - (a->k8s_dir ? 0 : 1))
        return 0;
    fprintf(stderr, "volley keygen: %s\n",
            a->k8s_dir     ? "--k8s-secrets DIR takes no other DIR"
            : first < argc ? "one DIR"
                           : "which DIR?");
    return -1;
}

int vl_keygen_main(int argc, char **argv)
{
    static const char *roles[4] = {"actor", "learner", "admin", "observer"};
    const s_args_t defaults = {.clients = "actor,learner,monitor,admin"};
    s_args_t a = defaults;
    uint64_t given = 0;
    int first = argc, rc = vl_flags_parse(&s_cmd, argc, argv, &a, &defaults, &first, &given);
    if (rc != 0)
        return rc > 0 ? 0 : 2;
    if (s_check_args(argc, first, &a) != 0)
        return 2;
    int by_role = (given & 0xf) != 0; // a count was given: --clients is not used
    char list[S_LIST_MAX];
    snprintf(list, sizeof list, "%s", a.clients);
    long *counts = a.counts;
    const char *policies = a.policies, *k8s_dir = a.k8s_dir;
    char *names[S_MAX_CLIENTS];
    int n = by_role ? 0 : s_split(list, names);
    if (!by_role && n <= 0)
        return 2;
    if (k8s_dir)
        return s_k8s(k8s_dir, names, n, counts, roles, policies);
    const char *dir = argv[first];
    char allowed[4096];
    snprintf(allowed, sizeof allowed, "%s/allowed", dir);
    if (s_mkdir(dir) != 0 || s_mkdir(allowed) != 0 || s_make(dir, "broker", 0, NULL, NULL) != 0)
        return 1;
    for (int i = 0; i < n; i++)
        if (s_make(dir, names[i], 1, s_role_of(names[i]), policies) != 0)
            return 1;
    for (int r = 0; r < 4; r++)
        if (s_make_role(dir, roles[r], counts[r], policies) != 0)
            return 1;
    printf("broker:  volley broker --cert %s/broker.cert --allow %s\n"
           "others:  --cert %s/<name>.cert --broker-key %s/broker.cert\n",
           dir, allowed, dir, dir);
    return 0;
}
