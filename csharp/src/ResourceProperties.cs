// SPDX-License-Identifier: Apache-2.0
namespace Cmr
{
    /// <summary>What a resource's memory is accessible from (CMR_PROPERTY_*).</summary>
    [System.Flags]
    public enum ResourceProperties : uint
    {
        None = 0,
        DeviceAccessible = CmrNative.CMR_PROPERTY_DEVICE_ACCESSIBLE,
        HostAccessible = CmrNative.CMR_PROPERTY_HOST_ACCESSIBLE,
    }
}
