/* test_layer_site.c — the site table (core/site.c): a record per function, found again by it, and the records of an unloaded object's code started afresh while the others keep what they knew. */
#include "../../src/layer/core/site.h"

#include <stdint.h>

#include "check.h"

typedef void (*region_fn)(void *);

static region_fn at(uintptr_t a)
{
    union {
        uintptr_t a;
        region_fn f;
    } u = {.a = a};
    return u.f;
}

int main(void)
{
    /* Three functions of an object loaded at 0x10000 (code 0x11000-0x12000), one of another object. */
    const uintptr_t in[] = {0x11000, 0x11040, 0x11ff0}, out = 0x50000;
    struct scaf_site *s[3], *other, *again;
    int fresh;

    for (int i = 0; i < 3; i++) {
        fresh = 0;
        s[i] = scaf_site_lookup(at(in[i]), &fresh);
        CHECK(s[i] && fresh, "site %d: not inserted fresh", i);
        atomic_store(&s[i]->verdict, 5);
        atomic_store(&s[i]->instances, 9);
        atomic_store(&s[i]->serial_ns, 1234);
        atomic_store(&s[i]->flags, SCAF_SITE_NOFORK);
    }
    fresh = 0;
    other = scaf_site_lookup(at(out), &fresh);
    CHECK(other && fresh, "the other object's site: not inserted fresh");
    atomic_store(&other->verdict, 7);
    fresh = 0;
    again = scaf_site_lookup(at(in[1]), &fresh);
    CHECK(again == s[1] && !fresh, "a site looked up again is not the same record");
    CHECK(scaf_site_lookup(NULL, &fresh) == NULL, "a NULL function has a site");

    /* The object is unloaded: its three sites know nothing any more; the range's end is not in it. */
    CHECK(scaf_site_forget_range(0x11000, 0x12000) == 3, "forget did not count the object's three sites");
    for (int i = 0; i < 3; i++)
        CHECK(atomic_load(&s[i]->verdict) == 0 && atomic_load(&s[i]->instances) == 0 &&
                  atomic_load(&s[i]->serial_ns) == 0 && atomic_load(&s[i]->flags) == 0,
              "site %d kept what it knew of unloaded code", i);
    CHECK(atomic_load(&other->verdict) == 7, "another object's site was forgotten");
    CHECK(scaf_site_forget_range(0x12000, 0x50000) == 0, "a range with no site in it forgot one");
    /* The same address later, other code: the same record, fresh in content. */
    fresh = 0;
    CHECK(scaf_site_lookup(at(in[0]), &fresh) == s[0] && atomic_load(&s[0]->verdict) == 0,
          "code loaded again at a forgotten address does not start from nothing");
    return check_exit("test_layer_site");
}
