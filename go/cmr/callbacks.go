package cmr

import "github.com/cmr-project/cmr/go/internal/capi"

// The resources whose C functions are callbacks, made over Go functions.
// The functions stay callable until the Go value is closed; a resource
// built over it that outlives that Close gets out of memory from it (and
// its frees are dropped), so close this one last. A panic in a function
// does not cross into C: it fails that allocation (or retries no more),
// and Panicked reports it.

// NewCallbackResource is a callback resource over allocate, which returns
// the address of bytes bytes aligned to 256 (0 when it cannot), and
// deallocate, which frees what allocate returned. Both may be called from
// any goroutine.
func NewCallbackResource(allocate func(bytes uint64, stream Stream) uintptr,
	deallocate func(address uintptr, bytes uint64, stream Stream), options ...CallbackOption) (*CallbackResource, error) {
	if allocate == nil || deallocate == nil {
		return nil, errorf(ErrNullPointer, "allocate and deallocate must both be functions, not nil")
	}
	o := callbackOptions{properties: DeviceAccessible}
	for _, option := range options {
		option(&o)
	}
	callbacks := &capi.Callbacks{
		Allocate:   func(bytes uint64, stream uintptr) uintptr { return allocate(bytes, Stream(stream)) },
		Deallocate: func(address uintptr, bytes uint64, stream uintptr) { deallocate(address, bytes, Stream(stream)) },
	}
	r, err := makeOver(callbacks, func(id uintptr, handle *uintptr) *capi.Failure {
		return capi.Cmr_go_callback_resource_create(id, uint(o.properties), handle)
	}, newCallbackResource, func(r *CallbackResource) *object { return &r.object })
	if err != nil {
		return nil, err
	}
	r.callbacks = callbacks
	return r, nil
}

// NewFailureCallbackResource is a failure callback adaptor over upstream:
// when upstream is out of memory for bytes, retry says whether to try again.
func NewFailureCallbackResource(upstream Resource, retry func(bytes uint64) bool) (*FailureCallbackResource, error) {
	upstreamRef, err := refOf(upstream, "upstream")
	if err != nil {
		return nil, err
	}
	if retry == nil {
		return nil, errorf(ErrNullPointer, "retry must be a function, not nil")
	}
	callbacks := &capi.Callbacks{Retry: retry}
	r, err := makeOver(callbacks, func(id uintptr, handle *uintptr) *capi.Failure {
		return capi.Cmr_go_failure_callback_resource_create(upstreamRef, id, handle)
	}, newFailureCallbackResource, func(r *FailureCallbackResource) *object { return &r.object })
	if err != nil {
		return nil, err
	}
	r.upstream, r.callbacks = upstream, callbacks
	return r, nil
}

// Panicked is the value of the first panic of allocate or deallocate, or nil.
func (r *CallbackResource) Panicked() any { return panickedOf(r.callbacks) }

// Panicked is the value of the first panic of retry, or nil.
func (r *FailureCallbackResource) Panicked() any { return panickedOf(r.callbacks) }

// panickedOf is nil for a value that came from a ref (not made in Go).
func panickedOf(callbacks *capi.Callbacks) any {
	if callbacks == nil {
		return nil
	}
	return callbacks.Panicked()
}

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
