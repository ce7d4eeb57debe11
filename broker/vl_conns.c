/*  vl_conns: open connections per source address (an open-addressing table
    with linear probing and backward-shift deletion) and per descriptor. */
#include "vl_conns.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_KEY 17 // an address (IPv4 as ::ffff:a.b.c.d) and the listener it came to

typedef struct {
    uint8_t addr[S_KEY];
    int count; // 0: a free slot
} s_addr_t;

typedef struct {
    uint8_t addr[S_KEY]; // the key counted on this descriptor
    int owner;           // the listener that accepted it, + 1; 0: nothing counted
} s_fd_t;

struct vl_conns_s {
    int max_total, max_per_addr, n_fds;
    int totals[VL_CONNS_OWNERS]; // per listener
    int total;
    s_addr_t *addrs; // a power of two at least twice max_total: probes stay short
    uint32_t mask;
    s_fd_t *fds; // by descriptor
};

vl_conns_t *vl_conns_new(int max_total, int max_per_addr, int n_fds)
{
    vl_conns_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    uint32_t size = 16;
    while (size < 2u * VL_CONNS_OWNERS * (uint32_t)max_total)
        size <<= 1;
    self->max_total = max_total;
    self->max_per_addr = max_per_addr;
    self->n_fds = n_fds;
    self->mask = size - 1;
    self->addrs = calloc(size, sizeof *self->addrs);
    self->fds = calloc((size_t)n_fds, sizeof *self->fds);
    if (!self->addrs || !self->fds)
        vl_conns_destroy(&self);
    return self;
}

/* Writes the key of a socket address (IPv4 mapped into IPv6) at listener owner. */
static void s_key(const struct sockaddr_storage *a, int owner, uint8_t key[S_KEY])
{
    static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    memset(key, 0, S_KEY);
    key[16] = (uint8_t)owner;
    if (a->ss_family == AF_INET) {
        memcpy(key, mapped, 12);
        memcpy(key + 12, &((const struct sockaddr_in *)a)->sin_addr, 4);
    } else if (a->ss_family == AF_INET6) {
        memcpy(key, &((const struct sockaddr_in6 *)a)->sin6_addr, 16);
    }
}

/* Returns the table index where key's probe starts. */
static uint32_t s_home(const vl_conns_t *self, const uint8_t key[S_KEY])
{
    uint32_t h = 2166136261u; // FNV-1a
    for (int i = 0; i < S_KEY; i++)
        h = (h ^ key[i]) * 16777619u;
    return h & self->mask;
}

/* Returns the table index of key's slot: its own, or the free one where it would go. */
static uint32_t s_find(const vl_conns_t *self, const uint8_t key[S_KEY])
{
    uint32_t i = s_home(self, key);
    while (self->addrs[i].count && memcmp(self->addrs[i].addr, key, S_KEY) != 0)
        i = (i + 1) & self->mask;
    return i;
}

/* Empties slot i, moving later entries of its probe run back so each stays findable. */
static void s_remove(vl_conns_t *self, uint32_t i)
{
    for (uint32_t j = (i + 1) & self->mask; self->addrs[j].count; j = (j + 1) & self->mask) {
        uint32_t h = s_home(self, self->addrs[j].addr);
        if (((j - h) & self->mask) >= ((j - i) & self->mask)) { // its home is not after the gap
            self->addrs[i] = self->addrs[j];
            i = j;
        }
    }
    self->addrs[i].count = 0;
}

/* Takes the connection counted on fd off its address's count. */
static void s_release(vl_conns_t *self, int fd)
{
    uint32_t i = s_find(self, self->fds[fd].addr);
    self->fds[fd].owner = 0;
    if (!self->addrs[i].count)
        return; // not counted (cannot happen: every counted descriptor holds its address)
    self->total--;
    self->totals[self->fds[fd].addr[16]]--;
    if (--self->addrs[i].count == 0)
        s_remove(self, i);
}

vl_conn_verdict_t vl_conns_accept(vl_conns_t *self, int fd, int owner,
                                  const struct sockaddr_storage *addr)
{
    if (fd < 0 || fd >= self->n_fds || owner < 0 || owner >= VL_CONNS_OWNERS)
        return VL_CONN_TOTAL;
    if (self->fds[fd].owner)
        s_release(self, fd);
    uint8_t key[S_KEY];
    s_key(addr, owner, key);
    uint32_t i = s_find(self, key);
    if (self->totals[owner] >= self->max_total)
        return VL_CONN_TOTAL;
    if (self->addrs[i].count >= self->max_per_addr)
        return VL_CONN_PER_ADDR;
    memcpy(self->addrs[i].addr, key, S_KEY);
    self->addrs[i].count++;
    self->total++;
    self->totals[owner]++;
    memcpy(self->fds[fd].addr, key, S_KEY);
    self->fds[fd].owner = owner + 1;
    return VL_CONN_OK;
}

int vl_conns_close(vl_conns_t *self, int fd, int owner)
{
    if (fd < 0 || fd >= self->n_fds || self->fds[fd].owner != owner + 1)
        return 0;
    s_release(self, fd);
    return 1;
}

int vl_conns_total(const vl_conns_t *self)
{
    return self->total;
}

void vl_conns_addr_text(const struct sockaddr_storage *addr, char *buf, size_t n)
{
    const void *a = addr->ss_family == AF_INET
                        ? (const void *)&((const struct sockaddr_in *)addr)->sin_addr
                        : (const void *)&((const struct sockaddr_in6 *)addr)->sin6_addr;
    if (n == 0 || (addr->ss_family != AF_INET && addr->ss_family != AF_INET6) ||
        !inet_ntop(addr->ss_family, a, buf, (socklen_t)n))
        snprintf(buf, n, "?");
}

void vl_conns_destroy(vl_conns_t **self_p)
{
    vl_conns_t *self = self_p ? *self_p : NULL;
    if (!self)
        return;
    free(self->addrs);
    free(self->fds);
    free(self);
    *self_p = NULL;
}
