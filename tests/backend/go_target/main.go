// A Go program for `zxsampler record` as `go build` builds it by default: no GNU build ID, only
// Go's (.note.go.buildid). `go_target [SECONDS]` spins in main.spin for about that long.
package main

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

//go:noinline
func spin(n int) int {
	s := 0
	for i := 0; i < n; i++ {
		s += i * i % 7
	}
	return s
}

// Calls spin until `seconds` have passed. (spin keeps no frame, so a frame-pointer walk from
// inside it skips this caller, as perf's does; main.main is the caller the checks look for.)
//
//go:noinline
func work(seconds float64) int {
	end := time.Now().Add(time.Duration(seconds * float64(time.Second)))
	total := 0
	for time.Now().Before(end) {
		total += spin(100000)
	}
	return total
}

func main() {
	seconds := 1.0
	if len(os.Args) > 1 {
		seconds, _ = strconv.ParseFloat(os.Args[1], 64)
	}
	fmt.Println("go_target:", work(seconds)%10)
}
