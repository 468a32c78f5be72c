/* hash.h — counter-based random numbers and order-fixed checksums. */
#ifndef WL_HASH_H
#define WL_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* splitmix64 finaliser: a bijective mix, so mix(i) is a counter-based RNG
 * whose values depend on i alone, never on which thread draws them. */
static inline uint64_t wl_mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* Uniform double in [0, 1) from a 64-bit value (53 high bits). */
static inline double wl_unit(uint64_t x)
{
    return (double)(x >> 11) * 0x1.0p-53;
}

/* Order-dependent checksum step over 64-bit words. */
static inline uint64_t wl_hash_u64(uint64_t h, uint64_t v)
{
    return wl_mix64(h ^ v) + 0x632be59bd9b4e019ULL;
}

static inline uint64_t wl_hash_double(uint64_t h, double d)
{
    uint64_t v;
    memcpy(&v, &d, sizeof v);
    return wl_hash_u64(h, v);
}

/* Checksums of whole arrays, computed serially in index order. */
uint64_t wl_hash_doubles(uint64_t h, const double *a, size_t n);
uint64_t wl_hash_u64s(uint64_t h, const uint64_t *a, size_t n);

#endif
