// SPDX-License-Identifier: Apache-2.0
namespace Cmr
{
    /// <summary>A native call that hands back one result through an out-parameter.</summary>
    internal delegate void OutCall<THandle, TResult>(THandle handle, out TResult result);

    /// <summary>The same, of a call that takes nothing else.</summary>
    internal delegate void OutCall<TResult>(out TResult result);

    internal static class Results
    {
        /// <summary>The result of `call` on `handle` (a status other than success throws).</summary>
        internal static TResult Of<THandle, TResult>(OutCall<THandle, TResult> call, THandle handle)
        {
            TResult result;
            call(handle, out result);
            return result;
        }

        internal static TResult Of<TResult>(OutCall<TResult> call)
        {
            TResult result;
            call(out result);
            return result;
        }
    }
}
