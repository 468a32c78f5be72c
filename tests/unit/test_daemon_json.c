/* test_daemon_json.c — the status JSON's buffer and string escaping (process names are arbitrary bytes). */
#include "../../src/daemon/report/jsonbuf.h"

#include <stdio.h>
#include <string.h>

#include "check.h"

static void json_escape(void)
{
    struct scaf_buf b = {0};

    scaf_buf_json_string(&b, "a\"b\\c\n\x01\x7f" "caf\xc3\xa9 \xff\xfe end");
    CHECK(!b.failed && strcmp(b.p, "\"a\\\"b\\\\c\\u000a\\u0001\\u007fcaf\xc3\xa9 \\ufffd\\ufffd end\"") == 0,
          "escaped: %s", b.p);
    scaf_buf_free(&b);
    /* truncated multibyte sequence at the end, overlong and surrogate forms */
    scaf_buf_json_string(&b, "x\xe2\x82");
    CHECK(strcmp(b.p, "\"x\\ufffd\\ufffd\"") == 0, "truncated: %s", b.p);
    scaf_buf_free(&b);
    scaf_buf_json_string(&b, "\xc0\xaf|\xed\xa0\x80");
    CHECK(strcmp(b.p, "\"\\ufffd\\ufffd|\\ufffd\\ufffd\\ufffd\"") == 0, "invalid forms: %s", b.p);
    scaf_buf_free(&b);
    for (int i = 0; i < 2000; i++)
        scaf_buf_printf(&b, "%d,", i);
    CHECK(!b.failed && b.len == strlen(b.p) && strncmp(b.p + b.len - 5, "1999,", 5) == 0, "growth");
    scaf_buf_free(&b);
}

int main(void)
{
    json_escape();
    return check_exit("test_daemon_json");
}
