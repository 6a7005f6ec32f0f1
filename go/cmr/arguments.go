package cmr

import (
	"math"
	"strings"
)

// What a constructor passes to ask for a parameter's spec default
// (CMR_SIZE_DEFAULT and CMR_INT_DEFAULT).
const (
	sizeDefault = math.MaxUint64
	intDefault  = math.MinInt32
)

// checkText refuses a string C would read only part of.
func checkText(value, name string) error {
	if i := strings.IndexByte(value, 0); i >= 0 {
		return errorf(ErrInvalidArgument, "%s %q holds a NUL byte at %d", name, value, i)
	}
	return nil
}
