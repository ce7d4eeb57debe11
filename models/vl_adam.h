/*  vl_adam: the Adam optimizer (Kingma & Ba) over a flat float array, with
    bias correction, as torch.optim.Adam: beta1 0.9, beta2 0.999, eps 1e-5
    (CleanRL's PPO setting). */
#ifndef VL_ADAM_H
#define VL_ADAM_H

#include <stddef.h>
#include <stdint.h>

typedef struct vl_adam_s vl_adam_t;

/* Creates the optimizer state (moments at zero, step 0) for n parameters.
   Returns NULL when n is 0 or on no memory. Caller destroys. */
vl_adam_t *vl_adam_new(size_t n);

/* Frees the state and nulls the pointer; safe on NULL and twice. */
void vl_adam_destroy(vl_adam_t **self_p);

/* Takes one step: updates the moments from grads [n] and moves params [n]
   against them with learning rate lr. */
void vl_adam_step(vl_adam_t *self, float *params, const float *grads, float lr);

/* Returns the number of steps taken. */
uint64_t vl_adam_steps(const vl_adam_t *self);

/* Returns the bytes vl_adam_save writes: the step count and both moments. */
size_t vl_adam_state_size(const vl_adam_t *self);

/* Writes the state (step count, then m, then v, little-endian) to out. */
void vl_adam_save(const vl_adam_t *self, void *out);

/* Restores a state vl_adam_save wrote for the same n. Returns 0, or -1 if
   size is not vl_adam_state_size (nothing changed). */
int vl_adam_load(vl_adam_t *self, const void *in, size_t size);

#endif
