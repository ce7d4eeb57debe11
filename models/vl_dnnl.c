/*  vl_dnnl: oneDNN's engine, stream and common calls; see vl_dnnl.h. */
#include "vl_dnnl.h"

#include <oneapi/dnnl/dnnl_debug.h>
#include <stdlib.h>

#include "../common/vl_log.h"

vl_dnnl_t *vl_dnnl_new(void)
{
    vl_dnnl_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    if (dnnl_engine_get_count(dnnl_cpu) == 0 ||
        vl_dnnl_ok(dnnl_engine_create(&self->engine, dnnl_cpu, 0), "a CPU engine") != 0 ||
        vl_dnnl_ok(dnnl_stream_create(&self->stream, self->engine, dnnl_stream_default_flags),
                   "a stream") != 0)
        vl_dnnl_destroy(&self);
    return self;
}

void vl_dnnl_destroy(vl_dnnl_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    vl_dnnl_t *self = *self_p;
    if (self->stream)
        dnnl_stream_destroy(self->stream);
    if (self->engine)
        dnnl_engine_destroy(self->engine);
    free(self);
    *self_p = NULL;
}

int vl_dnnl_ok(dnnl_status_t st, const char *what)
{
    if (st == dnnl_success)
        return 0;
    vl_error("vl_dnnl: %s failed: %s", what, dnnl_status2str(st));
    return -1;
}

int vl_dnnl_md(dnnl_memory_desc_t *md, int nd, const dnnl_dim_t *dims, const dnnl_dim_t *strides,
               dnnl_format_tag_t tag)
{
    if (strides)
        return vl_dnnl_ok(dnnl_memory_desc_init_by_strides(md, nd, dims, dnnl_f32, strides),
                          "a strided memory descriptor");
    return vl_dnnl_ok(dnnl_memory_desc_init_by_tag(md, nd, dims, dnnl_f32, tag),
                      "a memory descriptor");
}

const dnnl_memory_desc_t *vl_dnnl_md_of(dnnl_memory_t mem)
{
    const dnnl_memory_desc_t *md = NULL;
    dnnl_memory_get_memory_desc(mem, &md);
    return md;
}

float *vl_dnnl_data(dnnl_memory_t mem)
{
    void *data = NULL;
    dnnl_memory_get_data_handle(mem, &data);
    return data;
}

int vl_dnnl_mem(vl_dnnl_t *self, dnnl_memory_t *mem, const dnnl_memory_desc_t *md, void *handle)
{
    return vl_dnnl_ok(dnnl_memory_create(mem, md, self->engine, handle), "a memory");
}

/* Creates *attr with an output scale (unless 1) and a sum post-op (when
   add). Returns the status; *attr is the caller's to destroy when set. */
static dnnl_status_t s_attr(dnnl_primitive_attr_t *attr, float scale, int add)
{
    dnnl_post_ops_t po = NULL;
    dnnl_status_t st = dnnl_primitive_attr_create(attr);
    if (st == dnnl_success && scale != 1.0f)
        st = dnnl_primitive_attr_set_output_scales(*attr, 1, 0, &scale);
    if (st == dnnl_success && add)
        st = dnnl_post_ops_create(&po);
    if (st == dnnl_success && add)
        st = dnnl_post_ops_append_sum(po, 1.0f);
    if (st == dnnl_success && add)
        st = dnnl_primitive_attr_set_post_ops(*attr, po);
    if (po)
        dnnl_post_ops_destroy(po);
    return st;
}

int vl_dnnl_pd(vl_dnnl_t *self, dnnl_primitive_desc_t *pd, const void *op, float scale, int add,
               const_dnnl_primitive_desc_t hint)
{
    dnnl_primitive_attr_t attr = NULL;
    dnnl_status_t st = s_attr(&attr, scale, add);
    if (st == dnnl_success)
        st = dnnl_primitive_desc_create(pd, op, attr, self->engine, hint);
    if (attr)
        dnnl_primitive_attr_destroy(attr);
    return vl_dnnl_ok(st, "a primitive descriptor");
}

int vl_dnnl_prim(dnnl_primitive_t *prim, const_dnnl_primitive_desc_t pd)
{
    return vl_dnnl_ok(dnnl_primitive_create(prim, pd), "a primitive");
}

int vl_dnnl_reorder(vl_dnnl_t *self, const dnnl_memory_desc_t *from, const dnnl_memory_desc_t *to,
                    float scale, int add, dnnl_primitive_t *prim)
{
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_status_t st = s_attr(&attr, scale, add);
    if (st == dnnl_success)
        st = dnnl_reorder_primitive_desc_create(&pd, from, self->engine, to, self->engine, attr);
    if (st == dnnl_success)
        st = dnnl_primitive_create(prim, pd);
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    if (attr)
        dnnl_primitive_attr_destroy(attr);
    return vl_dnnl_ok(st, "a reorder");
}

int vl_dnnl_exec(vl_dnnl_t *self, dnnl_primitive_t prim, int n, const dnnl_exec_arg_t *args)
{
    if (!prim)
        return 0;
    return vl_dnnl_ok(dnnl_primitive_execute(prim, self->stream, n, args), "an execution");
}

int vl_dnnl_run_reorder(vl_dnnl_t *self, dnnl_primitive_t prim, dnnl_memory_t from,
                        dnnl_memory_t to)
{
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
    return vl_dnnl_exec(self, prim, 2, args);
}

int vl_dnnl_wait(vl_dnnl_t *self)
{
    return vl_dnnl_ok(dnnl_stream_wait(self->stream), "a stream wait");
}

void vl_dnnl_mem_free(dnnl_memory_t *mem)
{
    if (*mem)
        dnnl_memory_destroy(*mem);
    *mem = NULL;
}

void vl_dnnl_prim_free(dnnl_primitive_t *prim)
{
    if (*prim)
        dnnl_primitive_destroy(*prim);
    *prim = NULL;
}
