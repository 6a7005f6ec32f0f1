package cmr_test

import (
	"errors"
	"strings"
	"testing"

	"cmr"
)

func TestOutOfMemoryFromLimiting(t *testing.T) {
	system := mustSystem(t)
	limiting, err := cmr.NewLimitingResource(system, 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer limiting.Close()
	_, err = limiting.Allocate(8192)
	if !errors.Is(err, cmr.ErrOutOfMemory) {
		t.Fatalf("allocating past the limit: %v, want ErrOutOfMemory", err)
	}
	var cmrErr *cmr.Error
	if !errors.As(err, &cmrErr) || cmrErr.Status != cmr.ErrOutOfMemory || !strings.Contains(cmrErr.Message, "8192") {
		t.Fatalf("error %#v: want the status and cmr's message naming the size", err)
	}
}
