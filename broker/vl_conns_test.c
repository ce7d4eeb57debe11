/*  vl_conns_test: connections counted per address and in all, refusals at
    each bound, descriptors reused before their close is seen, and many
    addresses coming and going (the table's deletions keep every address
    findable). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include "../tests/vl_test.h"
#include "vl_conns.h"

/* Returns the IPv4 socket address 127.a.b.c. Written as a sockaddr_in and
   copied in, as accept() fills the storage: stores through a sockaddr_in
   pointer into a sockaddr_storage break strict aliasing, and an optimising
   build then returned some addresses unwritten. */
static struct sockaddr_storage s_v4(int a, int b, int c)
{
    struct sockaddr_in in;
    memset(&in, 0, sizeof in);
    in.sin_family = AF_INET;
    in.sin_addr.s_addr =
        htonl((127u << 24) | ((unsigned)a << 16) | ((unsigned)b << 8) | (unsigned)c);
    struct sockaddr_storage s;
    memset(&s, 0, sizeof s);
    memcpy(&s, &in, sizeof in);
    return s;
}

static void test_per_address(void)
{
    vl_conns_t *c = vl_conns_new(10, 2, 64);
    struct sockaddr_storage a = s_v4(0, 1, 1), b = s_v4(0, 1, 2);
    VL_CHECK(vl_conns_accept(c, 5, 0, &a) == VL_CONN_OK);
    VL_CHECK(vl_conns_accept(c, 6, 0, &a) == VL_CONN_OK);
    VL_CHECK(vl_conns_accept(c, 7, 0, &a) == VL_CONN_PER_ADDR);
    VL_CHECK(vl_conns_accept(c, 8, 0, &b) == VL_CONN_OK);
    VL_CHECK(vl_conns_accept(c, 9, 1, &a) == VL_CONN_OK); // each listener counts apart
    VL_CHECK(vl_conns_total(c) == 4);
    VL_CHECK(vl_conns_close(c, 7, 0) == 0); // refused: nothing to release
    VL_CHECK(vl_conns_close(c, 6, 1) == 0); // another listener's
    VL_CHECK(vl_conns_close(c, 6, 0) == 1);
    VL_CHECK(vl_conns_close(c, 6, 0) == 0); // released already
    VL_CHECK(vl_conns_accept(c, 7, 0, &a) == VL_CONN_OK);
    VL_CHECK(vl_conns_total(c) == 4);
    vl_conns_destroy(&c);
    vl_conns_destroy(&c);
    VL_CHECK(c == NULL);
}

static void test_total_and_reuse(void)
{
    vl_conns_t *c = vl_conns_new(3, 3, 64);
    for (int i = 0; i < 3; i++) {
        struct sockaddr_storage a = s_v4(1, 0, i);
        VL_CHECK(vl_conns_accept(c, 10 + i, 0, &a) == VL_CONN_OK);
    }
    struct sockaddr_storage d = s_v4(1, 0, 9);
    VL_CHECK(vl_conns_accept(c, 20, 0, &d) == VL_CONN_TOTAL);
    VL_CHECK(vl_conns_accept(c, 20, 1, &d) == VL_CONN_OK); // another listener has room
    VL_CHECK(vl_conns_close(c, 20, 1) == 1);
    VL_CHECK(vl_conns_accept(c, 10, 2, &d) == VL_CONN_OK); // fd 10 reused: its old one released
    VL_CHECK(vl_conns_total(c) == 3);
    VL_CHECK(vl_conns_close(c, 10, 0) == 0); // the old close, seen late
    VL_CHECK(vl_conns_close(c, 10, 2) == 1);
    VL_CHECK(vl_conns_accept(c, 64, 0, &d) == VL_CONN_TOTAL); // beyond the descriptors followed
    vl_conns_destroy(&c);
}

static void test_churn(void)
{
    vl_conns_t *c = vl_conns_new(512, 1, 2048);
    for (int round = 0; round < 20; round++) {
        for (int i = 0; i < 512; i++) {
            struct sockaddr_storage a = s_v4(round % 3, i >> 8, i & 255);
            VL_CHECK(vl_conns_accept(c, i, 0, &a) == VL_CONN_OK);
        }
        VL_CHECK(vl_conns_total(c) == 512);
        for (int i = 0; i < 512; i += 2)
            VL_CHECK(vl_conns_close(c, i, 0) == 1);
        for (int i = 1; i < 512; i += 2) { // still found after the deletions around them
            struct sockaddr_storage a = s_v4(round % 3, i >> 8, i & 255);
            VL_CHECK(vl_conns_accept(c, 1024 + i, 0, &a) == VL_CONN_PER_ADDR);
            VL_CHECK(vl_conns_close(c, i, 0) == 1);
        }
        VL_CHECK(vl_conns_total(c) == 0);
    }
    vl_conns_destroy(&c);
}

static void test_addr_text(void)
{
    struct sockaddr_storage a = s_v4(2, 3, 4);
    char buf[64];
    vl_conns_addr_text(&a, buf, sizeof buf);
    VL_CHECK(strcmp(buf, "127.2.3.4") == 0);
}

int main(void)
{
    VL_RUN(test_per_address);
    VL_RUN(test_total_and_reuse);
    VL_RUN(test_churn);
    VL_RUN(test_addr_text);
    return VL_DONE();
}
