// SPDX-License-Identifier: Apache-2.0
using System.Runtime.InteropServices;

namespace Cmr
{
    // Two structs rather than one generic: P/Invoke cannot marshal a generic struct.

    /// <summary>
    /// cmr_optional_size as C lays it out, passed by value to the native
    /// module: a size, or "use the default" (null in C#), which no size can be
    /// mistaken for.
    /// </summary>
    [StructLayout(LayoutKind.Sequential)]
    internal struct OptionalSize
    {
        internal ulong Value;
        internal byte IsSet;

        internal static OptionalSize Of(ulong? value) =>
            new OptionalSize { Value = value.GetValueOrDefault(), IsSet = (byte)(value.HasValue ? 1 : 0) };
    }

    /// <summary>cmr_optional_int as C lays it out: an int, or the default (null).</summary>
    [StructLayout(LayoutKind.Sequential)]
    internal struct OptionalInt
    {
        internal int Value;
        internal byte IsSet;

        internal static OptionalInt Of(int? value) =>
            new OptionalInt { Value = value.GetValueOrDefault(), IsSet = (byte)(value.HasValue ? 1 : 0) };
    }
}
