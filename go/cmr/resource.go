// SPDX-License-Identifier: Apache-2.0

package cmr

import (
	"runtime"

	"github.com/cmr-project/cmr/go/internal/capi"
)

// Resource is any cmr memory resource: the resource types of this package
// (PoolResource, StatisticsResource, ...), a Stack, or what the per-device
// table holds. Each value holds a share of its C resource until Close;
// a resource built over it (an adaptor's upstream, a DeviceBuffer's
// resource, the per-device table) holds a share of its own, so closing in
// any order is safe. A Resource must not be closed while another goroutine
// still calls it; the calls themselves are as thread safe as the resource
// (see each type's documentation).
type Resource interface {
	// Allocate returns bytes of memory aligned to 256 bytes, on the
	// default stream. A size of 0 gives address 0.
	Allocate(bytes uint64) (uintptr, error)
	// AllocateOn is Allocate ordered on stream.
	AllocateOn(bytes uint64, stream Stream) (uintptr, error)
	// AllocateAligned is AllocateOn with a power-of-two alignment; an
	// alignment the resource cannot honour is ErrUnsupportedAlignment.
	AllocateAligned(bytes, alignment uint64, stream Stream) (uintptr, error)
	// Deallocate frees what Allocate returned, with the same size.
	Deallocate(address uintptr, bytes uint64) error
	// DeallocateOn frees what AllocateOn returned, ordered on stream.
	DeallocateOn(address uintptr, bytes uint64, stream Stream) error
	// DeallocateAligned frees what AllocateAligned returned.
	DeallocateAligned(address uintptr, bytes, alignment uint64, stream Stream) error
	// AllocateSync returns memory that is ready to use at once.
	AllocateSync(bytes, alignment uint64) (uintptr, error)
	// DeallocateSync frees what AllocateSync returned, once no queued work uses it.
	DeallocateSync(address uintptr, bytes, alignment uint64) error
	// IsEqual tells whether memory from one can be freed through the other.
	IsEqual(other Resource) (bool, error)
	// Properties says where the memory is accessible from.
	Properties() (Properties, error)
	// TypeName is the resource's spec name, e.g. "pool".
	TypeName() (string, error)
	// Close drops this value's share of the resource. Later calls, and a
	// second Close, return ErrDestroyedHandle.
	Close() error

	cref() (capi.Cmr_resource_ref, error)
}

// Properties says where a resource's memory is accessible from.
type Properties uint32

const (
	DeviceAccessible Properties = Properties(capi.CMR_PROPERTY_DEVICE_ACCESSIBLE)
	HostAccessible   Properties = Properties(capi.CMR_PROPERTY_HOST_ACCESSIBLE)
)

// DefaultAlignment is the alignment of Allocate and AllocateOn, in bytes.
const DefaultAlignment uint64 = 256

// object is what every Resource shares: the ref every common call goes
// through, and how its share is dropped.
type object struct {
	ref     capi.Cmr_resource_ref // a copy in C memory; nil once closed
	kind    string                // what it is, for messages
	destroy func() *capi.Failure  // drops the share this value holds
}

// own makes o hold a resource whose ref is ref (a C copy) and whose share
// destroy drops. A ref that could not be copied (no memory) is an error,
// and then the share is dropped at once. o is the first field of the value
// that embeds it (every Resource type here), so it is the value's address:
// its finalizer drops a share that nobody closed, as os.File's closes a
// file. Close is still the rule: a finalizer runs at some garbage
// collection after the value is unreachable, or never.
func (o *object) own(ref capi.Cmr_resource_ref, kind string, destroy func() *capi.Failure) error {
	if ref.Swigcptr() == 0 {
		destroy()
		return errorf(ErrOutOfMemory, "no memory for the ref of a %s resource", kind)
	}
	o.ref, o.kind, o.destroy = ref, kind, destroy
	runtime.SetFinalizer(o, (*object).finalize)
	return nil
}

// finalize is the safety net for a value nobody closed (there is nobody to
// report a failure to).
func (o *object) finalize() {
	if o.ref != nil {
		o.Close()
	}
}

func (o *object) closedError() error {
	return errorf(ErrDestroyedHandle, "the %s resource is closed", o.kind)
}

// live is nil while o is open, else the error a call on it returns.
func (o *object) live() error {
	if o.ref == nil {
		return o.closedError()
	}
	return nil
}

func (o *object) cref() (capi.Cmr_resource_ref, error) {
	if o.ref == nil {
		return nil, o.closedError()
	}
	return o.ref, nil
}

func (o *object) Allocate(bytes uint64) (uintptr, error) {
	return o.AllocateOn(bytes, DefaultStream)
}

// Each call into C through o.ref is followed by runtime.KeepAlive(o): o's
// finalizer must not drop the share while the call is under way.
func (o *object) AllocateOn(bytes uint64, stream Stream) (uintptr, error) {
	if o.ref == nil {
		return 0, o.closedError()
	}
	var address uintptr
	err := check(capi.Cmr_allocate(o.ref, bytes, uintptr(stream), &address))
	runtime.KeepAlive(o)
	return address, err
}

func (o *object) AllocateAligned(bytes, alignment uint64, stream Stream) (uintptr, error) {
	if o.ref == nil {
		return 0, o.closedError()
	}
	var address uintptr
	err := check(capi.Cmr_allocate_aligned(o.ref, bytes, alignment, uintptr(stream), &address))
	runtime.KeepAlive(o)
	return address, err
}

func (o *object) Deallocate(address uintptr, bytes uint64) error {
	return o.DeallocateOn(address, bytes, DefaultStream)
}

func (o *object) DeallocateOn(address uintptr, bytes uint64, stream Stream) error {
	if o.ref == nil {
		return o.closedError()
	}
	err := check(capi.Cmr_deallocate(o.ref, address, bytes, uintptr(stream)))
	runtime.KeepAlive(o)
	return err
}

func (o *object) DeallocateAligned(address uintptr, bytes, alignment uint64, stream Stream) error {
	if o.ref == nil {
		return o.closedError()
	}
	err := check(capi.Cmr_deallocate_aligned(o.ref, address, bytes, alignment, uintptr(stream)))
	runtime.KeepAlive(o)
	return err
}

func (o *object) AllocateSync(bytes, alignment uint64) (uintptr, error) {
	if o.ref == nil {
		return 0, o.closedError()
	}
	var address uintptr
	err := check(capi.Cmr_allocate_sync(o.ref, bytes, alignment, &address))
	runtime.KeepAlive(o)
	return address, err
}

func (o *object) DeallocateSync(address uintptr, bytes, alignment uint64) error {
	if o.ref == nil {
		return o.closedError()
	}
	err := check(capi.Cmr_deallocate_sync(o.ref, address, bytes, alignment))
	runtime.KeepAlive(o)
	return err
}

func (o *object) IsEqual(other Resource) (bool, error) {
	if o.ref == nil {
		return false, o.closedError()
	}
	otherRef, err := refOf(other, "other")
	if err != nil {
		return false, err
	}
	var equal bool
	err = check(capi.Cmr_ref_equal(o.ref, otherRef, &equal))
	runtime.KeepAlive(o)
	runtime.KeepAlive(other)
	return equal, err
}

func (o *object) Properties() (Properties, error) {
	if o.ref == nil {
		return 0, o.closedError()
	}
	var mask uint32
	err := check(capi.Cmr_ref_properties(o.ref, &mask))
	runtime.KeepAlive(o)
	return Properties(mask), err
}

func (o *object) TypeName() (string, error) {
	if o.ref == nil {
		return "", o.closedError()
	}
	var name string
	err := check(capi.Cmr_ref_type_name(o.ref, &name))
	runtime.KeepAlive(o)
	return name, err
}

func (o *object) Close() error {
	if o.ref == nil {
		return o.closedError()
	}
	err := check(o.destroy())
	capi.DeleteCmr_resource_ref(o.ref)
	o.ref, o.destroy = nil, nil
	runtime.SetFinalizer(o, nil)
	return err
}

// refOf is the ref of a resource given as the argument `name`: a nil or
// closed one is an error naming the argument.
func refOf(r Resource, name string) (capi.Cmr_resource_ref, error) {
	if r == nil {
		return nil, errorf(ErrInvalidRef, "%s is nil", name)
	}
	ref, err := r.cref()
	if err != nil {
		return nil, errorf(ErrDestroyedHandle, "%s: %v", name, err.(*Error).Message)
	}
	return ref, nil
}
