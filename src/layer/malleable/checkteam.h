/* checkteam.h — the team scaf check gives a region instance: anywhere in 1..bound, reproducible from the seed. */
#ifndef SCAF_LAYER_CHECKTEAM_H
#define SCAF_LAYER_CHECKTEAM_H

#include <stdint.h>

/* The team of the `index`-th checked region instance of a process run with SCAF_CHECK_SEED `seed`; bound >= 1. */
unsigned scaf_checkteam_pick(uint64_t seed, uint64_t index, unsigned bound);

#endif
