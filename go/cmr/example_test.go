// SPDX-License-Identifier: Apache-2.0

package cmr_test

import (
	"errors"
	"fmt"

	"github.com/cmr-project/cmr/go/cmr"
)

// A stack written as text: every layer is owned by the stack.
func ExampleParseStack() {
	stack, err := cmr.ParseStack("statistics(pool(system, initial_pool_size=1MiB))")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stack.Close()
	address, err := stack.Allocate(1000)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(uint64(address)%cmr.DefaultAlignment == 0, stack.Deallocate(address, 1000))
	// Output: true <nil>
}

// A pool over the system resource, with options for the parameters that have defaults.
func ExampleNewPoolResource() {
	system, err := cmr.NewSystemResource()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer system.Close()
	pool, err := cmr.NewPoolResource(system, cmr.WithInitialPoolSize(1<<20), cmr.WithMaximumPoolSize(4<<20))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer pool.Close()
	_, err = pool.Allocate(8 << 20)
	fmt.Println(errors.Is(err, cmr.ErrOutOfMemory))
	// Output: true
}
