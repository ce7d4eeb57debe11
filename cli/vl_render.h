/*  vl_render: an environment's observation as text for a terminal, so a
    person can watch a policy play (`volley eval --render`): CartPole as a
    cart and pole on a track, Catch as its screen, any other env as a line
    of numbers. */
#ifndef VL_RENDER_H
#define VL_RENDER_H

#include <stdio.h>

#include "../envs/vl_env.h"

/* Returns 1 if env is drawn as a picture (CartPole, Catch), 0 if as
   numbers. */
int vl_render_is_picture(const vl_env_ops_t *env);

/* Returns a word for action a of env ("push right", "stay"), or "" when the
   env's actions have no names here. */
const char *vl_render_action(const vl_env_ops_t *env, int32_t a);

/* Writes one frame of obs (env->obs_dim floats) to out under the line
   status: for a picture, from the terminal's top-left corner over the
   previous frame (ANSI cursor home, each line cleared to its end); for
   numbers, one line "status | v0 v1 ..." (the first values). */
void vl_render_frame(FILE *out, const vl_env_ops_t *env, const float *obs, const char *status);

#endif
