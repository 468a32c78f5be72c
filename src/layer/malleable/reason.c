/* reason.c — writes the reason texts of the malleability verdict, naming the functions and objects it saw. */
#include "reason.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "../core/say.h"
#include "scaf/startrule.h"
#include "../core/verdict.h"

void scaf_reason_describe(void *addr, char *out, size_t len)
{
    Dl_info info;
    const char *obj, *slash;

    if (!addr || !dladdr(addr, &info) || !info.dli_fname) {
        scaf_say_into(out, len, "%p", addr);
        return;
    }
    obj = info.dli_fname[0] ? info.dli_fname : program_invocation_name;
    slash = strrchr(obj, '/');
    obj = slash ? slash + 1 : obj;
    if (info.dli_sname)
        scaf_say_into(out, len, "%s (%s)", info.dli_sname, obj);
    else
        scaf_say_into(out, len, "%s+0x%lx", obj,
                      (unsigned long)((uintptr_t)addr - (uintptr_t)info.dli_fbase));
}

/* What the program's count query was, for reasons. */
static void query_text(const struct scaf_reason_facts *f, char *out, size_t len)
{
    char who[96];

    scaf_reason_describe(f->query_caller, who, sizeof who);
    if (f->query_in_region)
        scaf_say_into(out, len, "region %s read the team size", who);
    else if (f->set_count > 0 && f->set_caller == f->query_caller)
        scaf_say_into(out, len, "omp_set_num_threads(%d) outside regions from %s", f->set_count, who);
    else
        scaf_say_into(out, len, "omp_get_max_threads() outside regions from %s", who);
}

void scaf_reason_for(int why, void *fn, unsigned team, const struct scaf_reason_facts *f, char *out, size_t len)
{
    char what[96], who[160], other[96];

    scaf_reason_describe(fn, what, sizeof what);
    query_text(f, who, sizeof who);
    switch (why) {
    case SCAF_WHY_ESCAPED:
        scaf_say_into(out, len, "region %s read the team size (%u) without thread numbers: watching each region once",
                      what, team);
        return;
    case SCAF_WHY_ESCAPED_TID:
        scaf_say_into(out, len, "a region numbers threads without omp_get_num_threads(); region %s read the team "
                      "size without thread numbers", what);
        return;
    case SCAF_WHY_TID_ONLY:
        scaf_reason_describe(f->tid_only_fn ? f->tid_only_fn : fn, other, sizeof other);
        scaf_say_into(out, len, "region %s numbers threads without omp_get_num_threads(); %s", other, who);
        return;
    case SCAF_WHY_SET_TID: {
        char set_who[96];
        scaf_reason_describe(f->tid_fn ? f->tid_fn : fn, other, sizeof other);
        scaf_reason_describe(f->set_caller, set_who, sizeof set_who);
        scaf_say_into(out, len, "region %s numbers threads; omp_set_num_threads(%d) outside regions from %s", other,
                      f->set_count, set_who);
        return;
    }
    case SCAF_WHY_TLS_CARRIED:
        scaf_say_into(out, len, "region %s depends on thread-local (threadprivate) data left by earlier regions",
                      what);
        return;
    case SCAF_WHY_TLS_UNCHECKED:
        scaf_say_into(out, len, "region %s runs in code with thread-local (threadprivate) data that could not be "
                      "checked", what);
        return;
    case SCAF_WHY_TLS_WAIT:
        scaf_say_into(out, len, "%u site%s held for the thread-local check: region %s runs in code with "
                      "thread-local (threadprivate) data, checking whether it outlives the region", f->tls_held,
                      f->tls_held == 1 ? "" : "s", what);
        return;
    case SCAF_WHY_TLS_HELD:
        scaf_say_into(out, len, "%u site%s still held for the thread-local check (region %s was settled)",
                      f->tls_held, f->tls_held == 1 ? "" : "s", what);
        return;
    case SCAF_WHY_CLEAN:
        if (f->query_caller)
            scaf_say_into(out, len, "%s, but every region seen reads its own team size or none", who);
        else
            scaf_say_into(out, len, "its thread-local data is per-region scratch (region %s checked)", what);
        return;
    case SCAF_WHY_CHECKED:
        scaf_say_into(out, len, "scaf check found it malleable (remembered)");
        return;
    default:
        scaf_say_into(out, len, "region %s", what);
        return;
    }
}

void scaf_reason_count_known(void *caller, int set, int team, char *out, size_t len)
{
    char who[96];

    scaf_reason_describe(caller, who, sizeof who);
    if (set)
        scaf_say_into(out, len, "omp_set_num_threads(%d) outside regions from %s: watching each region once", team,
                      who);
    else
        scaf_say_into(out, len, "omp_get_max_threads() outside regions from %s: watching each region once", who);
}

void scaf_reason_started(unsigned team, unsigned contexts, int keep, unsigned runs, const char *user, char *out,
                         size_t len)
{
    switch (keep) {
    case SCAF_KEEP_USER:
        scaf_say_into(out, len, "started with %u of %u contexts: %s; cannot grow", team, contexts,
                      user && user[0] ? user : "the user said fixed");
        return;
    case SCAF_KEEP_CHECKED:
        scaf_say_into(out, len, "started with %u of %u contexts: remembered fixed by scaf check; cannot grow", team,
                      contexts);
        return;
    default:
        /* scaf run's recall said so, and the daemon met since may remember nothing (it restarted). */
        if (runs == 0)
            scaf_say_into(out, len, "started with %u of %u contexts by scaf run: remembered fixed; cannot grow", team,
                          contexts);
        else
            scaf_say_into(out, len, "started with %u of %u contexts: remembered fixed from %u run%s; cannot grow",
                          team, contexts, runs, runs == 1 ? "" : "s");
        return;
    }
}
