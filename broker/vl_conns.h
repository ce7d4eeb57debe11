/*  vl_conns: the broker's count of open connections on each of its
    listeners, per source address and in all, followed by the file
    descriptor each came in on. Bounded: a listener holds at most max_total
    connections (so at most that many addresses), and a descriptor beyond
    n_fds is refused. */
#ifndef VL_CONNS_H
#define VL_CONNS_H

#include <sys/socket.h>

#define VL_CONNS_OWNERS 8 // listeners counted apart (the broker has 5 ports)

typedef struct vl_conns_s vl_conns_t;

/* What vl_conns_accept decided. */
typedef enum {
    VL_CONN_OK,       // counted
    VL_CONN_PER_ADDR, // its address has max_per_addr open on that listener
    VL_CONN_TOTAL,    // the listener has max_total open
} vl_conn_verdict_t;

/* Creates the count: per listener at most max_total connections and
   max_per_addr from one address; descriptors below n_fds. NULL on no memory. */
vl_conns_t *vl_conns_new(int max_total, int max_per_addr, int n_fds);

/* Counts the connection on fd (accepted by listener `owner`, below
   VL_CONNS_OWNERS) from addr, or refuses it (it is then not counted). A descriptor
   still counted for another connection is released first: its close was
   not seen yet. */
vl_conn_verdict_t vl_conns_accept(vl_conns_t *self, int fd, int owner,
                                  const struct sockaddr_storage *addr);

/* Releases the connection on fd accepted by owner. Returns 1 if one was
   counted there, else 0 (refused, released already, or never seen). */
int vl_conns_close(vl_conns_t *self, int fd, int owner);

/* Returns the connections counted now, all listeners together. */
int vl_conns_total(const vl_conns_t *self);

/* Writes addr's text ("127.0.1.7", "::1") into buf of n bytes. */
void vl_conns_addr_text(const struct sockaddr_storage *addr, char *buf, size_t n);

/* Frees the count and nulls the pointer; safe on NULL and twice. */
void vl_conns_destroy(vl_conns_t **self_p);

#endif
