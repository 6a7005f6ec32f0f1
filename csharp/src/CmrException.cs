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

    /// <summary>
    /// A file could not be written or flushed (CMR_ERROR_IO: a full disk, a closed pipe): a logging
    /// adaptor's log, an arena's dump, cmr's diagnostic log. An IOException, as I/O failures are in
    /// .NET, with cmr's status and message as a CmrException has them.
    /// </summary>
    public class CmrIOException : System.IO.IOException
    {
        public CmrIOException(string message) : base(Status.IO + ": " + message)
        {
            CmrMessage = message;
        }

        /// <summary>Always Status.IO.</summary>
        public Status Status { get { return Status.IO; } }

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
