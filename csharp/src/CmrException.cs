// SPDX-License-Identifier: Apache-2.0
using System;

namespace Cmr
{
    /// <summary>
    /// What every exception reporting a cmr status has: the status and cmr's message. Each such
    /// exception is the .NET exception of its kind of failure: <see cref="CmrArgumentException"/>
    /// (an ArgumentException) and <see cref="CmrArgumentOutOfRangeException"/> (an
    /// ArgumentOutOfRangeException) for a bad argument, <see cref="CmrIOException"/> (an
    /// IOException), and <see cref="CmrException"/> for the rest (<see cref="CmrOutOfMemoryException"/>
    /// among them).
    /// </summary>
    public interface ICmrFailure
    {
        /// <summary>What went wrong, as cmr's status.</summary>
        Status Status { get; }

        /// <summary>cmr's own message (cmr_last_error_message), without the status.</summary>
        string CmrMessage { get; }

        /// <summary>"Status: message".</summary>
        string Message { get; }
    }

    /// <summary>A cmr call failed, with a status no .NET exception names (a CUDA error, a call this build does not support): the status and cmr's message.</summary>
    public class CmrException : Exception, ICmrFailure
    {
        /// <summary>A failure with <paramref name="status"/>; <paramref name="message"/> says what was wrong.</summary>
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
    /// cmr refused an argument: a value outside what the call accepts (Status.InvalidArgument), a
    /// null pointer, a pointer the resource did not hand out, an upstream without a property the
    /// resource requires. An ArgumentException, with cmr's status and message.
    /// </summary>
    public class CmrArgumentException : ArgumentException, ICmrFailure
    {
        /// <summary>A refused argument with <paramref name="status"/>; <paramref name="message"/> says what was wrong.</summary>
        public CmrArgumentException(Status status, string message) : base(status + ": " + message)
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
    /// cmr refused an argument outside the range it takes: an alignment that is not a power of
    /// two or that the resource cannot honour, a size that overflows, a device outside the
    /// process's. An ArgumentOutOfRangeException, with cmr's status and message.
    /// </summary>
    public class CmrArgumentOutOfRangeException : ArgumentOutOfRangeException, ICmrFailure
    {
        /// <summary>A refused argument with <paramref name="status"/>; <paramref name="message"/> says what was wrong.</summary>
        public CmrArgumentOutOfRangeException(Status status, string message) : base(null, status + ": " + message)
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
    public class CmrIOException : System.IO.IOException, ICmrFailure
    {
        /// <summary>The failure cmr's <paramref name="message"/> describes.</summary>
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
        /// <summary>The failure cmr's <paramref name="message"/> describes.</summary>
        public CmrOutOfMemoryException(string message) : base(Status.OutOfMemory, message)
        {
        }
    }
}
