// SPDX-License-Identifier: Apache-2.0
namespace Cmr
{
    /// <summary>What a resource's memory is accessible from (CMR_PROPERTY_*).</summary>
    [System.Flags]
    public enum ResourceProperties : uint
    {
        /// <summary>Accessible from neither (no property).</summary>
        None = 0,
        /// <summary>Device code may read and write it.</summary>
        DeviceAccessible = CmrNative.CMR_PROPERTY_DEVICE_ACCESSIBLE,
        /// <summary>Host code may read and write it.</summary>
        HostAccessible = CmrNative.CMR_PROPERTY_HOST_ACCESSIBLE,
    }
}
