/*  vl_catch: the geometry of the Catch environment (vl_catch_env in
    vl_env.h), for tests that read its observations. An observation is the
    screen [VL_CATCH_ROWS][VL_CATCH_COLS] (u2), then VL_CATCH_FLAGS flags
    (u1), then two floats (f32): the ball's row / VL_CATCH_ROWS (0 when no
    ball falls) and the paddle's centre column / VL_CATCH_COLS. */
#ifndef VL_CATCH_H
#define VL_CATCH_H

#define VL_CATCH_ROWS   16 // screen rows; the paddle is on the last
#define VL_CATCH_COLS   16 // screen columns; the first and last are walls
#define VL_CATCH_FLAGS  32 // flag bits after the screen
#define VL_CATCH_BALLS  10 // balls per episode
#define VL_CATCH_PADDLE 3  // paddle width, centred on its column

// where each field starts in the observation
#define VL_CATCH_OFF_FLAGS  (VL_CATCH_ROWS * VL_CATCH_COLS)
#define VL_CATCH_OFF_F32    (VL_CATCH_OFF_FLAGS + VL_CATCH_FLAGS)
#define VL_CATCH_OBS_DIM    (VL_CATCH_OFF_F32 + 2)
#define VL_CATCH_PIXELS_DIM VL_CATCH_OFF_FLAGS // catch-pixels: the screen alone

// what the flags say: bits 0..9 a thermometer of the balls landed so far;
// one of bits 10..12 set when the ball is left of, at or right of the
// paddle's centre; one of bits 16..31 set, the ball's column (none once
// the last ball has landed)
#define VL_CATCH_FLAG_LANDED 0
#define VL_CATCH_FLAG_SIDE   10
#define VL_CATCH_FLAG_COLUMN 16

// the screen's gray levels
#define VL_CATCH_EMPTY 0
#define VL_CATCH_WALL  1
#define VL_CATCH_BAT   2
#define VL_CATCH_BALL  3

// the actions
#define VL_CATCH_LEFT  0
#define VL_CATCH_STAY  1
#define VL_CATCH_RIGHT 2

#endif
