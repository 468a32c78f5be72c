/* hash.c — order-fixed checksums over whole arrays. */
#include "hash.h"

uint64_t wl_hash_doubles(uint64_t h, const double *a, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = wl_hash_double(h, a[i]);
    return h;
}

uint64_t wl_hash_u64s(uint64_t h, const uint64_t *a, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = wl_hash_u64(h, a[i]);
    return h;
}
