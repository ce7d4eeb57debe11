/*  vl_specs: one spec per policy, first come, a learner's over actors'. */
#include "vl_specs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct vl_specs_s {
    vl_spec_t *specs;
    uint8_t *by_learner; // [max] 1: a learner declared (or agreed with) specs[i]
    uint32_t count, max;
};

vl_specs_t *vl_specs_new(uint32_t max)
{
    vl_specs_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->max = max;
    self->specs = calloc(max ? max : 1, sizeof *self->specs);
    self->by_learner = calloc(max ? max : 1, 1);
    if (!self->specs || !self->by_learner)
        vl_specs_destroy(&self);
    return self;
}

void vl_specs_destroy(vl_specs_t **self_p)
{
    vl_specs_t *self = self_p ? *self_p : NULL;
    if (!self)
        return;
    free(self->specs);
    free(self->by_learner);
    free(self);
    *self_p = NULL;
}

const vl_spec_t *vl_specs_find(const vl_specs_t *self, const char *policy)
{
    for (uint32_t i = 0; i < self->count; i++)
        if (strcmp(self->specs[i].policy_id, policy) == 0)
            return &self->specs[i];
    return NULL;
}

int vl_specs_declare(vl_specs_t *self, const vl_spec_t *spec, const char *who, int learner,
                     char *why, size_t why_size)
{
    const vl_spec_t *have = vl_specs_find(self, spec->policy_id);
    if (have) {
        uint32_t i = (uint32_t)(have - self->specs);
        int rc = vl_spec_diff(have, spec, who, why, why_size);
        // The learner's word over actors'; and a network named over one left open.
        int replace = !self->by_learner[i] &&
                      ((rc == 1 && learner) || (rc == 0 && have->model_open && !spec->model_open));
        if (replace) {
            self->specs[i] = *spec;
            rc = 0;
        }
        self->by_learner[i] |= rc == 0 && learner;
        return rc;
    }
    if (self->count == self->max) {
        snprintf(why, why_size, "the broker serves %u policies already", self->max);
        return -1;
    }
    self->by_learner[self->count] = (uint8_t)(learner != 0);
    self->specs[self->count++] = *spec;
    return 0;
}

uint32_t vl_specs_count(const vl_specs_t *self)
{
    return self->count;
}

const vl_spec_t *vl_specs_at(const vl_specs_t *self, uint32_t i)
{
    return i < self->count ? &self->specs[i] : NULL;
}
