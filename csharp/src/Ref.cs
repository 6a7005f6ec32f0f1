// SPDX-License-Identifier: Apache-2.0
using System;
using System.Runtime.InteropServices;

namespace Cmr
{
    /// <summary>cmr_resource_ref as C lays it out: passed by value to the native module.</summary>
    [StructLayout(LayoutKind.Sequential)]
    internal struct Ref
    {
        internal IntPtr Self;
        internal IntPtr Ops;
    }
}
