/*  vl_figures: an env's own episode figures (PufferLib's score, perf), named
    by its table (include/volley/env.h), carried in the segments of the
    episodes they describe (Segment.figures), and averaged by a learner over
    its last VL_FIGURES_WINDOW values of each, as it averages returns. What
    arrives is hostile: at most VL_FIGURES_MAX figures, names 1..31
    printable characters without spaces and distinct, at most
    VL_FIGURE_VALUES_MAX values a figure, each finite. */
#ifndef VL_FIGURES_H
#define VL_FIGURES_H

#include <stddef.h>
#include <stdint.h>

#include "vl_wire.h"

struct Volley__Figure; // messages/volley.proto's Figure

#define VL_FIGURES_MAX       4   // figures a segment carries (env.h's VL_ENV_FIGURES_MAX)
#define VL_FIGURE_NAME_MAX   32  // bytes of a name, its NUL included
#define VL_FIGURE_VALUES_MAX 64  // values of one figure in one segment
#define VL_FIGURES_WINDOW    100 // values in a learner's mean (vl_returns' window)
#define VL_FIGURES_KEPT      8   // names a learner averages; later ones are not

/* The figures of one segment's episodes. */
typedef struct {
    uint32_t n; // figures named
    char name[VL_FIGURES_MAX][VL_FIGURE_NAME_MAX];
    uint32_t count[VL_FIGURES_MAX]; // values of figure k
    float values[VL_FIGURES_MAX][VL_FIGURE_VALUES_MAX];
} vl_figures_t;

/* Returns 1 if name is a figure's name: 1 .. VL_FIGURE_NAME_MAX - 1 of
   letters, digits and _ . / - (it heads a JSON key, a TensorBoard tag and a
   column of volley top as it is). */
int vl_figure_name_ok(const char *name);

/* Names f's n figures (at most VL_FIGURES_MAX, names checked by the env's
   loader) and empties them. */
void vl_figures_name(vl_figures_t *f, uint32_t n, const char *const *names);

/* Adds one episode's row (f->n values; NaN: none) to f; a value past
   VL_FIGURE_VALUES_MAX in one segment is left out. */
void vl_figures_add(vl_figures_t *f, const float *row);

/* Empties f's values, keeping its names. */
void vl_figures_clear(vl_figures_t *f);

/* Reads n Figure messages into f after checking them. Returns VL_OK, or
   VL_ETOOBIG (too many figures or values), VL_EPOLICY (a name breaking
   the rule or given twice) or VL_ENONFINITE. */
vl_reason_t vl_figures_from_msg(size_t n, struct Volley__Figure *const *msgs, vl_figures_t *f);

/* Points msgs[k] (storage in store) at f's figures; returns how many. */
size_t vl_figures_to_msg(const vl_figures_t *f, struct Volley__Figure *store,
                         struct Volley__Figure **msgs);

/* A learner's means: the last VL_FIGURES_WINDOW values of each name. */
typedef struct {
    uint32_t n;
    struct {
        char name[VL_FIGURE_NAME_MAX];
        float ring[VL_FIGURES_WINDOW];
        uint32_t n, next;
    } fig[VL_FIGURES_KEPT];
} vl_figure_means_t;

/* Adds a segment's figures to m, by name. */
void vl_figure_means_add(vl_figure_means_t *m, const vl_figures_t *f);

/* Returns the mean of figure k (k < m->n), 0 when it holds no value. */
float vl_figure_means_get(const vl_figure_means_t *m, uint32_t k);

#endif
