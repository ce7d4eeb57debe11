/*  vl_keygen_k8s: `volley keygen --k8s-secrets DIR`, the certificates of a
    secured run as Kubernetes Secret manifests. The key pairs are made in
    memory and written only into the manifests, each base64 in a Secret's
    data: no certificate file exists anywhere, so a key reaches a pod only
    through the Secret that mounts it. */
#include "vl_keygen_k8s.h"

#include "../common/vl_curve.h"

#include <czmq.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* One certificate's two files as text (czmq's format, what zcert_load
   reads): the public one, and the secret one holding both keys. */
typedef struct {
    char *public_txt;
    char *secret_txt;
} s_pair_t;

/* Returns a certificate's file text with its metadata and the public key,
   and the secret key when with_secret. Caller frees; NULL on no memory. */
static char *s_cert_text(zcert_t *cert, int with_secret)
{
    zconfig_t *root = zconfig_new("root", NULL);
    if (!root)
        return NULL;
    zconfig_set_comment(root, with_secret ? "   ZeroMQ CURVE **Secret** Certificate"
                                          : "   ZeroMQ CURVE Public Certificate");
    zlist_t *keys = zcert_meta_keys(cert);
    for (char *k = keys ? zlist_first(keys) : NULL; k; k = zlist_next(keys)) {
        char path[128];
        snprintf(path, sizeof path, "/metadata/%s", k);
        zconfig_put(root, path, zcert_meta(cert, k));
    }
    zlist_destroy(&keys);
    zconfig_put(root, "/curve/public-key", zcert_public_txt(cert));
    if (with_secret)
        zconfig_put(root, "/curve/secret-key", zcert_secret_txt(cert));
    char *text = zconfig_str_save(root);
    zconfig_destroy(&root);
    return text;
}

/* Makes a key pair named name with role and policies (either may be NULL)
   into pair. Returns 0, or -1. */
static int s_pair_new(s_pair_t *pair, const char *name, const char *role, const char *policies)
{
    zcert_t *cert = vl_curve_cert_new(name, role, policies);
    if (!cert)
        return -1;
    pair->public_txt = s_cert_text(cert, 0);
    pair->secret_txt = s_cert_text(cert, 1);
    zcert_destroy(&cert);
    return pair->public_txt && pair->secret_txt ? 0 : -1;
}

/* Frees a pair's texts, wiping the secret one first. */
static void s_pair_free(s_pair_t *pair)
{
    if (pair->secret_txt)
        memset(pair->secret_txt, 0, strlen(pair->secret_txt));
    free(pair->public_txt);
    free(pair->secret_txt);
    pair->public_txt = pair->secret_txt = NULL;
}

/* Returns 1 when name can be a Secret's name after "volley-" and a file's
   (lower-case letters, digits and '-', starting and ending with a letter or
   digit, at most 50 characters). */
static int s_name_ok(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > 50 || name[0] == '-' || name[n - 1] == '-')
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((name[i] >= 'a' && name[i] <= 'z') || (name[i] >= '0' && name[i] <= '9') ||
              name[i] == '-'))
            return 0;
    return 1;
}

/* Writes one data entry, "  KEY: BASE64\n", of text. Returns 0, or -1. */
static int s_entry(FILE *f, const char *key, const char *text)
{
    zarmour_t *armour = zarmour_new();
    if (!armour)
        return -1;
    zarmour_set_mode(armour, ZARMOUR_MODE_BASE64_STD);
    zarmour_set_pad(armour, true);
    zarmour_set_line_breaks(armour, false);
    char *b64 = zarmour_encode(armour, (const byte *)text, strlen(text));
    zarmour_destroy(&armour);
    if (!b64)
        return -1;
    int rc = fprintf(f, "  %s: %s\n", key, b64) < 0 ? -1 : 0;
    memset(b64, 0, strlen(b64));
    free(b64);
    return rc;
}

/* The manifests' file names, Secret names and the roles they serve. */
typedef struct {
    const char *name; // the Secret is volley-<name>, its file <name>.yaml
    const char *role; // the label volley/role
    const char *what; // the comment above it
} s_secret_t;

/* Opens DIR/<name>.yaml for writing, exclusively, mode 0600, and writes
   the Secret's head. Returns the stream, or NULL after saying why. */
static FILE *s_open(const char *dir, const s_secret_t *s)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/volley-%s.yaml", dir, s->name);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        fprintf(stderr, "volley keygen: cannot write %s: %s\n", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    fprintf(f,
            "# volley keygen --k8s-secrets: %s\n"
            "apiVersion: v1\n"
            "kind: Secret\n"
            "metadata:\n"
            "  name: volley-%s\n"
            "  labels:\n"
            "    app.kubernetes.io/name: volley\n"
            "    app.kubernetes.io/component: curve-keys\n"
            "    volley/role: %s\n"
            "type: Opaque\n"
            "data:\n",
            s->what, s->name, s->role);
    printf("wrote %s/volley-%s.yaml (Secret volley-%s)\n", dir, s->name, s->name);
    return f;
}

/* Closes f. Returns 0, or -1 (after saying why) if anything failed
   (failed: an earlier write). */
static int s_close(FILE *f, int failed)
{
    int rc = ferror(f) || failed ? -1 : 0;
    if (fclose(f) != 0)
        rc = -1;
    if (rc != 0)
        fprintf(stderr, "volley keygen: a Secret manifest could not be written whole\n");
    return rc;
}

/* Refuses when any manifest the run would write exists already, so that
   nothing is written at all. Returns 0, or -1 after saying why. */
static int s_check_free(const char *dir, const char *const *names, int n)
{
    char path[4200];
    const char *fixed[] = {"broker", "allowed"};
    for (int i = 0; i < n + 2; i++) {
        snprintf(path, sizeof path, "%s/volley-%s.yaml", dir, i < 2 ? fixed[i] : names[i - 2]);
        if (access(path, F_OK) == 0) {
            fprintf(stderr, "volley keygen: %s exists; not overwritten\n", path);
            return -1;
        }
    }
    return 0;
}

/* Writes the broker's, the allowed list's and each client's manifest from
   the pairs made. Returns 0, or -1. */
static int s_write_all(const char *dir, const s_pair_t *broker, const s_pair_t *pairs,
                       const char *const *names, const char *const *roles, int n)
{
    char key[96];
    s_secret_t b = {"broker", "broker",
                    "the broker's key pair; mount it in the broker's container only"};
    FILE *f = s_open(dir, &b);
    if (!f)
        return -1;
    int bad = s_entry(f, "broker.cert", broker->public_txt) ||
              s_entry(f, "broker.cert_secret", broker->secret_txt);
    if (s_close(f, bad) != 0)
        return -1;
    s_secret_t a = {"allowed", "broker",
                    "the clients' public certificates, the broker's --allow directory"};
    if (!(f = s_open(dir, &a)))
        return -1;
    for (int i = 0; i < n && !bad; i++) {
        snprintf(key, sizeof key, "%s.cert", names[i]);
        bad = s_entry(f, key, pairs[i].public_txt);
    }
    if (s_close(f, bad) != 0)
        return -1;
    for (int i = 0; i < n; i++) {
        char what[160];
        snprintf(what, sizeof what, "client %s (role %s): its key pair and the broker's public key",
                 names[i], roles[i]);
        s_secret_t c = {names[i], roles[i], what};
        if (!(f = s_open(dir, &c)))
            return -1;
        snprintf(key, sizeof key, "%s.cert", names[i]);
        bad = s_entry(f, "broker.cert", broker->public_txt) || s_entry(f, key, pairs[i].public_txt);
        snprintf(key, sizeof key, "%s.cert_secret", names[i]);
        bad = bad || s_entry(f, key, pairs[i].secret_txt);
        if (s_close(f, bad) != 0)
            return -1;
    }
    return 0;
}

int vl_keygen_k8s(const char *dir, const char *const *names, const char *const *roles, int n,
                  const char *policies)
{
    for (int i = 0; i < n; i++)
        if (!s_name_ok(names[i])) {
            fprintf(stderr,
                    "volley keygen: --k8s-secrets: client name '%s' cannot name a Secret "
                    "(lower-case letters, digits and '-', at most 50)\n",
                    names[i]);
            return 2;
        }
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        fprintf(stderr, "volley keygen: cannot make %s: %s\n", dir, strerror(errno));
        return 1;
    }
    if (s_check_free(dir, names, n) != 0)
        return 1;
    s_pair_t broker = {0}, *pairs = calloc((size_t)n, sizeof *pairs);
    int rc = pairs && s_pair_new(&broker, "broker", NULL, NULL) == 0 ? 0 : -1;
    for (int i = 0; i < n && rc == 0; i++)
        rc = s_pair_new(&pairs[i], names[i], roles[i],
                        strcmp(roles[i], "learner") == 0 ? policies : NULL);
    if (rc != 0)
        fprintf(stderr, "volley keygen: cannot make a key pair\n");
    else
        rc = s_write_all(dir, &broker, pairs, names, roles, n);
    s_pair_free(&broker);
    for (int i = 0; pairs && i < n; i++)
        s_pair_free(&pairs[i]);
    free(pairs);
    if (rc == 0)
        printf("apply:   kubectl apply -f %s   (then kubectl apply -k deploy/k8s/overlays/cpu)\n",
               dir);
    return rc == 0 ? 0 : 1;
}
