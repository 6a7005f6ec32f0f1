// SPDX-License-Identifier: Apache-2.0
namespace Cmr
{
    /// <summary>cmr statuses as exceptions (the native module calls Check on every status it returns).</summary>
    internal static class Errors
    {
        internal static void Check(int status)
        {
            if (status != (int)Status.Success) throw Failure((Status)status, CmrNative.cmr_last_error_message());
        }

        /// <summary>
        /// The exception for a failed call: the one a C# callback threw
        /// during it, if any (the callback's failure is why the call failed),
        /// else the status's.
        /// </summary>
        internal static System.Exception Failure(Status status, string message)
        {
            NativeCallback.RethrowPending();
            if (status == Status.OutOfMemory) return new CmrOutOfMemoryException(message);
            switch (status)
            {
                case Status.IO:
                    return new CmrIOException(message);
                case Status.InvalidArgument:
                case Status.NullPointer:
                case Status.InvalidRef:
                case Status.UnknownPointer:
                case Status.PropertyMissing:
                    return new CmrArgumentException(status, message);
                case Status.BadAlignment:
                case Status.UnsupportedAlignment:
                case Status.SizeOverflow:
                case Status.UnknownDevice:
                    return new CmrArgumentOutOfRangeException(status, message);
                default:
                    return new CmrException(status, message);
            }
        }
    }
}
