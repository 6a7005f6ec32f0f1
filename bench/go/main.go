// SPDX-License-Identifier: Apache-2.0

// cmr-bench-go times one allocate+deallocate pair of 1000 bytes on the
// default stream through pool(system), warm, from Go: the per-call cost of
// the Go binding, to compare with the C peer (cmr-bench-call).
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/cmr-project/cmr/go/cmr"
)

const usage = "usage: cmr-bench-go [--pairs N] [--repeats N]"

func main() {
	// The conventions of every cmr program (tools/cli.h): --help on stdout
	// and exit 0, --version with the library's version and build, bad
	// usage on stderr and exit 2.
	options := flag.NewFlagSet("cmr-bench-go", flag.ContinueOnError)
	pairs := options.Int("pairs", 2_000_000, "allocate+deallocate pairs per repeat")
	repeats := options.Int("repeats", 7, "repeats; the median is printed")
	version := options.Bool("version", false, "the program's version")
	options.Usage = func() {
		fmt.Fprintln(options.Output(), usage)
		options.PrintDefaults()
	}
	switch err := options.Parse(os.Args[1:]); {
	case errors.Is(err, flag.ErrHelp):
		options.SetOutput(os.Stdout)
		options.Usage()
		return
	case err != nil:
		os.Exit(2) // the flag package printed the problem and the usage on stderr
	case options.NArg() > 0:
		fmt.Fprintf(os.Stderr, "cmr-bench-go: unexpected argument %q\n", options.Arg(0))
		options.Usage()
		os.Exit(2)
	}
	if *version {
		build := "host"
		if cmr.BuiltWithCUDA() {
			build = "CUDA"
		}
		fmt.Printf("cmr-bench-go %s (%s build)\n", cmr.Version(), build)
		return
	}
	if err := run(*pairs, *repeats); err != nil {
		fmt.Fprintln(os.Stderr, "cmr-bench-go:", err)
		os.Exit(1)
	}
}

func run(pairs, repeats int) error {
	if pairs < 1 || repeats < 1 {
		return fmt.Errorf("-pairs and -repeats must be at least 1")
	}
	pool, err := cmr.ParseStack("pool(system, initial_pool_size=64MiB)")
	if err != nil {
		return err
	}
	defer pool.Close()
	if _, err := timePairs(pool, pairs); err != nil { // warm up
		return err
	}
	perPair := make([]float64, repeats)
	for i := range perPair {
		elapsed, err := timePairs(pool, pairs)
		if err != nil {
			return err
		}
		perPair[i] = float64(elapsed.Nanoseconds()) / float64(pairs)
	}
	sort.Float64s(perPair)
	fmt.Printf("go: pool(system) 1000 B allocate+deallocate: %.1f ns/pair (median of %d repeats of %d; range %.1f-%.1f)\n",
		perPair[repeats/2], repeats, pairs, perPair[0], perPair[repeats-1])
	return nil
}

func timePairs(r cmr.Resource, pairs int) (time.Duration, error) {
	start := time.Now()
	for i := 0; i < pairs; i++ {
		address, err := r.Allocate(1000)
		if err != nil {
			return 0, err
		}
		if err := r.Deallocate(address, 1000); err != nil {
			return 0, err
		}
	}
	return time.Since(start), nil
}
