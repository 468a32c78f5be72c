/* turn.c — one referee turn's decision, pure: each client prepared from what the daemon knows of it, then the referee over that snapshot. */
#include "turn.h"
#include "idle.h"
#include "rigid.h"

#include <errno.h>
#include <stdbool.h>

/* Whether client i's probe (of either kind) began this turn. */
static bool starts(const struct scaf_decide_in *in, const struct scaf_referee_client *prepared, uint32_t i)
{
    const struct scaf_client_state *st = in->clients[i].state;
    uint64_t now = in->turn.now_ns ? in->turn.now_ns : 1;

    if (prepared[i].pol.probe == SCAF_PROBE_SHRINK)
        return true;
    return prepared[i].pol.probe == SCAF_PROBE_GROW && st->probe.probe_since_ns == now;
}

/*
 * One probe at a time in each program. The workers of a pool were set
 * together and are held together, so their probes come due in the same turn:
 * seven workers of a pool on 16 contexts, each held at one thread, probed at
 * once took two threads each and left the OpenMP job beside them one thread
 * for the whole hold, every probe interval. A probe that would begin while
 * another client of its program is being probed (or begins in the same turn,
 * earlier in the order) is put off: its state forgets it began, so it begins
 * as soon as none of its program runs. Programs of one client (group 0, or a
 * group of one) are probed as before: their probes are what learns them.
 */
static void one_probe_per_program(const struct scaf_decide_in *in, struct scaf_referee_client *prepared)
{
    for (uint32_t i = 0; i < in->nclients; i++) {
        uint32_t g = prepared[i].pol.group;
        bool off = false;

        if (!g || !starts(in, prepared, i))
            continue;
        for (uint32_t j = 0; j < in->nclients && !off; j++)
            off = j != i && prepared[j].pol.group == g && prepared[j].pol.probe &&
                  (j < i || !starts(in, prepared, j));
        if (!off)
            continue;
        if (prepared[i].pol.probe == SCAF_PROBE_SHRINK)
            in->clients[i].state->shrink.probe_since_ns = 0;
        else
            in->clients[i].state->probe.probe_since_ns = 0;
        prepared[i].pol.probe = 0;
    }
}

int scaf_decide_turn(const struct scaf_policy *policy, const struct scaf_decide_in *in,
                     struct scaf_referee_client *prepared, struct scaf_referee_scratch *scratch,
                     struct scaf_referee_alloc *out)
{
    struct scaf_referee_snapshot snap;

    if (!policy || !in || !scratch || (in->nclients && (!in->clients || !prepared || !out)))
        goto invalid;
    for (uint32_t i = 0; i < in->nclients; i++) {
        const struct scaf_decide_client *c = &in->clients[i];
        if (!c->in.report || !c->rigid || !c->state || !c->idle)
            goto invalid;
    }
    for (uint32_t i = 0; i < in->nclients; i++) {
        const struct scaf_decide_client *c = &in->clients[i];
        scaf_prepare_client(&c->in, c->rigid, c->state, c->idle, &in->turn, &prepared[i]);
    }
    one_probe_per_program(in, prepared);
    snap = (struct scaf_referee_snapshot){
        .available = in->available,
        .cpus = in->turn.cpus,
        .chunk = in->turn.chunk,
        .nclients = in->nclients,
        .clients = prepared,
        .cpu_list = in->cpu_list,
        .cpu_list_len = in->cpu_list_len,
        .gang = in->gang,
        .kernel_places = in->kernel_places,
        .per_user = in->per_user,
        .min_gain = in->min_gain,
    };
    return scaf_referee_decide(policy, &snap, scratch, out);
invalid:
    errno = EINVAL;
    return -1;
}
