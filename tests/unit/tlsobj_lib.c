/* tlsobj_lib.c — the objects test_layer_tlsobj.c loads: two functions, with thread-local storage when built with TLSOBJ_TLS. */
#ifdef TLSOBJ_TLS
_Thread_local int tlsobj_lib_tls;
#define TOUCH() (tlsobj_lib_tls++)
#else
static int tlsobj_lib_count;
#define TOUCH() (tlsobj_lib_count++)
#endif

void tlsobj_lib_a(void *arg);
void tlsobj_lib_b(void *arg);

void tlsobj_lib_a(void *arg)
{
    (void)arg;
    TOUCH();
}

void tlsobj_lib_b(void *arg)
{
    (void)arg;
    TOUCH();
    TOUCH();
}
