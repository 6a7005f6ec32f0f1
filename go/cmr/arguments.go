// SPDX-License-Identifier: Apache-2.0

package cmr

import (
	"math"
	"strings"
)

// optionalInt is what capi takes for an int option: nil (not given) asks
// for the spec's default; a given value must fit a C int.
func optionalInt(value *int, name string) (*int32, error) {
	if value == nil {
		return nil, nil
	}
	if *value < math.MinInt32 || *value > math.MaxInt32 {
		return nil, errorf(ErrInvalidArgument, "%s %d does not fit a C int", name, *value)
	}
	given := int32(*value)
	return &given, nil
}

// checkText refuses a string C would read only part of.
func checkText(value, name string) error {
	if i := strings.IndexByte(value, 0); i >= 0 {
		return errorf(ErrInvalidArgument, "%s %q holds a NUL byte at %d", name, value, i)
	}
	return nil
}
