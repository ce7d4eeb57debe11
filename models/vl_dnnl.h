/*  vl_dnnl: oneDNN's CPU engine and stream, and the calls every product in
    models/ makes on them, written once: a status checked and logged in one
    line, a plain, tagged or strided memory descriptor, a memory on a
    caller's array, a primitive descriptor whose attributes carry an output
    scale and a sum post-op (the result added into the destination), a
    reorder, an execution. vl_matmul (the linear products) and vl_net_set
    (the conv torso) build on it. One object is used by one thread at a
    time. */
#ifndef VL_DNNL_H
#define VL_DNNL_H

#include <oneapi/dnnl/dnnl.h>

typedef struct {
    dnnl_engine_t engine;
    dnnl_stream_t stream; // in order: a primitive sees its predecessors' results
} vl_dnnl_t;

/* Creates the CPU engine and its stream. Returns NULL (logged) without one. */
vl_dnnl_t *vl_dnnl_new(void);

/* Frees the engine and stream and nulls the pointer; safe on NULL and twice. */
void vl_dnnl_destroy(vl_dnnl_t **self_p);

/* Returns 0 when st is success, else logs "vl_dnnl: WHAT failed: STATUS"
   and returns -1. */
int vl_dnnl_ok(dnnl_status_t st, const char *what);

/* Initializes md as an nd-dim f32 tensor of dims: by strides when strides
   is not NULL, else by tag (dnnl_format_tag_any: the primitive picks).
   Returns 0, or -1 (logged). */
int vl_dnnl_md(dnnl_memory_desc_t *md, int nd, const dnnl_dim_t *dims, const dnnl_dim_t *strides,
               dnnl_format_tag_t tag);

/* Returns the descriptor of mem (owned by mem). */
const dnnl_memory_desc_t *vl_dnnl_md_of(dnnl_memory_t mem);

/* Returns mem's array (NULL when it has none). */
float *vl_dnnl_data(dnnl_memory_t mem);

/* Creates *mem of md on handle: a caller's array, DNNL_MEMORY_NONE (an
   array set per call) or DNNL_MEMORY_ALLOCATE (oneDNN's own). Returns 0 or
   -1 (logged). */
int vl_dnnl_mem(vl_dnnl_t *self, dnnl_memory_t *mem, const dnnl_memory_desc_t *md, void *handle);

/* Creates *pd (caller destroys) for the op descriptor op, its output
   multiplied by scale and, when add is not 0, added into the destination's
   contents. hint: the forward a backward follows, or NULL. Returns 0 or
   -1 (logged). */
int vl_dnnl_pd(vl_dnnl_t *self, dnnl_primitive_desc_t *pd, const void *op, float scale, int add,
               const_dnnl_primitive_desc_t hint);

/* Creates *prim from pd. Returns 0 or -1 (logged). */
int vl_dnnl_prim(dnnl_primitive_t *prim, const_dnnl_primitive_desc_t pd);

/* Creates a reorder from -> to into *prim, scaling by scale and adding into
   to's contents when add is not 0. Returns 0 or -1 (logged). */
int vl_dnnl_reorder(vl_dnnl_t *self, const dnnl_memory_desc_t *from, const dnnl_memory_desc_t *to,
                    float scale, int add, dnnl_primitive_t *prim);

/* Queues prim (nothing when NULL) with n (arg, memory) pairs. Returns 0 or
   -1 (logged). */
int vl_dnnl_exec(vl_dnnl_t *self, dnnl_primitive_t prim, int n, const dnnl_exec_arg_t *args);

/* Queues reorder prim from -> to (nothing when NULL). Returns 0 or -1. */
int vl_dnnl_run_reorder(vl_dnnl_t *self, dnnl_primitive_t prim, dnnl_memory_t from,
                        dnnl_memory_t to);

/* Waits for everything queued. Returns 0 or -1 (logged). */
int vl_dnnl_wait(vl_dnnl_t *self);

/* Destroys *mem / *prim when set and nulls it. */
void vl_dnnl_mem_free(dnnl_memory_t *mem);
void vl_dnnl_prim_free(dnnl_primitive_t *prim);

#endif
