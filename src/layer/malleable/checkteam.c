/* checkteam.c — picks the seeded team scaf check gives each region instance, so that a failing run can be replayed. */
#include "checkteam.h"

/* splitmix64's finaliser: every bit of the input moves every bit of the output. */
static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

unsigned scaf_checkteam_pick(uint64_t seed, uint64_t index, unsigned bound)
{
    return 1 + (unsigned)(mix64(seed * 0x100000001b3ull ^ mix64(index)) % bound);
}
