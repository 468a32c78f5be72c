//go:build cgo

// cgo.go — with cgo, the program calls C once: the executable is dynamic, linked with libc as ld.so runs it.
package main

/*
static int gowork_cgo(void) { return 1; }
*/
import "C"

func linked() int { return int(C.gowork_cgo()) }
