/* jsonbuf.c — a growable text buffer and JSON string escaping for the status reply and the log. */
#include "jsonbuf.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool reserve(struct scaf_buf *b, size_t more)
{
    size_t cap;
    char *p;

    if (b->failed)
        return false;
    if (b->len + more + 1 <= b->cap)
        return true;
    cap = b->cap ? b->cap : 1024;
    while (cap < b->len + more + 1)
        cap *= 2;
    p = realloc(b->p, cap);
    if (!p) {
        b->failed = true;
        return false;
    }
    b->p = p;
    b->cap = cap;
    return true;
}

void scaf_buf_printf(struct scaf_buf *b, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || !reserve(b, (size_t)n)) {
        b->failed = true;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

/* Length of the valid UTF-8 sequence starting at s (1-4), or 0 if it is not one. */
static size_t utf8_len(const unsigned char *s)
{
    size_t n;
    uint32_t cp;

    if (s[0] < 0x80)
        return 1;
    if ((s[0] & 0xE0) == 0xC0)
        n = 2, cp = s[0] & 0x1F;
    else if ((s[0] & 0xF0) == 0xE0)
        n = 3, cp = s[0] & 0x0F;
    else if ((s[0] & 0xF8) == 0xF0)
        n = 4, cp = s[0] & 0x07;
    else
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    /* Overlong forms, surrogates and values past U+10FFFF are not valid UTF-8. */
    if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10FFFF ||
        (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return n;
}

void scaf_buf_json_string(struct scaf_buf *b, const char *str)
{
    const unsigned char *s = (const unsigned char *)str;

    scaf_buf_printf(b, "\"");
    while (*s) {
        size_t n = utf8_len(s);
        if (*s == '"' || *s == '\\') {
            scaf_buf_printf(b, "\\%c", *s);
        } else if (*s < 0x20 || *s == 0x7F) {
            scaf_buf_printf(b, "\\u%04x", *s);
        } else if (n == 0) {
            /* Process names are arbitrary bytes; JSON must stay valid UTF-8. */
            scaf_buf_printf(b, "\\ufffd");
            n = 1;
        } else {
            if (!reserve(b, n))
                return;
            memcpy(b->p + b->len, s, n);
            b->len += n;
            b->p[b->len] = '\0';
        }
        s += n ? n : 1;
    }
    scaf_buf_printf(b, "\"");
}

void scaf_buf_free(struct scaf_buf *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
    b->failed = false;
}
