// SPDX-License-Identifier: Apache-2.0

package cmr_test

import (
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/cmr-project/cmr/go/cmr"
)

// Goroutines allocating and freeing at once through one pool on several OS
// threads: every block is their own (what each writes stays), and once
// they are done every byte is back.
func TestThreadsGoroutinesShareAPool(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		runtime.GOMAXPROCS(2)
	}
	base, probe := counted(t)
	pool, err := cmr.NewPoolResource(base, cmr.WithInitialPoolSize(4*MiB))
	mustOK(t, err)
	statistics, err := cmr.NewStatisticsResource(pool)
	mustOK(t, err)
	const goroutines, rounds, live = 8, 2000, 4
	var wait sync.WaitGroup
	failures := make(chan error, goroutines)
	for g := 0; g < goroutines; g++ {
		wait.Add(1)
		go func(mark byte) {
			defer wait.Done()
			failures <- churn(statistics, mark, rounds, live)
		}(byte(g + 1))
	}
	wait.Wait()
	close(failures)
	for err := range failures {
		mustOK(t, err)
	}
	expectOutstanding(t, statistics, 0, 0)
	if total, _ := statistics.AllocationsTotal(); total != goroutines*rounds*live {
		t.Fatalf("%d allocations counted, want %d", total, goroutines*rounds*live)
	}
	for _, r := range []cmr.Resource{statistics, pool} {
		mustOK(t, r.Close())
	}
	expectOutstanding(t, probe, 0, 0)
}

// churn allocates `live` blocks at a time, marks them, checks the marks
// are intact, and frees them, `rounds` times.
func churn(r cmr.Resource, mark byte, rounds, live int) error {
	addresses := make([]uintptr, live)
	for round := 0; round < rounds; round++ {
		for i := range addresses {
			bytes := uint64(256 * (i + 1))
			address, err := r.Allocate(bytes)
			if err != nil {
				return err
			}
			fill(address, bytes, mark)
			addresses[i] = address
		}
		runtime.Gosched()
		for i, address := range addresses {
			bytes := uint64(256 * (i + 1))
			if !holds(address, bytes, mark) {
				return fmt.Errorf("goroutine %d: block %#x was written by another", mark, address)
			}
			if err := r.Deallocate(address, bytes); err != nil {
				return err
			}
		}
	}
	return nil
}
