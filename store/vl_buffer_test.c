/*  Tests of vl_buffer: order, eviction, refusal, and a producer thread
    writing while the consumer trains. */
#include "vl_buffer.h"

#include <pthread.h>
#include <string.h>

#include "../tests/vl_test.h"

#define T 8
#define D 4
#define A 3 // values per action: a box of three

static vl_obs_spec_t s_spec = {.n_fields = 1,
                               .fields = {{.encoding = VL_OBS_F32, .ndim = 1, .shape = {D}}}};

/* Returns the box the segments act in: A values in [-1, 1]. */
static vl_action_spec_t s_box(void)
{
    vl_action_spec_t a = {.kind = VL_ENV_BOX, .dims = A};
    for (int d = 0; d < A; d++)
        a.low[d] = -1.0f, a.high[d] = 1.0f;
    return a;
}

/* Claims a slot, fills a segment whose every float equals `tag`, commits. */
static int s_put(vl_buffer_t *b, float tag)
{
    void *arrays;
    size_t cap;
    int slot = vl_buffer_claim(b, &arrays, &cap);
    if (slot < 0 || cap < vl_segment_arrays_size(T, &s_spec, A, 0))
        return -1;
    vl_segment_t seg = {.horizon = T, .seq = (uint64_t)tag, .action = s_box()};
    vl_segment_set_spec(&seg, &s_spec);
    vl_segment_bind(&seg, arrays);
    for (int i = 0; i < (T + 1) * D; i++)
        ((float *)seg.obs)[i] = tag; // all f32: rows are floats
    for (int i = 0; i < T * A; i++)
        seg.actions[i] = tag;
    for (int t = 0; t < T; t++)
        seg.rewards[t] = tag;
    vl_buffer_commit(b, slot, &seg);
    return slot;
}

/* Returns the tag s_put wrote: the segment's first observation value. */
static float s_tag(const vl_segment_t *seg)
{
    return ((const float *)seg->obs)[0];
}

static void test_fifo_order(void)
{
    vl_buffer_t *b = vl_buffer_new(8, T, &s_spec, A, 0);
    VL_CHECK(b);
    for (int i = 0; i < 5; i++)
        VL_CHECK(s_put(b, (float)i) >= 0);
    int slots[3];
    VL_CHECK(vl_buffer_take(b, 3, 0, slots) == 3);
    for (int i = 0; i < 3; i++)
        VL_CHECK(s_tag(vl_buffer_segment(b, slots[i])) == (float)i);
    VL_CHECK(vl_buffer_waiting(b) == 2);
    vl_buffer_release(b, slots, 3);
    vl_buffer_destroy(&b);
    vl_buffer_destroy(&b);
    VL_CHECK(b == NULL);
}

/* Each slot holds actions [T][A] after the observations, and the taken
   segment keeps its space; a buffer for no values per action, or more
   than a space may have, is refused. */
static void test_action_width(void)
{
    VL_CHECK(vl_buffer_new(4, T, &s_spec, 0, 0) == NULL);
    VL_CHECK(vl_buffer_new(4, T, &s_spec, VL_ACTION_DIMS_MAX + 1, 0) == NULL);
    vl_buffer_t *b = vl_buffer_new(2, T, &s_spec, A, 0);
    VL_CHECK(b);
    VL_CHECK(s_put(b, 7.0f) >= 0);
    int slot;
    VL_CHECK(vl_buffer_take(b, 1, 0, &slot) == 1);
    const vl_segment_t *seg = vl_buffer_segment(b, slot);
    vl_action_spec_t box = s_box();
    int all = 1;
    for (int i = 0; i < T * A; i++)
        all &= seg->actions[i] == 7.0f;
    VL_CHECK(vl_action_equal(&seg->action, &box) && all && seg->rewards[T - 1] == 7.0f);
    VL_CHECK(seg->actions + T * A == seg->rewards); // the arrays really are A wide
    vl_buffer_release(b, &slot, 1);
    vl_buffer_destroy(&b);
    b = vl_buffer_new(1, T, &s_spec, VL_ACTION_DIMS_MAX, 0);
    void *arrays;
    size_t cap;
    VL_CHECK(b && vl_buffer_claim(b, &arrays, &cap) == 0);
    VL_CHECK(cap >= vl_segment_arrays_size(T, &s_spec, VL_ACTION_DIMS_MAX, 0));
    vl_buffer_destroy(&b);
}

static void test_take_times_out_short(void)
{
    vl_buffer_t *b = vl_buffer_new(4, T, &s_spec, A, 0);
    VL_CHECK(s_put(b, 1) >= 0);
    int slots[2];
    VL_CHECK(vl_buffer_take(b, 2, 20, slots) == 0);
    VL_CHECK(vl_buffer_waiting(b) == 1); // nothing taken on a timeout
    vl_buffer_destroy(&b);
}

static void test_full_evicts_oldest(void)
{
    vl_buffer_t *b = vl_buffer_new(4, T, &s_spec, A, 0);
    for (int i = 0; i < 6; i++)
        VL_CHECK(s_put(b, (float)i) >= 0);
    VL_CHECK(vl_buffer_evicted(b) == 2);
    int slots[4];
    VL_CHECK(vl_buffer_take(b, 4, 0, slots) == 4);
    VL_CHECK(s_tag(vl_buffer_segment(b, slots[0])) == 2.0f); // 0 and 1 were evicted
    VL_CHECK(s_tag(vl_buffer_segment(b, slots[3])) == 5.0f);
    vl_buffer_destroy(&b);
}

static void test_taken_slots_are_never_claimed(void)
{
    vl_buffer_t *b = vl_buffer_new(2, T, &s_spec, A, 0);
    VL_CHECK(s_put(b, 1) >= 0);
    VL_CHECK(s_put(b, 2) >= 0);
    int slots[2];
    VL_CHECK(vl_buffer_take(b, 2, 0, slots) == 2);
    VL_CHECK(s_put(b, 3) == -1); // both slots are being trained on
    vl_buffer_release(b, slots, 2);
    VL_CHECK(s_put(b, 3) >= 0);
    vl_buffer_destroy(&b);
}

static void test_abandon_frees_slot(void)
{
    vl_buffer_t *b = vl_buffer_new(1, T, &s_spec, A, 0);
    void *arrays;
    size_t cap;
    int slot = vl_buffer_claim(b, &arrays, &cap);
    VL_CHECK(slot == 0);
    VL_CHECK(vl_buffer_claim(b, &arrays, &cap) == -1);
    vl_buffer_abandon(b, slot);
    VL_CHECK(vl_buffer_claim(b, &arrays, &cap) == 0);
    VL_CHECK(vl_buffer_waiting(b) == 0);
    vl_buffer_destroy(&b);
}

typedef struct {
    vl_buffer_t *b;
    int n;
} s_producer_t;

static void *s_produce(void *arg)
{
    s_producer_t *p = arg;
    for (int i = 1; i <= p->n; i++)
        while (s_put(p->b, (float)i) < 0)
            ; // every slot busy for a moment: try again
    return NULL;
}

/* The consumer sees whole segments (never torn) in increasing order, and
   every produced segment is either seen or counted as evicted. */
static void test_concurrent_ingest_and_train(void)
{
    s_producer_t p = {vl_buffer_new(16, T, &s_spec, A, 0), 20000};
    pthread_t th;
    VL_CHECK(pthread_create(&th, NULL, s_produce, &p) == 0);
    int seen = 0, torn = 0, last = 0, order_ok = 1, slots[4];
    while (seen + (int)vl_buffer_evicted(p.b) < p.n) {
        int n = vl_buffer_take(p.b, 4, 50, slots);
        if (n == 0)
            n = vl_buffer_take(p.b, 1, 50, slots);
        for (int i = 0; i < n; i++) {
            const vl_segment_t *s = vl_buffer_segment(p.b, slots[i]);
            const float *obs = (const float *)s->obs, tag = obs[0];
            for (int k = 0; k < (T + 1) * D; k++)
                torn += obs[k] != tag;
            for (int k = 0; k < T * A; k++)
                torn += s->actions[k] != tag;
            order_ok &= (int)tag > last;
            last = (int)tag;
        }
        seen += n;
        vl_buffer_release(p.b, slots, n);
    }
    pthread_join(th, NULL);
    VL_CHECK(torn == 0);
    VL_CHECK(order_ok);
    VL_CHECK(seen + (int)vl_buffer_evicted(p.b) == p.n);
    vl_buffer_destroy(&p.b);
}

typedef struct {
    vl_buffer_t *b;
    int id, n;
} s_writer_t;

static void *s_write(void *arg)
{
    s_writer_t *w = arg;
    for (int i = 1; i <= w->n; i++)
        while (s_put(w->b, (float)(w->id * 1000000 + i)) < 0)
            ;
    return NULL;
}

/* Two ingest threads and the trainer at once: no torn segment, each
   writer's segments in order, every one seen or evicted. */
static void test_two_ingest_threads(void)
{
    vl_buffer_t *b = vl_buffer_new(16, T, &s_spec, A, 0);
    s_writer_t w[2] = {{b, 1, 20000}, {b, 2, 20000}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        VL_CHECK(pthread_create(&th[i], NULL, s_write, &w[i]) == 0);
    int seen = 0, torn = 0, ordered = 1, last[3] = {0, 0, 0}, slots[4];
    while (seen + (int)vl_buffer_evicted(b) < 40000) {
        int n = vl_buffer_take(b, 1, 50, slots);
        for (int i = 0; i < n; i++) {
            const float *obs = (const float *)vl_buffer_segment(b, slots[i])->obs;
            for (int k = 0; k < (T + 1) * D; k++)
                torn += obs[k] != obs[0];
            int id = (int)obs[0] / 1000000, k = (int)obs[0] % 1000000;
            ordered &= (id == 1 || id == 2) && k > last[id];
            last[id] = k;
        }
        seen += n;
        vl_buffer_release(b, slots, n);
    }
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    VL_CHECK(torn == 0);
    VL_CHECK(ordered);
    VL_CHECK(seen + (int)vl_buffer_evicted(b) == 40000);
    vl_buffer_destroy(&b);
}

int main(void)
{
    VL_RUN(test_fifo_order);
    VL_RUN(test_action_width);
    VL_RUN(test_take_times_out_short);
    VL_RUN(test_full_evicts_oldest);
    VL_RUN(test_taken_slots_are_never_claimed);
    VL_RUN(test_abandon_frees_slot);
    VL_RUN(test_concurrent_ingest_and_train);
    VL_RUN(test_two_ingest_threads);
    return VL_DONE();
}
