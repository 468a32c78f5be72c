/* report.c — formats the SCAF_REPORT line of scaf check and appends it to its file in one write. */
#include "report.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../core/say.h"

static const char *verdict_word(uint32_t v)
{
    return v == SCAF_VERDICT_FIXED ? "fixed" : v == SCAF_VERDICT_MALLEABLE ? "malleable" : "undecided";
}

static const char *source_word(uint32_t s)
{
    static const char *const w[] = {"default", "evidence", "user", "rules", "check"};
    return s < sizeof w / sizeof w[0] ? w[s] : "default";
}

/* A path or name inside quotes: quotes, backslashes and control bytes become '?'. */
static void plain_copy(char *out, size_t len, const char *in)
{
    snprintf(out, len, "%s", in ? in : "");
    for (char *q = out; *q; q++)
        if (*q == '"' || *q == '\\' || (unsigned char)*q < 0x20)
            *q = '?';
}

int scaf_report_format(const struct scaf_report *r, char *buf, size_t len)
{
    char esc[2 * SCAF_REASON_MAX], exe[512], program[128];
    size_t k = 0;
    int n, first = 1;

    for (const char *p = r->reason; *p && k + 2 < sizeof esc; p++) {
        unsigned char c = (unsigned char)*p;
        if (c == '"' || c == '\\')
            esc[k++] = '\\';
        esc[k++] = c < 0x20 ? ' ' : (char)c;
    }
    esc[k] = 0;
    plain_copy(exe, sizeof exe, r->exe);
    plain_copy(program, sizeof program, r->program);
    n = snprintf(buf, len,
                 "{\"pid\":%d,\"exe\":\"%s\",\"key\":\"%016llx\",\"program\":\"%s\",\"verdict\":\"%s\","
                 "\"source\":\"%s\",\"reason\":\"%s\",\"regions\":%llu,\"teams\":[",
                 r->pid, exe, (unsigned long long)r->key, program, verdict_word(r->verdict), source_word(r->source), esc,
                 (unsigned long long)r->regions);
    for (int t = 1; t <= SCAF_MAX_CPUS && n > 0 && n < (int)len - 16; t++)
        if (r->team_bits[(t - 1) / 64] & (1ull << ((t - 1) % 64))) {
            n += snprintf(buf + n, len - (size_t)n, "%s%d", first ? "" : ",", t);
            first = 0;
        }
    if (n <= 0 || n > (int)len - 3)
        return -1;
    n += snprintf(buf + n, len - (size_t)n, "]}\n");
    return n;
}

void scaf_report_write(const char *path, struct scaf_report *r)
{
    char buf[1536], exe[512] = "";
    ssize_t el = readlink("/proc/self/exe", exe, sizeof exe - 1);
    int n, fd;

    exe[el > 0 ? el : 0] = 0;
    r->exe = exe;
    n = scaf_report_format(r, buf, sizeof buf);
    if (n < 0)
        return;
    fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0)
        return;
    /* One write: lines of several processes appending to one file never interleave. */
    if (write(fd, buf, (size_t)n) < 0)
        scaf_layer_log("SCAF_REPORT %s: %s", path, strerror(errno));
    close(fd);
}
