// SPDX-License-Identifier: Apache-2.0
using System;
using System.Runtime.InteropServices;
using System.Text;

namespace Cmr
{
    internal static class Text
    {
        /// <summary>A C string (UTF-8, NUL-terminated) as a C# string.</summary>
        internal static string FromUtf8(IntPtr chars)
        {
            if (chars == IntPtr.Zero) return null;
            int length = 0;
            while (Marshal.ReadByte(chars, length) != 0) length++;
            var bytes = new byte[length];
            Marshal.Copy(chars, bytes, 0, length);
            return Encoding.UTF8.GetString(bytes);
        }
    }
}
