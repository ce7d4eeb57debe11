/*  vl_export: `volley export CHECKPOINT|RUN --to FILE.safetensors`, a kept
    policy for other tools. Writes two new files (never over an existing
    one):

      FILE.safetensors  the 12 tensors of volley's MLP in the safetensors
                        format: an 8-byte little-endian header length, a JSON
                        header ({"NAME": {"dtype": "F32", "shape": [...],
                        "data_offsets": [begin, end]}, ..., "__metadata__":
                        {...}}, padded with spaces to a multiple of 8), then
                        every tensor's little-endian float32 data in sorted
                        name order, without gaps. Weights are [out][in]: a
                        layer computes x W^T + b (PyTorch's nn.Linear); each
                        tensor's "shape" has all its dimensions (a conv
                        weight's four: [out, in, kh, kw]). A torch:MOD:FN
                        policy's are its module's own state_dict tensors,
                        its architecture's type "torch" and model the text
                        that names the module (hidden 0).
      FILE.json         the architecture and spec (FILE minus .safetensors,
                        plus .json): format, policy, version, env, the
                        observation's fields and encodings when the env is
                        known, obs_dim, num_actions, hidden, activation,
                        tensor names and their shapes (every dimension).
                        The same JSON text is in the header's
                        __metadata__ under "volley", so the .safetensors
                        alone is enough. */
#ifndef VL_EXPORT_H
#define VL_EXPORT_H

#include <stddef.h>

#include "../envs/vl_env.h"
#include "../learner/vl_kept.h"

/* Writes kept's weights to path as safetensors and its spec beside it
   (see above); env (may be NULL: unknown) gives the observation fields.
   Refuses when either file exists. Returns 0, or -1 with a one-line why
   and no file left behind. */
int vl_export_write(const vl_kept_t *kept, const vl_env_ops_t *env, const char *path, char *why,
                    size_t why_size);

/* Writes the name of the JSON file beside a .safetensors path into
   out[size]. Returns 0, or -1 if it does not fit. */
int vl_export_json_path(const char *path, char *out, size_t size);

/* The `volley export` command. Returns 0, 1 on a failure to write, 2 on
   bad usage or input. */
int vl_export_main(int argc, char **argv);

#endif
