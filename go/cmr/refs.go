package cmr

import "cmr/internal/capi"

// foreignResource is a resource that cmr did not make (a C program's own
// ops table) reached through a ref: it has only the common methods.
type foreignResource struct {
	object
}

// resourceOf is a new value holding a share (taken here) of the resource
// behind ref, a C copy that it deletes: of the resource's own type where
// cmr made it, else a foreignResource.
func resourceOf(ref capi.Cmr_resource_ref) (Resource, error) {
	return resourceOfShare(ref, false)
}

// resourceOfShare is resourceOf, taking over the share the caller took
// with ref (cmr_acquire_*) when held; that share is dropped on failure.
func resourceOfShare(ref capi.Cmr_resource_ref, held bool) (Resource, error) {
	if ref.Swigcptr() == 0 {
		return nil, errorf(ErrOutOfMemory, "no memory for a ref")
	}
	defer capi.DeleteCmr_resource_ref(ref)
	var name string
	if err := check(capi.Cmr_ref_type_name(ref, &name)); err != nil {
		if held {
			capi.Cmr_ref_release(ref)
		}
		return nil, err
	}
	if !held {
		if err := check(capi.Cmr_ref_retain(ref)); err != nil {
			return nil, err
		}
	}
	if wrap, known := wrappers[name]; known {
		return wrap(ref)
	}
	return wrapForeign(ref, name)
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
