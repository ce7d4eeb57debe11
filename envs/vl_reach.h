/*  vl_reach: the geometry and rewards of the reach environment
    (vl_reach_env in volley/envs.h), and test hooks that set its state. An
    observation is one f32 field of 4: the agent's column and row, then the
    goal's, each divided by VL_REACH_SIZE - 1 (in [0, 1]). An action is
    multi_discrete(3, 3): (dx, dy), each 0, 1, 2 for -1, 0, +1. */
#ifndef VL_REACH_H
#define VL_REACH_H

#include "../include/volley/envs.h"

#define VL_REACH_SIZE      9     // the grid is SIZE x SIZE cells
#define VL_REACH_MAX_STEPS 50    // the time limit: the farthest goal takes 8 steps
#define VL_REACH_GOAL      1.0f  // paid on the step that reaches the goal (terminated)
#define VL_REACH_STEP_COST 0.05f // paid (as -0.05) on every other step

/* The mean return of the shortest path over all starts: a goal d moves away
   (Chebyshev distance, a diagonal move covers both axes) pays 1 - 0.05 (d -
   1), and d averages 4.2148 over the 81 * 80 (start, goal) pairs a reset
   draws from. */
#define VL_REACH_OPTIMAL_RETURN 0.83925926f

/* Sets the agent's cell (s[0], s[1]) and the goal's (s[2], s[3]), columns
   and rows in 0 .. VL_REACH_SIZE - 1, of a state made by vl_reach_env.create,
   and clears its ended flag; the step counter is kept. Returns 0, or -1 and
   changes nothing when a coordinate is off the grid. */
int vl_reach_set_state(void *state, const int s[4]);

/* Copies the agent's cell and the goal's into s, as vl_reach_set_state
   takes them. */
void vl_reach_get_state(const void *state, int s[4]);

#endif
