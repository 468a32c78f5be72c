/* peruser.c — shared mode: one user's programs together get no more than that user's part when others wait. */
#include "peruser.h"

uint32_t scaf_peruser_groups(const uid_t *uid, uint32_t n, uint32_t *group)
{
    uint32_t ngroups = 0;

    for (uint32_t i = 0; i < n; i++) {
        uint32_t j = 0;
        /* Quadratic in the clients, at most --max-clients: far below a referee turn's other work. */
        while (j < i && uid[j] != uid[i])
            j++;
        group[i] = j < i ? group[j] : ngroups++;
    }
    return ngroups;
}

void scaf_peruser_quotas(uint32_t total, uint32_t ngroups, const uint32_t *demand, const uint32_t *floor_,
                         uint32_t *quota)
{
    uint32_t left = total;

    for (uint32_t g = 0; g < ngroups; g++)
        quota[g] = 0;
    while (left > 0) {
        uint32_t hungry = 0, each;

        for (uint32_t g = 0; g < ngroups; g++)
            hungry += quota[g] < demand[g];
        if (hungry == 0)
            break;
        each = left / hungry;
        for (uint32_t g = 0; g < ngroups && left > 0; g++) {
            uint32_t want = demand[g] - quota[g], give;
            if (quota[g] >= demand[g])
                continue;
            /* Fewer contexts than hungry users: one each, in order, until none is left. */
            give = each == 0 ? 1 : each < want ? each : want;
            quota[g] += give;
            left -= give;
        }
    }
    for (uint32_t g = 0; g < ngroups; g++)
        if (quota[g] < floor_[g])
            quota[g] = floor_[g];
}
