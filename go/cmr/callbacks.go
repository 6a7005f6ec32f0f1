// SPDX-License-Identifier: Apache-2.0

package cmr

import "github.com/cmr-project/cmr/go/internal/capi"

// What the resources whose C functions are callbacks share; their
// constructors are generated (resources_generated.go). The functions stay
// callable until the Go value is closed; a resource built over it that
// outlives that Close gets out of memory from it (and its frees are
// dropped), so close this one last. A panic in a function does not unwind
// through C: the call that ran it raises it again once back from C
// (internal/capi/callbacks.go).

// makeOver registers callbacks and makes a resource over them: create makes
// the C object under their id, wrap its Go value, whose object objectOf
// gives. The id is unregistered when either fails, else once the value is
// closed.
func makeOver[R any](callbacks *capi.Callbacks, create func(id uintptr, handle *uintptr) *capi.Failure,
	wrap func(handle uintptr) (R, error), objectOf func(R) *object) (R, error) {
	id := capi.Register(callbacks)
	var handle uintptr
	err := check(create(id, &handle))
	var made R
	if err == nil {
		made, err = wrap(handle)
	}
	if err != nil {
		capi.Unregister(id)
		var none R
		return none, err
	}
	o := objectOf(made)
	destroy := o.destroy
	o.destroy = func() *capi.Failure {
		failure := destroy()
		capi.Unregister(id)
		return failure
	}
	return made, nil
}
