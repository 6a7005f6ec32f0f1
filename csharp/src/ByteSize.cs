// SPDX-License-Identifier: Apache-2.0
using System;

namespace Cmr
{
    /// <summary>Sizes written as text, by cmr's one grammar (cmr/stack.h, spec/README.md).</summary>
    public static class ByteSize
    {
        /// <summary>
        /// The number of bytes <paramref name="text"/> writes: e.g. "4096", "1.5GiB", "512 mb",
        /// "80%" (of the current device's free memory). A text outside the grammar is a
        /// CmrException (InvalidArgument; SizeOverflow past 2^64 - 1).
        /// </summary>
        public static ulong Parse(string text)
        {
            if (text == null) throw new ArgumentNullException("text");
            if (text.IndexOf('\0') >= 0) throw new ArgumentException("text holds a NUL character, where C would stop", "text");
            ulong bytes;
            CmrNative.cmr_parse_size(text, out bytes);
            return bytes;
        }
    }
}
