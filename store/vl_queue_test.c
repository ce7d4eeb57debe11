/*  Tests of vl_queue: order, bounds, and many threads at once. */
#include "vl_queue.h"

#include <pthread.h>
#include <stdatomic.h>

#include "../tests/vl_test.h"

static void test_fifo_and_bounds(void)
{
    vl_queue_t *q = vl_queue_new(3); // rounds up to 4
    VL_CHECK(q);
    uint32_t v;
    VL_CHECK(vl_queue_pop(q, &v) == -1);
    for (uint32_t i = 0; i < 4; i++)
        VL_CHECK(vl_queue_push(q, 10 + i) == 0);
    VL_CHECK(vl_queue_push(q, 99) == -1);
    for (uint32_t i = 0; i < 4; i++)
        VL_CHECK(vl_queue_pop(q, &v) == 0 && v == 10 + i);
    VL_CHECK(vl_queue_pop(q, &v) == -1);
    VL_CHECK(vl_queue_push(q, 7) == 0 && vl_queue_pop(q, &v) == 0 && v == 7); // wraps
    vl_queue_destroy(&q);
    vl_queue_destroy(&q);
    VL_CHECK(q == NULL && vl_queue_new(0) == NULL);
}

#define S_PER_THREAD 200000

typedef struct {
    vl_queue_t *q;
    uint32_t id;
    atomic_ullong *sum;
    atomic_int *popped;
} s_worker_t;

static void *s_produce(void *arg)
{
    s_worker_t *w = arg;
    for (uint32_t i = 1; i <= S_PER_THREAD; i++)
        while (vl_queue_push(w->q, w->id * S_PER_THREAD + i) != 0)
            ;
    return NULL;
}

static void *s_consume(void *arg)
{
    s_worker_t *w = arg;
    uint32_t v, last[2] = {0, 0};
    int ordered = 1;
    while (atomic_load(w->popped) < 2 * S_PER_THREAD) {
        if (vl_queue_pop(w->q, &v) != 0)
            continue;
        uint32_t producer = (v - 1) / S_PER_THREAD;
        ordered &= v > last[producer]; // each producer's values arrive in order
        last[producer] = v;
        atomic_fetch_add(w->sum, v);
        atomic_fetch_add(w->popped, 1);
    }
    return ordered ? (void *)1 : NULL;
}

/* Two producers and two consumers: every value arrives exactly once (the
   sum matches) and, per consumer, each producer's values in order. */
static void test_two_producers_two_consumers(void)
{
    vl_queue_t *q = vl_queue_new(64);
    atomic_ullong sum = 0;
    atomic_int popped = 0;
    s_worker_t w[4] = {
        {q, 0, &sum, &popped}, {q, 1, &sum, &popped}, {q, 0, &sum, &popped}, {q, 0, &sum, &popped}};
    pthread_t th[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, i < 2 ? s_produce : s_consume, &w[i]);
    void *ordered[4] = {0};
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], &ordered[i]);
    unsigned long long n = 2ull * S_PER_THREAD;
    VL_CHECK(atomic_load(&sum) == n * (n + 1) / 2);
    VL_CHECK(ordered[2] && ordered[3]);
    vl_queue_destroy(&q);
}

int main(void)
{
    VL_RUN(test_fifo_and_bounds);
    VL_RUN(test_two_producers_two_consumers);
    return VL_DONE();
}
