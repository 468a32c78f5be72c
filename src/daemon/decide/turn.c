/* turn.c — one referee turn's decision, pure: each client prepared from what the daemon knows of it, then the referee over that snapshot. */
#include "turn.h"
#include "idle.h"
#include "rigid.h"

#include <errno.h>

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
