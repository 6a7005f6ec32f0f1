// SPDX-License-Identifier: Apache-2.0

package cmr

import (
	"runtime"

	"github.com/cmr-project/cmr/go/internal/capi"
)

// The per-device resource table, shared with C and every other binding:
// what each device's allocations go through. It holds a share of what it
// stores, so a resource set there may be closed here at once.

// PerDeviceResource is the resource used for device (made on first use:
// the cuda resource of that device, the system resource in the host build),
// as a value of its own type holding a share of its own: Close it.
func PerDeviceResource(device int) (Resource, error) {
	var ref uintptr
	if err := check(capi.Cmr_acquire_per_device_resource_ref(device, &ref)); err != nil {
		return nil, err
	}
	return resourceOfShare(capi.SwigcptrCmr_resource_ref(ref), true) // a share taken with the read
}

// SetPerDeviceResource makes r the resource of device.
func SetPerDeviceResource(device int, r Resource) error {
	ref, err := refOf(r, "resource")
	if err != nil {
		return err
	}
	err = check(capi.Cmr_set_per_device_resource_ref(device, ref))
	runtime.KeepAlive(r) // r's finalizer must not drop its share during the call
	return err
}

// ResetPerDeviceResource makes device use its default resource again.
func ResetPerDeviceResource(device int) error {
	return check(capi.Cmr_reset_per_device_resource_ref(device))
}

// CurrentDeviceResource is PerDeviceResource of the current device.
func CurrentDeviceResource() (Resource, error) {
	var ref uintptr
	if err := check(capi.Cmr_acquire_current_device_resource_ref(&ref)); err != nil {
		return nil, err
	}
	return resourceOfShare(capi.SwigcptrCmr_resource_ref(ref), true) // a share taken with the read
}

// SetCurrentDeviceResource is SetPerDeviceResource of the current device.
func SetCurrentDeviceResource(r Resource) error {
	ref, err := refOf(r, "resource")
	if err != nil {
		return err
	}
	err = check(capi.Cmr_set_current_device_resource_ref(ref))
	runtime.KeepAlive(r)
	return err
}

// ResetCurrentDeviceResource is ResetPerDeviceResource of the current device.
func ResetCurrentDeviceResource() error {
	return check(capi.Cmr_reset_current_device_resource_ref())
}
