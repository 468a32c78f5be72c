/* call_x86_64.S — calls a function with n integer-class arguments from an array: how a variadic __kmpc_fork_call is passed on. */
/*
 * void scaf_kmpc_call(void *fn, long n, void *const *args)
 *
 * Calls fn(args[0], ..., args[n-1]) under the x86-64 System V ABI, every
 * argument in the INTEGER class: the first six in rdi, rsi, rdx, rcx, r8, r9,
 * the rest on the stack, right to left, with the stack 16-byte aligned at the
 * call. %al = 0: no vector registers carry arguments (the callee may be
 * variadic). The caller's array holds at least six entries (unused ones are
 * read, never passed on as meaningful). The same idea as libomp's own
 * __kmp_invoke_microtask, which calls a microtask with its argv this way.
 */
#if defined(__x86_64__)
        .text
        .globl  scaf_kmpc_call
        .hidden scaf_kmpc_call
        .type   scaf_kmpc_call, @function
        .p2align 4
scaf_kmpc_call:
        .cfi_startproc
        pushq   %rbp
        .cfi_def_cfa_offset 16
        .cfi_offset %rbp, -16
        movq    %rsp, %rbp
        .cfi_def_cfa_register %rbp
        pushq   %r12
        .cfi_offset %r12, -24
        subq    $8, %rsp                /* %rsp is 16-byte aligned again */
        movq    %rdi, %r11              /* fn: r11 is not an argument register */
        movq    %rdx, %r12              /* args, kept across the pushes */
        movq    %rsi, %rcx
        subq    $6, %rcx                /* stack arguments: n - 6 */
        jle     .Lregs
        testq   $1, %rcx
        jz      .Lpush
        subq    $8, %rsp                /* an odd count: pad so that the call sees an aligned stack */
.Lpush:
        pushq   40(%r12,%rcx,8)         /* args[5 + rcx], from args[n-1] down to args[6] */
        decq    %rcx
        jnz     .Lpush
.Lregs:
        movq    (%r12), %rdi
        movq    8(%r12), %rsi
        movq    16(%r12), %rdx
        movq    24(%r12), %rcx
        movq    32(%r12), %r8
        movq    40(%r12), %r9
        xorl    %eax, %eax
        call    *%r11
        movq    -8(%rbp), %r12
        leave
        .cfi_def_cfa %rsp, 8
        ret
        .cfi_endproc
        .size   scaf_kmpc_call, .-scaf_kmpc_call
#endif
        .section .note.GNU-stack, "", @progbits
