// SPDX-License-Identifier: Apache-2.0

package cmr_test

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/cmr-project/cmr/go/cmr"
)

// TestSizeGrammar reads the table the C suite reads (tests/sizes.txt, at
// CMR_SIZES_TABLE) through cmr.ParseSize.
func TestSizeGrammar(t *testing.T) {
	table, err := os.ReadFile(os.Getenv("CMR_SIZES_TABLE"))
	mustOK(t, err)
	cases := 0
	for _, line := range strings.Split(string(table), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		expected, text, _ := strings.Cut(line, " ")
		text = strings.ReplaceAll(text, `\t`, "\t")
		cases++
		bytes, err := cmr.ParseSize(text)
		switch expected {
		case "invalid":
			if !errors.Is(err, cmr.ErrInvalidArgument) {
				t.Errorf("%q: %d, %v; want ErrInvalidArgument", text, bytes, err)
			}
		case "overflow":
			if !errors.Is(err, cmr.ErrSizeOverflow) {
				t.Errorf("%q: %d, %v; want ErrSizeOverflow", text, bytes, err)
			}
		default:
			want, _ := strconv.ParseUint(expected, 10, 64)
			if err != nil || bytes != want {
				t.Errorf("%q: %d, %v; want %d", text, bytes, err, want)
			}
		}
	}
	if cases < 60 {
		t.Fatalf("%d cases: the table was not read", cases)
	}
	if _, err := cmr.ParseSize("1\x00GiB"); !errors.Is(err, cmr.ErrInvalidArgument) {
		t.Errorf("a NUL byte: %v; want ErrInvalidArgument", err)
	}
}
