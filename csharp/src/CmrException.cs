// SPDX-License-Identifier: Apache-2.0
using System;

namespace Cmr
{
    /// <summary>A cmr call failed: the status it returned and cmr's message.</summary>
    public class CmrException : Exception
    {
        public CmrException(Status status, string message) : base(status + ": " + message)
        {
            Status = status;
            CmrMessage = message;
        }

        /// <summary>What went wrong, as cmr's status.</summary>
        public Status Status { get; private set; }

        /// <summary>cmr's own message (cmr_last_error_message), without the status.</summary>
        public string CmrMessage { get; private set; }
    }

    /// <summary>A resource could not serve an allocation (CMR_ERROR_OUT_OF_MEMORY).</summary>
    public class CmrOutOfMemoryException : CmrException
    {
        public CmrOutOfMemoryException(string message) : base(Status.OutOfMemory, message)
        {
        }
    }
}
