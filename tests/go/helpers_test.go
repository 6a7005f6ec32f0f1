package cmr_test

import (
	"testing"

	"cmr"
)

// mustSystem is a system resource closed when the test ends.
func mustSystem(t *testing.T) *cmr.SystemResource {
	t.Helper()
	system, err := cmr.NewSystemResource()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { system.Close() })
	return system
}
