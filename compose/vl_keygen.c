/*  vl_keygen: a broker certificate, one per client name, and the broker's
    directory of allowed public certificates. */
#include "vl_keygen.h"

#include <czmq.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "../common/vl_curve.h"

#define S_MAX_CLIENTS 64

static void s_usage(FILE *out)
{
    fprintf(
        out,
        "usage: volley keygen DIR [--clients NAME[,NAME...]]\n"
        "\n"
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
        "  --clients LIST     client names (default actor,learner,monitor)\n"
        "  -h, --help         this text\n");
}

/* Returns 1 if path exists. */
static int s_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* Writes one pair (and, for a client, its public copy into allowed/).
   Returns 0, or -1 after saying why. */
static int s_make(const char *dir, const char *name, int client)
{
    char path[4096], pub[4096], why[512];
    snprintf(path, sizeof path, "%s/%s.cert", dir, name);
    if (s_exists(path)) {
        fprintf(stderr, "volley keygen: %s exists; not overwritten\n", path);
        return -1;
    }
    if (vl_curve_keygen(path, name, why, sizeof why) != 0) {
        fprintf(stderr, "volley keygen: %s\n", why);
        return -1;
    }
    printf("wrote %s and %s_secret\n", path, path);
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

int vl_keygen_main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"clients", required_argument, 0, 'c'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    char list[1024] = "actor,learner,monitor";
    int opt;
    while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (opt == 'c' && strlen(optarg) >= sizeof list) {
            fprintf(stderr, "volley keygen: --clients list too long\n");
            return 2;
        } else if (opt == 'c') {
            snprintf(list, sizeof list, "%s", optarg);
        } else {
            s_usage(opt == 'h' ? stdout : stderr);
            return opt == 'h' ? 0 : 2;
        }
    }
    if (optind != argc - 1) {
        fprintf(stderr, "volley keygen: %s\n", optind < argc ? "one DIR" : "which DIR?");
        return 2;
    }
    char *names[S_MAX_CLIENTS];
    int n = s_split(list, names);
    if (n <= 0)
        return 2;
    const char *dir = argv[optind];
    char allowed[4096];
    snprintf(allowed, sizeof allowed, "%s/allowed", dir);
    if (s_mkdir(dir) != 0 || s_mkdir(allowed) != 0 || s_make(dir, "broker", 0) != 0)
        return 1;
    for (int i = 0; i < n; i++)
        if (s_make(dir, names[i], 1) != 0)
            return 1;
    printf("broker:  volley broker --cert %s/broker.cert --allow %s\n"
           "others:  --cert %s/<name>.cert --broker-key %s/broker.cert\n",
           dir, allowed, dir, dir);
    return 0;
}
