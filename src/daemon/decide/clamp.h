/* clamp.h — what one client's report may claim before the policy sees it (not an installed interface). */
#ifndef SCAFD_CLAMP_H
#define SCAFD_CLAMP_H

#include "referee.h"

#include <stdint.h>

/*
 * Clamps a client's entry in place: the team its efficiency was measured at
 * (p', eff_team) is at most what it could have run, its max_threads (for a
 * fixed team, its team) and the daemon's cpus. Efficiency is already at
 * most 1 (the page decoder and the policy clamp it), so a client's weight is
 * then at most that of a program of its own size that scales perfectly: a
 * claim of 1,024 perfect threads from a 4-thread program weighs what an
 * honest perfect 4-thread program weighs, no more. Pure.
 */
void scaf_referee_clamp(struct scaf_referee_client *c, uint32_t cpus);

#endif
