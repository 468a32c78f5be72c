//go:build !cgo

// static.go — without cgo the executable is static: nothing can be preloaded into it.
package main

func linked() int { return 1 }
