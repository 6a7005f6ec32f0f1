// SPDX-License-Identifier: Apache-2.0

package cmr

import "github.com/cmr-project/cmr/go/internal/capi"

// foreignResource is a resource that cmr did not make (a C program's own
// ops table) reached through a ref: it has only the common methods.
type foreignResource struct {
	object
}

// resourceOf is a new value holding a share of its own of the resource
// behind ref, a C copy that it deletes: of the resource's own type where cmr
// made it (its handle, from _from_ref, owns that share), else a
// foreignResource (holding a share retained here).
func resourceOf(ref capi.Cmr_resource_ref) (Resource, error) {
	return resourceOfShare(ref, false)
}

// resourceOfShare is resourceOf for a ref with which the caller took a
// share (cmr_acquire_*) when held: that share is given back, or taken over
// by a foreignResource.
func resourceOfShare(ref capi.Cmr_resource_ref, held bool) (Resource, error) {
	if ref.Swigcptr() == 0 {
		return nil, errorf(ErrOutOfMemory, "no memory for a ref")
	}
	defer capi.DeleteCmr_resource_ref(ref)
	var name string
	err := check(capi.Cmr_ref_type_name(ref, &name))
	wrap, known := wrappers[name]
	if err == nil && !known {
		if !held {
			if err := check(capi.Cmr_ref_retain(ref)); err != nil {
				return nil, err
			}
		}
		return wrapForeign(ref, name)
	}
	if held {
		defer capi.Cmr_ref_release(ref)
	}
	if err != nil {
		return nil, err
	}
	return wrap(ref)
}

// wrapForeign is a new value of a resource cmr did not make, taking over a
// share of it.
func wrapForeign(ref capi.Cmr_resource_ref, name string) (Resource, error) {
	copied := capi.Cmr_go_ref_copy(ref)
	if copied.Swigcptr() == 0 {
		capi.Cmr_ref_release(ref)
		return nil, errorf(ErrOutOfMemory, "no memory for the ref of a %s resource", name)
	}
	r := &foreignResource{}
	release := func() *capi.Failure { return capi.Cmr_ref_release(copied) }
	if err := r.own(copied, name, release); err != nil {
		return nil, err
	}
	return r, nil
}
