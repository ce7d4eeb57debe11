/*  vl_model_spec: the text that names a policy's network, parsed, bounded,
    checked against the observation it will read, and written back in one
    canonical form.

    Grammar (whitespace between and inside tokens is free):
        spec   = item { item }
        item   = layer | preset
        layer  = "conv(" out "," k "," stride [ "," pad ] ")"
               | "linear(" n ")" | "lstm(" n ")" | "relu" | "tanh"
        preset = "mlp" [ "(" n ")" ] | "cnn"
    or, alone, "torch:" package.module ":" function: a PyTorch module of
    the user's own (python3 -m volley learner --torch --torch-model MOD:FN),
    which only Python runs; such a spec has no layers, and checking it
    (vl_model_spec_check, vl_model_spec_shapes) refuses it with one line
    naming --torch-model, so a C actor or the C engine never builds one.
    A preset expands in place into its layers, so "cnn lstm(256)" is the cnn
    torso followed by an LSTM core:
    - mlp(n) = linear(n) tanh linear(n) tanh, and mlp = mlp(64): the torso of
      volley's policy today (vl_policy, --hidden 64), which runs it twice,
      with separate weights, once before the logits and once before the value;
    - cnn = conv(32,8,4) relu conv(64,4,2) relu conv(64,3,1) relu linear(512)
      relu: the Nature-DQN torso, 84x84 frames to 20x20, 9x9, 7x7; it needs
      frames of at least 36x36. Parsed for observations with a smaller frame
      (vl_model_spec_parse_for), cnn is that torso scaled down: conv(16,3,2)
      relu conv(32,3,1) relu linear(256) relu, 16x16 frames to 7x7 and 5x5
      (at least 7x7). A frame too small for the torso is refused by the
      check, which names the conv whose kernel no longer fits.

    Order: conv layers first, then linear layers, then at most one lstm,
    which is last; an activation follows a conv or linear layer. Each image
    field (ndim 3, channels first) goes through its own copy of the conv
    layers (no padding unless given) and is flattened in (channel, row,
    column) order, as torch's flatten; every other field is taken as its
    values. The results, in the fields' declared order, are concatenated
    into the features the linear layers (or the lstm) read. With no conv
    layers every field is taken as its values. The heads (from the action
    space) and the value head follow the last layer and are not part of the
    spec. */
#ifndef VL_MODEL_SPEC_H
#define VL_MODEL_SPEC_H

#include <stddef.h>
#include <stdint.h>

#include "../messages/vl_obs.h"

#define VL_MODEL_LAYERS_MAX   32         // layers after presets are expanded
#define VL_MODEL_WIDTH_MAX    4096       // conv channels, linear and lstm units
#define VL_MODEL_KERNEL_MAX   32         // conv kernel side
#define VL_MODEL_STRIDE_MAX   32         // conv stride
#define VL_MODEL_PAD_MAX      31         // conv zero padding per side
#define VL_MODEL_TEXT_MAX     4096       // bytes of a spec's text, NUL excluded
#define VL_MODEL_FEATURES_MAX (1u << 24) // values of one conv output or of the features
#define VL_MODEL_PARAMS_MAX   (1u << 25) // floats of the layers' parameters: 128 MiB (x4 in a learner)
// Floats every conv layer of every image field writes for one observation, summed: what
// a forward pass holds per sample (64 MiB) and a peer's spec could otherwise multiply by
// its layers and image fields (32 x 8 outputs of VL_MODEL_FEATURES_MAX each).
#define VL_MODEL_ACTIVATIONS_MAX (1u << 24)
#define VL_MODEL_MLP_WIDTH    64         // mlp's width, as volley's --hidden default
#define VL_MODEL_TORCH_MAX    127        // bytes of a torch spec's MOD:FN, quoted in refusals

typedef enum {
    VL_LAYER_CONV,   // out channels, kernel k x k, stride, pad
    VL_LAYER_LINEAR, // out units
    VL_LAYER_RELU,
    VL_LAYER_TANH,
    VL_LAYER_LSTM, // out = hidden size
    VL_LAYER_KINDS
} vl_layer_kind_t;

typedef struct {
    uint32_t kind;   // a vl_layer_kind_t
    uint32_t out;    // channels (conv) or units (linear, lstm); 0 for an activation
    uint32_t kernel; // conv only, else 0
    uint32_t stride; // conv only, else 0
    uint32_t pad;    // conv only, else 0
} vl_model_layer_t;

typedef struct vl_model_spec_s vl_model_spec_t;

/* What a spec computes on one observation spec (see vl_model_spec_shapes). */
typedef struct {
    uint32_t n_convs;                        // conv layers in the spec
    uint32_t n_images;                       // image fields, each through the conv layers
    uint32_t image_field[VL_OBS_FIELDS_MAX]; // their indices in the observation spec
    // conv_out[i][j]: {channels, rows, cols} after conv layer j on image field i
    uint32_t conv_out[VL_OBS_FIELDS_MAX][VL_MODEL_LAYERS_MAX][3];
    uint32_t field_offset[VL_OBS_FIELDS_MAX];   // where each field starts in the features
    uint32_t field_features[VL_OBS_FIELDS_MAX]; // and how many values it gives
    uint32_t features;                          // concatenated: what the first linear/lstm reads
    uint32_t out;    // width of the last layer's output (features if there is none)
    uint64_t params; // floats of the layers' weights and biases (heads excluded)
    uint64_t activations; // floats of every conv output of every image field, per observation
    uint64_t largest;       // floats of the largest layer weight tensor
    uint32_t largest_layer; // and its layer's index in the spec
    uint32_t tensors;       // the network's: conv.K.J, torso.J, pi, v; or two towers' pi.J, v.J
} vl_model_shapes_t;

/* Parses text (a spec or preset, see above). Returns a new spec (caller
   destroys), or NULL after writing one line to err naming the token and
   what was expected, e.g. "linear(6x4) at column 1: '6x4' is not a number;
   expected linear(n), n 1..4096". */
vl_model_spec_t *vl_model_spec_parse(const char *text, char *err, size_t errlen);

/* As vl_model_spec_parse, for observations obs (NULL: none known): the cnn
   preset becomes its scaled-down torso when an image field of obs has a
   side under 36. */
vl_model_spec_t *vl_model_spec_parse_for(const char *text, const vl_obs_spec_t *obs, char *err,
                                         size_t errlen);

/* Parses the model a policy over obs runs: text when it is not NULL or "",
   else the default, cnn when a field of obs is an image, else mlp(hidden);
   and checks it against obs (a torch spec is not checked: it names a
   module only Python builds). Returns a new spec (caller destroys), or NULL
   after writing one line to err. */
vl_model_spec_t *vl_model_spec_for(const char *text, const vl_obs_spec_t *obs, uint32_t hidden,
                                   char *err, size_t errlen);

/* Returns a new spec of `mlp(width)`: linear(width) tanh linear(width) tanh,
   or NULL on a width of 0 or above VL_MODEL_WIDTH_MAX or no memory. Caller
   destroys. */
vl_model_spec_t *vl_model_spec_mlp(uint32_t width);

/* Frees the spec and nulls the pointer; safe on NULL and twice. */
void vl_model_spec_destroy(vl_model_spec_t **self_p);

/* Writes the canonical text, layers expanded and one space apart, e.g.
   "conv(32,8,4) relu linear(512)" (pad only when not 0): parsing it gives an
   equal spec. Returns its length, or -1 when it does not fit in size bytes
   (buf then holds as much as fits). VL_MODEL_TEXT_MAX + 1 bytes always fit. */
int vl_model_spec_format(const vl_model_spec_t *self, char *buf, size_t size);

/* Returns 1 if two specs have the same layers, else 0. */
int vl_model_spec_equal(const vl_model_spec_t *a, const vl_model_spec_t *b);

/* Returns 1 if the spec has a conv layer, else 0. */
int vl_model_spec_has_conv(const vl_model_spec_t *self);

/* Returns the floats of the recurrent state a policy of this spec carries
   per sequence: 2H for an lstm(H) core (h then c), 0 without one. */
uint32_t vl_model_spec_state_size(const vl_model_spec_t *self);

/* Returns the number of layers (presets expanded), at least 1; 0 for a torch spec. */
uint32_t vl_model_spec_count(const vl_model_spec_t *self);

/* Returns layer i (i < count), owned by the spec. */
const vl_model_layer_t *vl_model_spec_layer(const vl_model_spec_t *self, uint32_t i);

/* Returns the preset text volley uses when no spec is given: "cnn" when an
   observation field has three dimensions, else "mlp". */
const char *vl_model_spec_default(const vl_obs_spec_t *obs);

/* Computes the spec's shapes on obs into *shapes. Returns 0, or -1 after
   writing one line to err: a conv with no image field, a kernel larger than
   its (padded) input, or an output, the conv outputs' sum, features,
   parameter count, a layer's weight (a weights message's largest
   tensor) or the network's tensors (a weights message's most) above its
   bound; *shapes is then unspecified. */
int vl_model_spec_shapes(const vl_model_spec_t *self, const vl_obs_spec_t *obs,
                         vl_model_shapes_t *shapes, char *err, size_t errlen);

/* Checks that the spec can read obs. Returns 0, or -1 after writing why to
   err (as vl_model_spec_shapes). */
int vl_model_spec_check(const vl_model_spec_t *self, const vl_obs_spec_t *obs, char *err,
                        size_t errlen);

#endif
