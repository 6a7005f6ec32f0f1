// SPDX-License-Identifier: Apache-2.0

// A user's program over the Go module: a pool over system memory, one
// allocation, and the library's version.
package main

import (
	"fmt"
	"os"

	"github.com/cmr-project/cmr/go/cmr"
)

// allocateOnce takes 1000 bytes from a pool over system memory and gives them back.
func allocateOnce() error {
	system, err := cmr.NewSystemResource()
	if err != nil {
		return err
	}
	defer system.Close()
	pool, err := cmr.NewPoolResource(system, cmr.WithInitialPoolSize(1<<20))
	if err != nil {
		return err
	}
	defer pool.Close()
	address, err := pool.Allocate(1000)
	if err != nil {
		return err
	}
	return pool.Deallocate(address, 1000)
}

func main() {
	if err := allocateOnce(); err != nil {
		fmt.Fprintln(os.Stderr, "consumer:", err)
		os.Exit(1)
	}
	fmt.Println("cmr", cmr.Version())
}
