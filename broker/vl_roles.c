/*  vl_roles: peers by key or address, their roles from the allow directory
    or from the trusted address ranges. */
#include "vl_roles.h"

#include <arpa/inet.h>
#include <czmq.h>
#include <dirent.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../common/vl_log.h"

#define S_MAX_KEYS    4096         // certificates read from the allow directory
#define S_MAX_TRUSTED 64           // this host's addresses and the --trust ranges
#define S_MAX_LOGGED  256          // peers whose first refusal was logged
#define S_RELOAD_NS   1000000000LL // the allow directory is looked at this often

typedef struct {
    char key[41]; // Z85 public key
    unsigned roles;
    char policies[VL_POLICIES_MAX];
} s_key_t;

typedef struct {
    int family; // AF_INET or AF_INET6
    uint8_t addr[16];
    int bits;
} s_range_t;

struct vl_roles_s {
    char *allow_dir; // NULL: an open broker
    s_key_t *keys;
    int n_keys;
    int64_t checked_ns;
    struct timespec mtime; // of the allow directory when read
    s_range_t trusted[S_MAX_TRUSTED];
    int n_trusted;
    char logged[S_MAX_LOGGED][VL_PEER_MAX];
    int n_logged;
};

unsigned vl_roles_parse(const char *list)
{
    static const struct {
        const char *name;
        unsigned bit;
    } names[] = {{"actor", VL_ROLE_ACTOR},
                 {"learner", VL_ROLE_LEARNER},
                 {"admin", VL_ROLE_ADMIN},
                 {"observer", VL_ROLE_OBSERVER},
                 {"monitor", VL_ROLE_OBSERVER}};
    char buf[128];
    snprintf(buf, sizeof buf, "%s", list ? list : "");
    unsigned roles = 0;
    for (char *save, *t = strtok_r(buf, ", ", &save); t; t = strtok_r(NULL, ", ", &save)) {
        unsigned bit = 0;
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
            if (strcmp(t, names[i].name) == 0)
                bit = names[i].bit;
        if (!bit)
            return 0;
        roles |= bit;
    }
    return roles;
}

/* The roles a certificate says: its `role`, or for certificates made before
   roles, what its name begins with (actor, learner, admin, monitor); an
   actor when neither says. */
static unsigned s_cert_roles(zcert_t *cert)
{
    const char *role = zcert_meta(cert, "role");
    if (role)
        return vl_roles_parse(role); // 0 (nothing allowed) for a role we do not know
    const char *name = zcert_meta(cert, "name");
    static const char *prefixes[] = {"learner", "admin", "monitor", "observer"};
    static const unsigned bits[] = {VL_ROLE_LEARNER, VL_ROLE_ADMIN, VL_ROLE_OBSERVER,
                                    VL_ROLE_OBSERVER};
    for (int i = 0; name && i < 4; i++)
        if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0)
            return bits[i];
    return VL_ROLE_ACTOR;
}

/* Reads one public certificate into the next key slot. */
static void s_load_one(vl_roles_t *self, const char *path)
{
    zcert_t *cert = self->n_keys < S_MAX_KEYS ? zcert_load(path) : NULL;
    if (!cert)
        return;
    s_key_t *k = &self->keys[self->n_keys++];
    snprintf(k->key, sizeof k->key, "%s", zcert_public_txt(cert));
    k->roles = s_cert_roles(cert);
    const char *pol = zcert_meta(cert, "policies");
    snprintf(k->policies, sizeof k->policies, "%s", pol && pol[0] ? pol : "*");
    zcert_destroy(&cert);
}

/* Orders keys by their text, for bsearch. */
static int s_key_cmp(const void *a, const void *b)
{
    return strcmp(((const s_key_t *)a)->key, ((const s_key_t *)b)->key);
}

/* Reads every certificate of the allow directory (not the *_secret files). */
static void s_load(vl_roles_t *self)
{
    self->n_keys = 0;
    DIR *d = opendir(self->allow_dir);
    if (!d)
        return;
    struct dirent *e;
    char path[4096];
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (e->d_name[0] == '.' || (len > 7 && strcmp(e->d_name + len - 7, "_secret") == 0))
            continue;
        snprintf(path, sizeof path, "%s/%s", self->allow_dir, e->d_name);
        s_load_one(self, path);
    }
    closedir(d);
    qsort(self->keys, (size_t)self->n_keys, sizeof *self->keys, s_key_cmp);
}

/* Trusts this host's own addresses (a peer connecting from one is a process
   on this machine, as on loopback: TCP lets no one else use them). */
static void s_trust_own_addresses(vl_roles_t *self)
{
    struct ifaddrs *all = NULL, *a;
    if (getifaddrs(&all) != 0)
        return;
    for (a = all; a && self->n_trusted < S_MAX_TRUSTED; a = a->ifa_next) {
        int family = a->ifa_addr ? a->ifa_addr->sa_family : 0;
        s_range_t r = {.family = family};
        if (family == AF_INET) {
            memcpy(r.addr, &((struct sockaddr_in *)a->ifa_addr)->sin_addr, 4);
            r.bits = 32;
        } else if (family == AF_INET6) {
            memcpy(r.addr, &((struct sockaddr_in6 *)a->ifa_addr)->sin6_addr, 16);
            r.bits = 128;
        } else {
            continue;
        }
        self->trusted[self->n_trusted++] = r;
    }
    freeifaddrs(all);
}

vl_roles_t *vl_roles_new(const char *allow_dir)
{
    vl_roles_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    if (allow_dir) {
        self->allow_dir = strdup(allow_dir);
        self->keys = calloc(S_MAX_KEYS, sizeof *self->keys);
        if (!self->allow_dir || !self->keys) {
            vl_roles_destroy(&self);
            return NULL;
        }
        vl_roles_tick(self, 0);
    }
    vl_roles_trust(self, "127.0.0.1/32");
    vl_roles_trust(self, "::1/128");
    s_trust_own_addresses(self);
    return self;
}

int vl_roles_trust(vl_roles_t *self, const char *cidr)
{
    char addr[64];
    const char *slash = strchr(cidr, '/');
    size_t len = slash ? (size_t)(slash - cidr) : strlen(cidr);
    if (len == 0 || len >= sizeof addr || self->n_trusted == S_MAX_TRUSTED)
        return -1;
    memcpy(addr, cidr, len);
    addr[len] = 0;
    s_range_t r = {0};
    r.family = strchr(addr, ':') ? AF_INET6 : AF_INET;
    int max = r.family == AF_INET ? 32 : 128;
    char *end = NULL;
    long bits = slash ? strtol(slash + 1, &end, 10) : max;
    if ((slash && (end == slash + 1 || *end)) || bits < 0 || bits > max ||
        inet_pton(r.family, addr, r.addr) != 1)
        return -1;
    r.bits = (int)bits;
    self->trusted[self->n_trusted++] = r;
    return 0;
}

/* Returns 1 if the first bits bits of a and b agree. */
static int s_prefix_eq(const uint8_t *a, const uint8_t *b, int bits)
{
    int bytes = bits / 8, rest = bits % 8;
    if (memcmp(a, b, (size_t)bytes) != 0)
        return 0;
    uint8_t mask = (uint8_t)(0xff << (8 - rest));
    return rest == 0 || ((a[bytes] ^ b[bytes]) & mask) == 0;
}

/* Returns 1 if the address text is in a trusted range. */
static int s_trusted(const vl_roles_t *self, const char *text)
{
    uint8_t a4[4], a6[16];
    int v4 = inet_pton(AF_INET, text, a4) == 1;
    int v6 = !v4 && inet_pton(AF_INET6, text, a6) == 1;
    static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (v6 && memcmp(a6, mapped, 12) == 0) { // ::ffff:a.b.c.d is a.b.c.d
        memcpy(a4, a6 + 12, 4);
        v4 = 1;
        v6 = 0;
    }
    for (int i = 0; i < self->n_trusted; i++) {
        const s_range_t *r = &self->trusted[i];
        if ((v4 && r->family == AF_INET && s_prefix_eq(a4, r->addr, r->bits)) ||
            (v6 && r->family == AF_INET6 && s_prefix_eq(a6, r->addr, r->bits)))
            return 1;
    }
    return 0;
}

void vl_roles_peer(vl_roles_t *self, zmq_msg_t *msg, vl_peer_t *peer)
{
    const char *name = zmq_msg_gets(msg, self->allow_dir ? "User-Id" : "Peer-Address");
    snprintf(peer->who, sizeof peer->who, "%s", name && name[0] ? name : "?");
    snprintf(peer->policies, sizeof peer->policies, "*");
    if (!self->allow_dir) {
        peer->roles =
            name && s_trusted(self, name) ? VL_ROLE_ALL : VL_ROLE_ACTOR | VL_ROLE_OBSERVER;
        return;
    }
    peer->roles = 0;
    s_key_t probe;
    size_t len = name ? strlen(name) : 0;
    if (len != sizeof probe.key - 1)
        return; // no key of ours (Z85 keys are 40 characters)
    memcpy(probe.key, name, len + 1);
    const s_key_t *k = bsearch(&probe, self->keys, (size_t)self->n_keys, sizeof *k, s_key_cmp);
    if (k) {
        peer->roles = k->roles;
        snprintf(peer->policies, sizeof peer->policies, "%s", k->policies);
    }
}

int vl_roles_secured(const vl_roles_t *self)
{
    return self->allow_dir != NULL;
}

int vl_peer_may(const vl_peer_t *peer, unsigned role, const char *policy)
{
    if (!(peer->roles & role))
        return 0;
    if (role != VL_ROLE_LEARNER || !policy || strcmp(peer->policies, "*") == 0)
        return 1;
    size_t n = strlen(policy);
    for (const char *p = peer->policies; p && *p;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len == n && memcmp(p, policy, n) == 0)
            return 1;
        p = comma ? comma + 1 : NULL;
    }
    return 0;
}

int vl_roles_log_once(vl_roles_t *self, const vl_peer_t *peer)
{
    for (int i = 0; i < self->n_logged; i++)
        if (strcmp(self->logged[i], peer->who) == 0)
            return 0;
    if (self->n_logged == S_MAX_LOGGED)
        return 0;
    snprintf(self->logged[self->n_logged++], VL_PEER_MAX, "%s", peer->who);
    return 1;
}

void vl_roles_tick(vl_roles_t *self, int64_t now_ns)
{
    if (!self->allow_dir || (self->checked_ns && now_ns - self->checked_ns < S_RELOAD_NS))
        return;
    self->checked_ns = now_ns ? now_ns : 1;
    struct stat st;
    if (stat(self->allow_dir, &st) != 0)
        return;
    if (self->n_keys && st.st_mtim.tv_sec == self->mtime.tv_sec &&
        st.st_mtim.tv_nsec == self->mtime.tv_nsec)
        return;
    self->mtime = st.st_mtim;
    s_load(self);
    vl_info("roles: %d keys read from %s", self->n_keys, self->allow_dir);
}

void vl_roles_destroy(vl_roles_t **self_p)
{
    vl_roles_t *self = self_p ? *self_p : NULL;
    if (!self)
        return;
    free(self->allow_dir);
    free(self->keys);
    free(self);
    *self_p = NULL;
}
