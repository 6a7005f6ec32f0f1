namespace Cmr
{
    /// <summary>
    /// The values that ask a resource for the default its spec computes
    /// (CMR_SIZE_DEFAULT, CMR_INT_DEFAULT): each parameter's documentation
    /// says what that default is.
    /// </summary>
    public static class Defaults
    {
        // core.h defines them as SIZE_MAX and INT32_MIN, which SWIG cannot evaluate.
        public const ulong Size = ulong.MaxValue;
        public const int Int = int.MinValue;
    }

    /// <summary>What a resource's memory is accessible from (CMR_PROPERTY_*).</summary>
    [System.Flags]
    public enum ResourceProperties : uint
    {
        None = 0,
        DeviceAccessible = CmrNative.CMR_PROPERTY_DEVICE_ACCESSIBLE,
        HostAccessible = CmrNative.CMR_PROPERTY_HOST_ACCESSIBLE,
    }
}
