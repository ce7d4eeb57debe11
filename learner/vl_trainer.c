/*  vl_trainer: recompute, V-trace, PPO minibatches. */
#include "vl_trainer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../common/vl_log.h"
#include "../common/vl_proc.h"
#include "../common/vl_rng.h"
#include "../models/vl_dist.h"
#include "../store/vtrace.h"

struct vl_trainer_s {
    vl_learner_config_t c;
    uint32_t D, A, T, W; // observation floats, head outputs, horizon, action width
    vl_policy_t *policy;
    vl_rng_t rng;                               // minibatch shuffling
    float *obs;                                 // [n][T+1][D]
    float *logits;                              // [n][T+1][A]
    float *values;                              // [n][T+1]
    float *rewards, *dones;                     // [n][T]
    float *final_obs;                           // [n*T][D] final observations of truncations
    float *final_v;                             // [n*T] their values
    uint32_t *final_at;                         // [n*T] the step (i*T + t) each belongs to
    float *boot;                                // [n][T] V(x_final) at truncated steps, else 0
    uint32_t n_final;                           // truncations in this batch
    float *log_rhos, *old_logp, *vs, *adv;      // [n][T]
    float *actions;                             // [n][T][W]
    uint32_t *perm;                             // [n*T]
    float *mb_obs;                              // [minibatch][D]
    float *mb_old_logp, *mb_adv, *mb_vs, *mb_w; // [minibatch]
    const float *seg_w;                         // [n] importance weights of this update, or NULL
    float *mb_actions;                          // [minibatch][W]
    int norm_obs, norm_reward;                  // statistics this trainer keeps
    /* a recurrent policy (S > 0): each segment is a sequence from its stored state */
    uint32_t S, burn;      // floats of the state; steps that only rebuild it (--burn-in)
    float *state0;         // [n][S] each segment's state before step 0
    uint8_t *reset;        // [n][T+1] the state zeroed before step t (an episode began)
    float *obs2, *values2; // [rows2][D], [rows2]: sequences with final observations inserted
    uint8_t *reset2;       // [rows2]
    size_t rows2;          // rows the three above hold
    uint32_t *final_row;   // [n*T] the row of obs2 each final observation went to
    int single_pass;       // one epoch of one minibatch takes its loss through the recompute
    float *mb_state;       // [seqs][S]
    uint8_t *mb_reset;     // [seqs][T]
    float *mb_burn;        // [seqs][burn][D]
};

/* Turns on the policy's statistics when either normalisation is on.
   Returns 0, or -1 on no memory. */
static int s_norm_setup(vl_trainer_t *self)
{
    self->norm_obs = vl_learner_config_norm_obs(&self->c);
    self->norm_reward = vl_learner_config_norm_reward(&self->c);
    if (!self->policy || !(self->norm_obs || self->norm_reward))
        return 0;
    return vl_policy_norm_on(self->policy, self->c.gamma);
}

/* Returns the sequences a minibatch of a recurrent policy holds: whole
   segments, as many as fit in --minibatch samples (at least one). */
static uint32_t s_seqs(const vl_trainer_t *self)
{
    uint32_t seqs = self->c.minibatch / self->T;
    return seqs ? seqs : 1;
}

/* Sizes what a recurrent policy's sequences need. Returns 0, or -1 on no
   memory. */
static int s_recurrent_new(vl_trainer_t *self)
{
    self->S = vl_policy_state_size(self->policy);
    if (!self->S)
        return 0;
    size_t n = self->c.batch_segments, T = self->T, D = self->D, M = s_seqs(self), W = self->W;
    self->burn = self->c.burn_in < T ? self->c.burn_in : 0;
    self->state0 = malloc(n * self->S * sizeof(float));
    self->reset = malloc(n * (T + 1));
    self->final_row = malloc(n * T * sizeof(uint32_t));
    self->mb_state = malloc(M * self->S * sizeof(float));
    self->mb_reset = malloc(M * T);
    self->mb_burn = malloc((M * self->burn + 1) * D * sizeof(float));
    // a minibatch of whole sequences may hold more samples than --minibatch
    float **mb[] = {&self->mb_obs, &self->mb_old_logp, &self->mb_adv, &self->mb_w, &self->mb_vs};
    size_t widths[] = {D, 1, 1, 1, 1};
    int ok = 1;
    for (size_t i = 0; ok && i < sizeof mb / sizeof mb[0]; i++) {
        float *grown = realloc(*mb[i], M * T * widths[i] * sizeof(float));
        ok = grown != NULL;
        if (ok)
            *mb[i] = grown;
    }
    float *acts = ok ? realloc(self->mb_actions, M * T * W * sizeof(float)) : NULL;
    if (acts)
        self->mb_actions = acts;
    return acts && self->state0 && self->reset && self->final_row && self->mb_state &&
                   self->mb_reset && self->mb_burn
               ? 0
               : -1;
}

vl_trainer_t *vl_trainer_new(const vl_learner_config_t *c, uint32_t D)
{
    vl_trainer_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    uint32_t A = vl_action_outputs(&c->action), W = c->action.dims;
    self->c = *c;
    self->D = D;
    self->A = A;
    self->W = W;
    self->T = c->horizon;
    size_t n = c->batch_segments, T = c->horizon, rows = n * (T + 1), N = n * T, M = c->minibatch;
    self->single_pass = 1;
    vl_rng_seed(&self->rng, c->seed ^ VL_TRAINER_RNG_SALT);
    char why[512];
    vl_model_spec_t *spec = NULL;
    if (vl_learner_config_model(c, &spec, NULL, why, sizeof why) != 0 ||
        !(self->policy = vl_policy_new_spec(spec, &c->obs_spec, &c->action, c->seed,
                                            (int)c->threads, why, sizeof why)))
        vl_error("model: %s", why);
    vl_model_spec_destroy(&spec);
    self->obs = malloc(rows * D * sizeof(float));
    self->logits = malloc(rows * A * sizeof(float));
    self->values = malloc(rows * sizeof(float));
    float **arrays[] = {&self->rewards, &self->dones, &self->log_rhos, &self->old_logp,
                        &self->vs,      &self->adv,   &self->boot,     &self->final_v};
    int ok = self->policy && self->obs && self->logits && self->values && s_norm_setup(self) == 0;
    for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++)
        ok &= (*arrays[i] = malloc(N * sizeof(float))) != NULL;
    self->final_obs = malloc(N * D * sizeof(float));
    self->final_at = malloc(N * sizeof(uint32_t));
    ok &= self->final_obs && self->final_at;
    self->actions = malloc(N * W * sizeof(float));
    self->perm = malloc(N * sizeof(uint32_t));
    self->mb_obs = malloc(M * D * sizeof(float));
    self->mb_old_logp = malloc(M * sizeof(float));
    self->mb_adv = malloc(M * sizeof(float));
    self->mb_w = malloc(M * sizeof(float));
    self->mb_vs = malloc(M * sizeof(float));
    self->mb_actions = malloc(M * W * sizeof(float));
    if (!ok || !self->actions || !self->perm || !self->mb_obs || !self->mb_old_logp ||
        !self->mb_adv || !self->mb_vs || !self->mb_actions || !self->mb_w ||
        s_recurrent_new(self) != 0)
        vl_trainer_destroy(&self);
    return self;
}

void vl_trainer_destroy(vl_trainer_t **self_p)
{
    vl_trainer_t *self = self_p ? *self_p : NULL;
    if (!self)
        return;
    vl_policy_destroy(&self->policy);
    void *bufs[] = {
        self->obs,      self->logits,     self->values,    self->rewards,     self->dones,
        self->log_rhos, self->old_logp,   self->vs,        self->adv,         self->actions,
        self->perm,     self->mb_obs,     self->mb_adv,    self->mb_old_logp, self->mb_vs,
        self->mb_w,     self->mb_actions, self->final_obs, self->final_at,    self->boot,
        self->final_v,  self->state0,     self->reset,     self->reset2,      self->obs2,
        self->values2,  self->mb_state,   self->mb_reset,  self->mb_burn,     self->final_row};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        free(bufs[i]);
    free(self);
    *self_p = NULL;
}

vl_rng_t *vl_trainer_rng(vl_trainer_t *self)
{
    return &self->rng;
}

vl_policy_t *vl_trainer_policy(vl_trainer_t *self)
{
    return self->policy;
}

/* Copies the final observations of segment i's truncated steps into the
   batch's, noting the step each belongs to. */
static void s_gather_finals(vl_trainer_t *self, int i, const vl_segment_t *s)
{
    size_t T = self->T, D = self->D;
    uint32_t k = 0;
    for (uint32_t t = 0; t < T && k < s->n_truncated; t++) {
        if (!s->truncated[t])
            continue;
        vl_obs_from_rows(&self->c.obs_spec, 1, s->final_obs + (size_t)k++ * s->obs_row_bytes,
                         self->final_obs + (size_t)self->n_final * D);
        self->final_at[self->n_final++] = (uint32_t)(i * T + t);
    }
}

/* Copies n segments into the contiguous batch arrays, observations as the
   floats the network reads. */
static void s_gather_batch(vl_trainer_t *self, const vl_segment_t *const *segs, int n)
{
    size_t T = self->T, D = self->D;
    self->n_final = 0;
    for (int i = 0; i < n; i++) {
        const vl_segment_t *s = segs[i];
        vl_obs_from_rows(&self->c.obs_spec, T + 1, s->obs, self->obs + i * (T + 1) * D);
        s_gather_finals(self, i, s);
        memcpy(self->rewards + i * T, s->rewards, T * sizeof(float));
        memcpy(self->dones + i * T, s->dones, T * sizeof(float));
        memcpy(self->actions + i * T * self->W, s->actions, T * self->W * sizeof(float));
        memcpy(self->log_rhos + i * T, s->logp, T * sizeof(float)); // behaviour, for now
        if (self->S) { // the state the actor held before step 0; a new episode at t zeroes it
            memcpy(self->state0 + i * self->S, s->state, self->S * sizeof(float));
            self->reset[i * (T + 1)] = 0;
            for (size_t t = 1; t <= T; t++)
                self->reset[i * (T + 1) + t] = s->dones[t - 1] != 0.0f;
        }
    }
}

float vl_trainer_norm_add(vl_norm_t *norm, int norm_obs, int norm_reward,
                          const vl_segment_t *const *segs, int n, uint32_t T, uint32_t D,
                          const float *obs)
{
    for (int i = 0; norm_obs && i < n; i++)
        vl_norm_update_obs(norm, T, obs + (size_t)i * (T + 1) * D);
    if (!norm_reward)
        return 1.0f;
    for (int i = 0; i < n; i++)
        vl_norm_update_returns(norm, (uint64_t)segs[i]->actor_id << 32 | segs[i]->env_id, T,
                               segs[i]->rewards, segs[i]->dones);
    return vl_norm_reward_scale(norm);
}

/* Adds the batch to the statistics the trainer keeps, then scales the
   rewards by the return's std. */
static void s_update_norm(vl_trainer_t *self, const vl_segment_t *const *segs, int n)
{
    vl_norm_t *norm = vl_policy_norm(self->policy);
    if (!norm)
        return;
    float scale = vl_trainer_norm_add(norm, self->norm_obs, self->norm_reward, segs, n, self->T,
                                      self->D, self->obs);
    for (size_t k = 0; self->norm_reward && k < (size_t)n * self->T; k++)
        self->rewards[k] *= scale;
}

/* Grows the rows a recurrent policy's bootstrap sequences take to at least
   rows. Returns 0, or -1 on no memory. */
static int s_reserve_finals(vl_trainer_t *self, size_t rows)
{
    if (rows <= self->rows2)
        return 0;
    float *obs2 = realloc(self->obs2, rows * self->D * sizeof(float));
    if (obs2)
        self->obs2 = obs2;
    float *values2 = realloc(self->values2, rows * sizeof(float));
    if (values2)
        self->values2 = values2;
    uint8_t *reset2 = realloc(self->reset2, rows);
    if (reset2)
        self->reset2 = reset2;
    if (!obs2 || !values2 || !reset2)
        return -1;
    self->rows2 = rows;
    return 0;
}

/* Returns the most truncations one of the batch's segments holds. */
static uint32_t s_most_finals(const vl_trainer_t *self)
{
    uint32_t most = 0, run = 0;
    for (uint32_t k = 0; k < self->n_final; k++) {
        int same = k > 0 && self->final_at[k] / self->T == self->final_at[k - 1] / self->T;
        run = same ? run + 1 : 1;
        most = run > most ? run : most;
    }
    return most;
}

/* Lays segment i out again in L rows from obs2 + i*L: its T+1 rows with
   their resets, each truncated step's final observation inserted after it
   (no reset there, so it reads after its episode's history; the next
   episode's first row still resets), then zero rows. *k is the first final
   observation of segment i and moves past its last; final_row[k] notes
   the row each went to. */
static void s_layout_finals(vl_trainer_t *self, size_t i, size_t L, uint32_t *k)
{
    size_t T = self->T, D = self->D, r = i * L;
    for (size_t t = 0; t <= T; t++, r++) {
        memcpy(self->obs2 + r * D, self->obs + (i * (T + 1) + t) * D, D * sizeof(float));
        self->reset2[r] = self->reset[i * (T + 1) + t];
        if (t < T && *k < self->n_final && self->final_at[*k] == i * T + t) {
            r++;
            memcpy(self->obs2 + r * D, self->final_obs + (size_t)*k * D, D * sizeof(float));
            self->reset2[r] = 0;
            self->final_row[(*k)++] = (uint32_t)r;
        }
    }
    memset(self->obs2 + r * D, 0, ((i + 1) * L - r) * D * sizeof(float));
    memset(self->reset2 + r, 1, (i + 1) * L - r);
}

/* The values of the final observations of truncated episodes, into
   final_v. A memoryless policy reads them alone; a recurrent one after the
   history that led to them: each segment's sequence again with each final
   observation inserted after its step, so that every episode, the second
   of two truncated in one segment included, reads its own history alone.
   Returns 0, or -1 on no memory. */
static int s_final_values(vl_trainer_t *self, int n)
{
    if (!self->S)
        return vl_policy_forward(self->policy, self->n_final, self->final_obs, NULL, self->final_v);
    size_t L = self->T + 1 + s_most_finals(self);
    if (s_reserve_finals(self, (size_t)n * L) != 0)
        return -1;
    uint32_t k = 0;
    for (size_t i = 0; i < (size_t)n; i++)
        s_layout_finals(self, i, L, &k);
    if (vl_policy_forward_seq(self->policy, (uint32_t)n, (uint32_t)L, self->obs2, self->state0,
                              self->reset2, NULL, self->values2, NULL) != 0)
        return -1;
    for (k = 0; k < self->n_final; k++)
        self->final_v[k] = self->values2[self->final_row[k]];
    return 0;
}

/* Writes boot [n][T]: V(final observation) at the truncated steps, 0
   elsewhere. Returns 0, or -1 on no memory. */
static int s_boot(vl_trainer_t *self, int n)
{
    if (s_final_values(self, n) != 0)
        return -1;
    memset(self->boot, 0, (size_t)n * self->T * sizeof(float));
    for (uint32_t k = 0; k < self->n_final; k++)
        self->boot[self->final_at[k]] = self->final_v[k];
    return 0;
}

int vl_trainer_boot(vl_trainer_t *self, const vl_segment_t *const *segs, int n, float *boot)
{
    if (n <= 0 || (uint32_t)n > self->c.batch_segments)
        return -1;
    s_gather_batch(self, segs, n);
    if (s_boot(self, n) != 0)
        return -1;
    memcpy(boot, self->boot, (size_t)n * self->T * sizeof(float));
    return 0;
}

/* Recomputes values and log-probs with the current weights, then V-trace.
   The bootstrap values of truncations come first, so that the recompute is
   the last forward pass (a single pass takes its loss through it).
   Returns the mean |advantage|, or -1 on no memory. */
static float s_targets(vl_trainer_t *self, int n)
{
    size_t T = self->T, A = self->A, W = self->W;
    // a time limit cut some episodes: they bootstrap from their final observations
    if (self->n_final && s_boot(self, n) != 0)
        return -1;
    // a recurrent policy runs each segment from its stored state (a memoryless one, row by row)
    if (vl_policy_forward_seq(self->policy, (uint32_t)n, (uint32_t)(T + 1), self->obs,
                              self->S ? self->state0 : NULL, self->S ? self->reset : NULL,
                              self->logits, self->values, NULL))
        return -1;
    const vl_action_spec_t *space = vl_policy_action(self->policy);
    const float *logstd = vl_policy_logstd(self->policy);
    for (int i = 0; i < n; i++) {
        for (size_t t = 0; t < T; t++) {
            size_t k = i * T + t;
            self->old_logp[k] = vl_dist_logp(space, self->logits + (i * (T + 1) + t) * A, logstd,
                                             self->actions + k * W);
            self->log_rhos[k] = self->old_logp[k] - self->log_rhos[k];
        }
    }
    vl_vtrace_params_t p = {.gamma = self->c.gamma,
                            .lambda = self->c.lambda,
                            .rho_bar = self->c.rho_bar,
                            .c_bar = self->c.c_bar,
                            .pg_rho_bar = self->c.rho_bar};
    if (self->n_final == 0)
        vl_vtrace(&p, n, (int)T, self->values, self->rewards, self->dones, self->log_rhos, self->vs,
                  self->adv);
    else
        vl_vtrace_boot(&p, n, (int)T, self->values, self->rewards, self->dones, self->boot,
                       self->log_rhos, self->vs, self->adv);
    double sum = 0;
    for (size_t k = 0; k < (size_t)n * T; k++)
        sum += fabsf(self->adv[k]);
    return (float)(sum / ((double)n * T));
}

/* Returns how much of the targets' variance the values explain (values
   [n][T+1] before the update, targets [n][T]); NAN when the targets do not
   vary. */
static float s_explained_var(const vl_trainer_t *self, int n)
{
    size_t T = self->T;
    double sy = 0, syy = 0, sd = 0, sdd = 0, N = (double)n * T;
    for (int i = 0; i < n; i++)
        for (size_t t = 0; t < T; t++) {
            double y = self->vs[i * T + t], d = y - self->values[i * (T + 1) + t];
            sy += y;
            syy += y * y;
            sd += d;
            sdd += d * d;
        }
    double var_y = syy / N - (sy / N) * (sy / N), var_d = sdd / N - (sd / N) * (sd / N);
    return var_y > 1e-12 ? (float)(1.0 - var_d / var_y) : NAN;
}

void vl_trainer_set_lr(vl_trainer_t *self, float lr)
{
    self->c.lr = lr;
}

/* Normalises the m advantages of a minibatch to zero mean and unit
   variance. */
static void s_normalise_adv(vl_trainer_t *self, uint32_t m)
{
    double sum = 0, sq = 0;
    for (uint32_t j = 0; j < m; j++) {
        sum += self->mb_adv[j];
        sq += (double)self->mb_adv[j] * self->mb_adv[j];
    }
    double mean = sum / m, var = sq / m - mean * mean;
    float inv = (float)(1.0 / (sqrt(var > 0 ? var : 0) + 1e-8));
    for (uint32_t j = 0; j < m; j++)
        self->mb_adv[j] = (self->mb_adv[j] - (float)mean) * inv;
}

/* Gathers minibatch samples perm[from .. from+m) and normalises their
   advantages to zero mean and unit variance. */
static void s_gather_minibatch(vl_trainer_t *self, uint32_t from, uint32_t m)
{
    size_t T = self->T, D = self->D;
    for (uint32_t j = 0; j < m; j++) {
        uint32_t k = self->perm[from + j];
        size_t row = (k / T) * (T + 1) + k % T; // skip each segment's bootstrap row
        memcpy(self->mb_obs + j * D, self->obs + row * D, D * sizeof(float));
        memcpy(self->mb_actions + j * self->W, self->actions + k * self->W,
               self->W * sizeof(float));
        self->mb_old_logp[j] = self->old_logp[k];
        self->mb_vs[j] = self->vs[k];
        self->mb_adv[j] = self->adv[k];
        self->mb_w[j] = self->seg_w ? self->seg_w[k / T] : 1.0f;
    }
    s_normalise_adv(self, m);
}

/* Gathers the whole segments perm[from .. from+seqs) of a recurrent policy:
   their first burn steps (which only rebuild the state from the stored one)
   into mb_burn, the rest as samples in sequence order, their stored states
   and resets; normalises the samples' advantages. */
static void s_gather_sequences(vl_trainer_t *self, uint32_t from, uint32_t seqs)
{
    size_t T = self->T, D = self->D, W = self->W, K = self->burn, L = T - K;
    uint8_t *breset = self->mb_reset + (size_t)seqs * L; // burn-in resets after the samples'
    for (uint32_t j = 0; j < seqs; j++) {
        size_t i = self->perm[from + j], row = i * (T + 1);
        memcpy(self->mb_state + j * self->S, self->state0 + i * self->S, self->S * sizeof(float));
        memcpy(self->mb_burn + j * K * D, self->obs + row * D, K * D * sizeof(float));
        memcpy(breset + j * K, self->reset + row, K);
        memcpy(self->mb_obs + j * L * D, self->obs + (row + K) * D, L * D * sizeof(float));
        memcpy(self->mb_reset + j * L, self->reset + row + K, L);
        for (size_t t = K; t < T; t++) {
            size_t k = i * T + t, s = j * L + t - K;
            memcpy(self->mb_actions + s * W, self->actions + k * W, W * sizeof(float));
            self->mb_old_logp[s] = self->old_logp[k];
            self->mb_vs[s] = self->vs[k];
            self->mb_adv[s] = self->adv[k];
            self->mb_w[s] = self->seg_w ? self->seg_w[i] : 1.0f;
        }
    }
    s_normalise_adv(self, (uint32_t)(seqs * L));
}

/* One Adam step on a minibatch of whole segments (a recurrent policy):
   burn-in from each stored state, then the loss through the rest. Returns
   the loss, or NAN. */
static float s_sequence_step(vl_trainer_t *self, const vl_loss_params_t *lp, uint32_t from,
                             uint32_t seqs, vl_loss_stats_t *ls)
{
    uint32_t K = self->burn, L = self->T - K;
    s_gather_sequences(self, from, seqs);
    if (K &&
        vl_policy_forward_seq(self->policy, seqs, K, self->mb_burn, self->mb_state,
                              self->mb_reset + (size_t)seqs * L, NULL, NULL, self->mb_state) != 0)
        return NAN;
    vl_policy_zero_grad(self->policy);
    return vl_policy_loss_grad_seq(self->policy, lp, seqs, L, self->mb_obs, self->mb_state,
                                   self->mb_reset, self->mb_actions, self->mb_old_logp,
                                   self->mb_adv, self->mb_vs, self->mb_w, ls);
}

/* Returns 1 when the update is one Adam step on the whole batch: one
   epoch, one minibatch holding every sample (for a recurrent policy every
   segment, none burnt in). That step's forward pass would be the
   recompute's again, the same weights on the same rows. */
static int s_single_pass(const vl_trainer_t *self, int n)
{
    if (!self->single_pass || self->c.epochs != 1 || self->burn)
        return 0;
    return self->S ? s_seqs(self) >= (uint32_t)n : self->c.minibatch >= (uint32_t)n * self->T;
}

/* The single pass: the loss over the recompute's outputs, backward through
   its forward pass, then Adam. Returns the loss, or NAN. */
static float s_single_step(vl_trainer_t *self, const vl_loss_params_t *lp, int n,
                           vl_loss_stats_t *ls)
{
    size_t N = (size_t)n * self->T;
    memcpy(self->mb_adv, self->adv, N * sizeof(float));
    for (size_t k = 0; self->seg_w && k < N; k++)
        self->mb_w[k] = self->seg_w[k / self->T];
    s_normalise_adv(self, (uint32_t)N);
    vl_policy_zero_grad(self->policy);
    return vl_policy_loss_grad_outputs(self->policy, lp, (uint32_t)n, self->T + 1, self->T,
                                       self->logits, self->values, self->actions, self->old_logp,
                                       self->mb_adv, self->vs, self->seg_w ? self->mb_w : NULL, ls);
}

void vl_trainer_set_single_pass(vl_trainer_t *self, int on)
{
    self->single_pass = on != 0;
}

/* Writes each segment's sum of |advantage| into sums[n]. */
static void s_segment_sums(const vl_trainer_t *self, int n, float *sums)
{
    for (int i = 0; i < n; i++) {
        double sum = 0;
        for (uint32_t t = 0; t < self->T; t++)
            sum += fabsf(self->adv[(size_t)i * self->T + t]);
        sums[i] = (float)sum;
    }
}

int vl_trainer_update(vl_trainer_t *self, const vl_segment_t *const *segs, int n,
                      const float *seg_w, float *adv_sums, vl_update_stats_t *stats)
{
    if (n <= 0 || (uint32_t)n > self->c.batch_segments)
        return -1;
    s_gather_batch(self, segs, n);
    s_update_norm(self, segs, n);
    float mean_abs_adv = s_targets(self, n);
    if (mean_abs_adv < 0)
        return -1;
    if (adv_sums)
        s_segment_sums(self, n, adv_sums);
    float explained = stats ? s_explained_var(self, n) : 0.0f;
    self->seg_w = seg_w;
    // samples a minibatch, or for a recurrent policy whole segments
    uint32_t N = self->S ? (uint32_t)n : (uint32_t)n * self->T;
    uint32_t M = self->S ? s_seqs(self) : self->c.minibatch;
    vl_loss_params_t lp = {
        .clip = self->c.clip, .vf_coef = self->c.vf_coef, .ent_coef = self->c.ent_coef};
    vl_update_stats_t acc = {0};
    int steps = 0, single = s_single_pass(self, n);
    for (uint32_t e = 0; e < self->c.epochs; e++) {
        vl_rng_shuffle(&self->rng, N, self->perm);
        memset(&acc, 0, sizeof acc);
        steps = 0;
        for (uint32_t from = 0; from < N; from += M) {
            uint32_t m = N - from < M ? N - from : M;
            vl_loss_stats_t ls;
            float loss;
            if (single) {
                loss = s_single_step(self, &lp, n, &ls);
            } else if (self->S) {
                loss = s_sequence_step(self, &lp, from, m, &ls);
            } else {
                s_gather_minibatch(self, from, m);
                vl_policy_zero_grad(self->policy);
                loss = vl_policy_loss_grad(self->policy, &lp, m, self->mb_obs, self->mb_actions,
                                           self->mb_old_logp, self->mb_adv, self->mb_vs, self->mb_w,
                                           &ls);
            }
            if (isnan(loss))
                return -1;
            vl_policy_adam_step(self->policy, self->c.lr, self->c.max_grad_norm);
            acc.policy_loss += ls.policy_loss;
            acc.value_loss += ls.value_loss;
            acc.entropy += ls.entropy;
            acc.approx_kl += ls.approx_kl;
            acc.clip_frac += ls.clip_frac;
            steps++;
            if (vl_interrupted) // a stop ends the update here: a long one would outlast its grace
                break;
        }
        if (vl_interrupted)
            break;
    }
    if (stats) {
        float k = steps ? 1.0f / (float)steps : 0;
        *stats = (vl_update_stats_t){
            acc.policy_loss * k, acc.value_loss * k, acc.entropy * k, acc.approx_kl * k,
            acc.clip_frac * k,   mean_abs_adv,       explained};
    }
    return 0;
}
