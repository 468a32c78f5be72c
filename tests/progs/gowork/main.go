// gowork — goroutines over a worker pool of GOMAXPROCS, the runtime tests' Go program: with cgo (cgo.go) a dynamic
// executable, which the layer can be preloaded into; built with CGO_ENABLED=0 (static.go) a static one.
//
//	gowork ROUNDS [UNTIL]
//
// Each round hashes 2,000 blocks on as many workers as the runtime's GOMAXPROCS and prints
// `round=R result=X` and `pool=P round=R` (X the same for any P), then `done`.
package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
)

func block(b uint64) uint64 {
	x := b
	for k := uint64(0); k < 200000; k++ {
		x ^= x >> 33
		x *= 0xff51afd7ed558ccd
		x ^= x >> 33
		x += k
	}
	return x & 0xff
}

func round() uint64 {
	workers := runtime.GOMAXPROCS(0)
	jobs := make(chan uint64, 64)
	sums := make([]uint64, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for b := range jobs {
				sums[w] += block(b)
			}
		}(w)
	}
	for b := uint64(0); b < 2000; b++ {
		jobs <- b
	}
	close(jobs)
	wg.Wait()
	var s uint64
	for _, v := range sums {
		s += v
	}
	return s
}

func main() {
	if len(os.Args) < 2 || linked() != 1 {
		fmt.Fprintln(os.Stderr, "usage: gowork ROUNDS [UNTIL]")
		os.Exit(2)
	}
	rounds, err := strconv.Atoi(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "usage: gowork ROUNDS [UNTIL]")
		os.Exit(2)
	}
	until := ""
	if len(os.Args) > 2 {
		until = os.Args[2]
	}
	for r := 0; ; r++ {
		if r >= rounds {
			if until == "" {
				break
			}
			if _, err := os.Stat(until); err == nil {
				break
			}
		}
		fmt.Printf("round=%d result=%d\npool=%d round=%d\n", r, round(), runtime.GOMAXPROCS(0), r)
	}
	fmt.Println("done")
}
