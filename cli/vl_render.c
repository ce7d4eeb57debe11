/*  vl_render: text frames of CartPole and Catch, a line of numbers for
    other envs. */
#include "vl_render.h"

#include <math.h>
#include <string.h>

#include "../envs/vl_catch.h"

#define S_TRACK_COLS   61     // columns of CartPole's track, x in [-S_X_LIMIT, S_X_LIMIT]
#define S_X_LIMIT      2.4    // CartPole ends an episode when the cart passes this
#define S_POLE_ROWS    6      // rows the upright pole (1 m) takes
#define S_CELL_ASPECT  2.0    // a terminal cell is about twice as tall as it is wide
#define S_THETA_LIMIT  0.2095 // 12 degrees in radians: CartPole's fall
#define S_NUMBERS_SHOW 12     // values a line of numbers shows
#define S_HOME         "\033[H"
#define S_EOL          "\033[K\n" // clear the rest of the line: a shorter frame leaves no trail
#define S_CLEAR_BELOW  "\033[J"

/* Returns 1 if env is CartPole (the built-in or a plugin of its shape). */
static int s_is_cartpole(const vl_env_ops_t *env)
{
    return env->table == &vl_cartpole_env ||
           (strcmp(env->name, "cartpole") == 0 && env->obs_dim == 4 &&
            env->action.kind == VL_ENV_DISCRETE && env->action.n[0] == 2);
}

/* Returns 1 if env is Catch (the built-in or a plugin of its shape). */
static int s_is_catch(const vl_env_ops_t *env)
{
    return env->table == &vl_catch_env ||
           (strcmp(env->name, "catch") == 0 && env->obs_dim == VL_CATCH_OBS_DIM);
}

int vl_render_is_picture(const vl_env_ops_t *env)
{
    return s_is_cartpole(env) || s_is_catch(env);
}

const char *vl_render_action(const vl_env_ops_t *env, int32_t a)
{
    static const char *const cartpole[] = {"push left", "push right"};
    static const char *const catcher[] = {"left", "stay", "right"}; // VL_CATCH_LEFT..RIGHT
    if (s_is_cartpole(env) && a >= 0 && a < 2)
        return cartpole[a];
    if (s_is_catch(env) && a >= 0 && a < 3)
        return catcher[a];
    return "";
}

/* Returns the track column of cart position x (clamped to the track). */
static int s_column(double x)
{
    double half = (S_TRACK_COLS - 1) / 2.0;
    double c = half + x / S_X_LIMIT * half;
    return !(c >= 0) ? 0 : c > S_TRACK_COLS - 1 ? S_TRACK_COLS - 1 : (int)lround(c);
}

/* Draws the pole's rows above the cart at column cart leaning by theta
   (positive: to the right, as Gymnasium draws it). */
static void s_pole(FILE *out, int cart, double theta)
{
    double cols_per_m = (S_TRACK_COLS - 1) / (2 * S_X_LIMIT);
    double rows_per_m = cols_per_m / S_CELL_ASPECT;
    char glyph = fabs(theta) < 0.04 ? '|' : theta > 0 ? '/' : '\\';
    for (int r = S_POLE_ROWS; r >= 1; r--) {
        char line[S_TRACK_COLS + 1];
        memset(line, ' ', S_TRACK_COLS);
        line[S_TRACK_COLS] = '\0';
        double height = r / rows_per_m;                                // metres above the pivot
        double off = height * tan(theta) * cols_per_m;                 // columns right of the cart
        if (height <= cos(theta) + 1e-9 && fabs(off) < S_TRACK_COLS) { // the pole is 1 m
            int c = cart + (int)lround(off);
            if (c >= 0 && c < S_TRACK_COLS)
                line[c] = glyph;
        }
        fprintf(out, "  %s" S_EOL, line);
    }
}

/* Draws CartPole: the pole, the cart, the track with its limits, state. */
static void s_cartpole(FILE *out, const float *obs)
{
    double x = obs[0], theta = obs[2];
    int cart = s_column(x);
    s_pole(out, cart, theta);
    char line[S_TRACK_COLS + 1];
    memset(line, ' ', S_TRACK_COLS);
    line[S_TRACK_COLS] = '\0';
    for (int c = cart - 3; c <= cart + 3; c++)
        if (c >= 0 && c < S_TRACK_COLS)
            line[c] = c == cart ? 'o' : '#';
    fprintf(out, "  %s" S_EOL, line);
    memset(line, '=', S_TRACK_COLS);
    line[0] = line[S_TRACK_COLS - 1] = '|';
    line[S_TRACK_COLS / 2] = '+';
    fprintf(out, "  %s" S_EOL, line);
    fprintf(out, "  x %+6.3f m   x' %+6.3f m/s   theta %+6.2f deg   theta' %+6.3f rad/s" S_EOL, x,
            (double)obs[1], theta * 180 / M_PI, (double)obs[3]);
    fprintf(out, "  the episode ends at |x| > %.1f m or |theta| > %.0f deg" S_EOL, S_X_LIMIT,
            S_THETA_LIMIT * 180 / M_PI);
}

/* Returns the two characters a Catch screen cell is drawn with. */
static const char *s_cell(float v)
{
    // compared as floats: a plugin's value is never cast out of int's range
    return v == VL_CATCH_WALL ? "##" : v == VL_CATCH_BAT ? "==" : v == VL_CATCH_BALL ? "()" : "  ";
}

/* Draws Catch's screen row by row and the balls landed so far. */
static void s_catch(FILE *out, const float *obs)
{
    for (int r = 0; r < VL_CATCH_ROWS; r++) {
        fputs("  ", out);
        for (int c = 0; c < VL_CATCH_COLS; c++)
            fputs(s_cell(obs[r * VL_CATCH_COLS + c]), out);
        fputs(S_EOL, out);
    }
    int landed = 0;
    for (int i = 0; i < VL_CATCH_BALLS; i++)
        landed += obs[VL_CATCH_OFF_FLAGS + VL_CATCH_FLAG_LANDED + i] > 0.5f;
    fprintf(out, "  balls landed %d of %d" S_EOL, landed, VL_CATCH_BALLS);
}

/* Writes one line: status, then the first values of obs. */
static void s_numbers(FILE *out, const vl_env_ops_t *env, const float *obs, const char *status)
{
    fprintf(out, "%s |", status);
    uint32_t show = env->obs_dim < S_NUMBERS_SHOW ? env->obs_dim : S_NUMBERS_SHOW;
    for (uint32_t i = 0; i < show; i++)
        fprintf(out, " %.4g", (double)obs[i]);
    fprintf(out, "%s\n", show < env->obs_dim ? " ..." : "");
}

void vl_render_frame(FILE *out, const vl_env_ops_t *env, const float *obs, const char *status)
{
    if (!vl_render_is_picture(env)) {
        s_numbers(out, env, obs, status);
        return;
    }
    fprintf(out, S_HOME "  %s" S_EOL S_EOL, status);
    if (s_is_cartpole(env))
        s_cartpole(out, obs);
    else
        s_catch(out, obs);
    fputs(S_CLEAR_BELOW, out);
    fflush(out);
}
