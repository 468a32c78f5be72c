/* peruser.h — shared mode: contexts split between users before each user's part is split between their programs (not an installed interface). */
#ifndef SCAFD_PERUSER_H
#define SCAFD_PERUSER_H

#include <stdint.h>
#include <sys/types.h>

/*
 * Numbers the distinct uids of uid[0..n) in order of first appearance:
 * group[i] is uid[i]'s number. Returns how many there are. Pure.
 */
uint32_t scaf_peruser_groups(const uid_t *uid, uint32_t n, uint32_t *group);

/*
 * Each user's part of `total` contexts, by water-filling: every user gets the
 * same level, except that a user who can use less (demand[g], the contexts
 * their programs could run) gets only that and the rest is shared by the
 * others. Contexts left by the rounding go one each to the users in order.
 * A user never gets fewer than floor_[g] (one context per program: every
 * client runs at least one thread), even when that makes the sum exceed
 * total. Pure; quota[0..ngroups) is the result.
 */
void scaf_peruser_quotas(uint32_t total, uint32_t ngroups, const uint32_t *demand, const uint32_t *floor_,
                         uint32_t *quota);

#endif
