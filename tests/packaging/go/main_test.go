// SPDX-License-Identifier: Apache-2.0

package main

import (
	"errors"
	"testing"

	"github.com/cmr-project/cmr/go/cmr"
)

func TestAllocateOnce(t *testing.T) {
	if err := allocateOnce(); err != nil {
		t.Fatal(err)
	}
}

func TestBadStackIsAnError(t *testing.T) {
	_, err := cmr.ParseStack("pool(")
	var failure *cmr.Error
	if !errors.As(err, &failure) {
		t.Fatalf("ParseStack(\"pool(\") gave %v, not a *cmr.Error", err)
	}
}
