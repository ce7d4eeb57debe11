/*  vl_conv_net: the network vl_conv_bench times, as plain arrays every engine
    reads the same way: a model spec's conv and linear layers (each with an
    optional relu) over one image field, activations NCHW, parameters in
    PyTorch's layout (conv weight [out][in][k][k], linear weight [out][in]).

    An engine computes, from the same u8 frames and parameters:
      forward   y = net(frames / 255)                          [batch][out]
      backward  given dy [batch][out]: every layer's weight and bias grads
                (the frames need no grad, so the first layer gets no data
                grad, as in PyTorch when the input does not require one).
    Engines keep their own buffers; grads land in the engine's dw[l], db[l]. */
#ifndef VL_CONV_NET_H
#define VL_CONV_NET_H

#include <stddef.h>
#include <stdint.h>

#define VL_CONV_NET_LAYERS 16

typedef struct {
    int conv;             // 1: conv, 0: linear
    int relu;             // a relu follows
    int cin, hin, win;    // input: channels, rows, cols (linear: cin features, hin = win = 1)
    int cout, hout, wout; // output (linear: cout units, hout = wout = 1)
    int k, stride, pad;   // conv only
} vl_conv_layer_t;

typedef struct {
    int n_layers;
    vl_conv_layer_t layer[VL_CONV_NET_LAYERS];
    float *w[VL_CONV_NET_LAYERS]; // PyTorch's layout; owned
    float *b[VL_CONV_NET_LAYERS];
    int batch;
    const uint8_t *frames; // [batch][c][h][w]: not owned
    const float *dy;       // [batch][out]: the grad the backward starts from; not owned
} vl_conv_net_t;

/* Returns the floats of layer l's input per sample. */
static inline size_t vl_conv_in_size(const vl_conv_layer_t *l)
{
    return (size_t)l->cin * l->hin * l->win;
}

/* Returns the floats of layer l's output per sample. */
static inline size_t vl_conv_out_size(const vl_conv_layer_t *l)
{
    return (size_t)l->cout * l->hout * l->wout;
}

/* Returns the floats of layer l's weight. */
static inline size_t vl_conv_w_size(const vl_conv_layer_t *l)
{
    return l->conv ? (size_t)l->cout * l->cin * l->k * l->k : (size_t)l->cout * l->cin;
}

/* Writes the net's frames scaled to [0, 1] (u8 / 255) into x
   [batch][c][h][w]: the first layer's input, as every engine starts. */
static inline void vl_conv_scale_frames(const vl_conv_net_t *net, float *x)
{
    size_t nx = (size_t)net->batch * vl_conv_in_size(&net->layer[0]);
    for (size_t j = 0; j < nx; j++)
        x[j] = net->frames[j] * (1.0f / 255.0f);
}

/* An engine: an opaque state built for one net and thread count. */
typedef struct vl_conv_engine_s vl_conv_engine_t;

typedef struct {
    const char *name;
    /* Returns a new engine for net on threads threads, or NULL after printing why. */
    vl_conv_engine_t *(*create)(const vl_conv_net_t *net, int threads);
    void (*forward)(vl_conv_engine_t *e);  // y from the net's frames
    void (*backward)(vl_conv_engine_t *e); // grads from the net's dy, after a forward
    void (*conv1)(vl_conv_engine_t *e);    // the first layer's forward alone (frames as float)
    const float *(*output)(vl_conv_engine_t *e);    // [batch][out], after forward
    const float *(*conv1_out)(vl_conv_engine_t *e); // first layer's output, after conv1
    const float *(*dw)(vl_conv_engine_t *e, int l); // after backward
    const float *(*db)(vl_conv_engine_t *e, int l);
    void (*destroy)(vl_conv_engine_t **e_p);
} vl_conv_engine_ops_t;

extern const vl_conv_engine_ops_t vl_conv_blas_ops;
extern const vl_conv_engine_ops_t vl_conv_dnnl_ops;
extern const vl_conv_engine_ops_t vl_conv_dnnl_blocked_ops;

/* Returns the kernel set OpenBLAS chose for this CPU (OPENBLAS_CORETYPE overrides it). */
const char *vl_conv_blas_core(void);

/* Returns the implementation oneDNN chose for layer l's forward (e from vl_conv_dnnl_ops). */
const char *vl_conv_dnnl_impl(const vl_conv_engine_t *e, int l);

#endif
