// SPDX-License-Identifier: Apache-2.0
using System;
using System.Runtime.InteropServices;

namespace Cmr
{
    /// <summary>
    /// What an out-of-memory observer is told: the resource that ran out
    /// (its kind; IsFrom tells whether it is a given one), its statistics
    /// then, the request, and the message of the CmrOutOfMemoryException the
    /// caller gets.
    /// </summary>
    public sealed class OutOfMemoryEvent
    {
        private readonly IntPtr identity;

        internal OutOfMemoryEvent(string resourceType, IntPtr identity, MemoryStats stats, ulong bytes, ulong alignment,
                                  IntPtr stream, string message)
        {
            ResourceType = resourceType;
            this.identity = identity;
            Stats = stats;
            Bytes = bytes;
            Alignment = alignment;
            Stream = stream;
            Message = message;
        }

        /// <summary>The kind of the resource that ran out ("pool").</summary>
        public string ResourceType { get; }
        /// <summary>Its statistics when it ran out.</summary>
        public MemoryStats Stats { get; }
        /// <summary>The bytes asked for.</summary>
        public ulong Bytes { get; }
        /// <summary>The alignment asked for.</summary>
        public ulong Alignment { get; }
        /// <summary>The stream the request was ordered on.</summary>
        public IntPtr Stream { get; }
        /// <summary>The message the caller's exception carries, which describes the resource's state.</summary>
        public string Message { get; }

        /// <summary>Whether `resource` is the one that ran out.</summary>
        public bool IsFrom(MemoryResource resource)
        {
            return resource.Identity == identity;
        }
    }

    /// <summary>
    /// The process-wide out-of-memory observer (C's cmr_set_oom_observer):
    /// called each time a resource answers an allocation with out of memory,
    /// before the exception is thrown, once per failure (by the innermost
    /// resource that ran out). It runs on the allocating thread, inside the
    /// allocation; it may read statistics but must not allocate from the
    /// resources of that allocation (their locks may be held), and a failure
    /// inside it does not call it again. An exception it throws cannot cross
    /// into C: as with every cmr callback, it is kept and the C# call that
    /// allocated throws it (instead of CmrOutOfMemoryException).
    /// </summary>
    public static class OutOfMemoryObserver
    {
        [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
        private delegate void NativeDelivery(IntPtr typeName, IntPtr identity, IntPtr fields, UIntPtr bytes,
                                             UIntPtr alignment, IntPtr stream, IntPtr message);

        private static readonly object Turn = new object();
        // What C calls: only kept alive while set, never read.
#pragma warning disable 414
        private static NativeDelivery native;
#pragma warning restore 414
        private static Action<OutOfMemoryEvent> observer;
        [ThreadStatic] private static bool delivering;

        /// <summary>
        /// Makes `observe` the observer (null: none). When it returns, the one
        /// before is running on no thread. Calling it from inside an observer
        /// throws InvalidOperationException.
        /// </summary>
        public static void Set(Action<OutOfMemoryEvent> observe)
        {
            if (delivering)
            {
                // C refuses it too; refused here before the lock, which a thread
                // setting the observer may hold while it waits for this one.
                throw new InvalidOperationException("OutOfMemoryObserver.Set: called from inside the observer");
            }
            lock (Turn)
            {
                NativeDelivery next = observe == null ? null : new NativeDelivery(Deliver);
                CmrNative.cmr_cs_set_oom_observer(next == null ? IntPtr.Zero : Marshal.GetFunctionPointerForDelegate(next));
                observer = observe;
                native = next;
            }
        }

        private static void Deliver(IntPtr typeName, IntPtr identity, IntPtr fields, UIntPtr bytes, UIntPtr alignment,
                                    IntPtr stream, IntPtr message)
        {
            Action<OutOfMemoryEvent> current = observer;
            if (current == null) return;
            delivering = true;
            try
            {
                var values = new long[MemoryStats.Length];
                Marshal.Copy(fields, values, 0, values.Length);
                var stats = new MemoryStats(Array.ConvertAll(values, value => unchecked((ulong)value)));
                current(new OutOfMemoryEvent(Text.FromUtf8(typeName), identity, stats, (ulong)bytes, (ulong)alignment,
                                             stream, Text.FromUtf8(message)));
            }
            catch (Exception e)
            {
                NativeCallback.Keep(e);
            }
            finally
            {
                delivering = false;
            }
        }
    }
}
