/*  vl_figures: an env's episode figures on the wire and in a learner's
    window. */
#include "vl_figures.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "volley.pb-c.h"

void vl_figures_name(vl_figures_t *f, uint32_t n, const char *const *names)
{
    memset(f, 0, sizeof *f);
    f->n = n < VL_FIGURES_MAX ? n : VL_FIGURES_MAX;
    for (uint32_t k = 0; k < f->n; k++)
        snprintf(f->name[k], VL_FIGURE_NAME_MAX, "%s", names[k]);
}

void vl_figures_add(vl_figures_t *f, const float *row)
{
    for (uint32_t k = 0; k < f->n; k++)
        if (!isnan(row[k]) && f->count[k] < VL_FIGURE_VALUES_MAX)
            f->values[k][f->count[k]++] = row[k];
}

void vl_figures_clear(vl_figures_t *f)
{
    memset(f->count, 0, sizeof f->count);
}

int vl_figure_name_ok(const char *name)
{
    size_t n = 0;
    for (; name && name[n] && n < VL_FIGURE_NAME_MAX; n++)
        if (!isalnum((unsigned char)name[n]) && !strchr("_./-", name[n]))
            return 0;
    return name && n > 0 && n < VL_FIGURE_NAME_MAX;
}

vl_reason_t vl_figures_from_msg(size_t n, Volley__Figure *const *msgs, vl_figures_t *f)
{
    memset(f, 0, sizeof *f);
    if (n > VL_FIGURES_MAX)
        return VL_ETOOBIG;
    for (size_t k = 0; k < n; k++) {
        const Volley__Figure *m = msgs[k];
        if (!vl_figure_name_ok(m->name))
            return VL_EPOLICY;
        for (size_t j = 0; j < k; j++)
            if (strcmp(f->name[j], m->name) == 0)
                return VL_EPOLICY;
        if (m->n_values > VL_FIGURE_VALUES_MAX)
            return VL_ETOOBIG;
        for (size_t i = 0; i < m->n_values; i++)
            if (!isfinite(m->values[i]))
                return VL_ENONFINITE;
        snprintf(f->name[k], VL_FIGURE_NAME_MAX, "%s", m->name);
        memcpy(f->values[k], m->values, m->n_values * sizeof(float));
        f->count[k] = (uint32_t)m->n_values;
    }
    f->n = (uint32_t)n;
    return VL_OK;
}

size_t vl_figures_to_msg(const vl_figures_t *f, Volley__Figure *store, Volley__Figure **msgs)
{
    for (uint32_t k = 0; k < f->n; k++) {
        volley__figure__init(&store[k]);
        store[k].name = (char *)f->name[k];
        store[k].n_values = f->count[k];
        store[k].values = (float *)f->values[k];
        msgs[k] = &store[k];
    }
    return f->n;
}

/* Returns the slot of name in m, making one while there is room; -1 when
   there is none. */
static int s_slot(vl_figure_means_t *m, const char *name)
{
    for (uint32_t k = 0; k < m->n; k++)
        if (strcmp(m->fig[k].name, name) == 0)
            return (int)k;
    if (m->n == VL_FIGURES_KEPT)
        return -1;
    snprintf(m->fig[m->n].name, VL_FIGURE_NAME_MAX, "%s", name);
    return (int)m->n++;
}

void vl_figure_means_add(vl_figure_means_t *m, const vl_figures_t *f)
{
    for (uint32_t k = 0; k < f->n; k++) {
        int s = f->count[k] ? s_slot(m, f->name[k]) : -1;
        for (uint32_t i = 0; s >= 0 && i < f->count[k]; i++) {
            m->fig[s].ring[m->fig[s].next] = f->values[k][i];
            m->fig[s].next = (m->fig[s].next + 1) % VL_FIGURES_WINDOW;
            if (m->fig[s].n < VL_FIGURES_WINDOW)
                m->fig[s].n++;
        }
    }
}

float vl_figure_means_get(const vl_figure_means_t *m, uint32_t k)
{
    double sum = 0;
    for (uint32_t i = 0; i < m->fig[k].n; i++)
        sum += m->fig[k].ring[i];
    return m->fig[k].n ? (float)(sum / m->fig[k].n) : 0.0f;
}
