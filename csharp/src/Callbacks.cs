// SPDX-License-Identifier: Apache-2.0
using System;
using System.Runtime.ExceptionServices;
using System.Runtime.InteropServices;

namespace Cmr
{
    /// <summary>Serves `bytes` on `stream` for a CallbackMemoryResource:
    /// returns the address (aligned to 256 bytes), or IntPtr.Zero when it cannot.</summary>
    public delegate IntPtr AllocateCallback(ulong bytes, IntPtr stream);

    /// <summary>Takes back `bytes` at `ptr`, which AllocateCallback handed out, on `stream`.</summary>
    public delegate void DeallocateCallback(IntPtr ptr, ulong bytes, IntPtr stream);

    /// <summary>Called when the upstream of a FailureCallbackResourceAdaptor is
    /// out of memory for `bytes`: true to try again, false to give up.</summary>
    public delegate bool FailureCallback(ulong bytes);

    /// <summary>
    /// A C# delegate as the C function pointer a resource calls. The native
    /// delegate must live as long as the C resource can call it: every
    /// handle whose C object can reach the resource holds it (OwnedHandle).
    /// An exception the delegate throws cannot cross into C: it is kept on
    /// the thread, the C call sees a failure (no memory, no retry), and the
    /// C# call that ran the callback throws it.
    /// </summary>
    internal sealed class NativeCallback
    {
        [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
        private delegate IntPtr NativeAllocate(UIntPtr bytes, IntPtr stream, IntPtr arg);

        [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
        private delegate void NativeDeallocate(IntPtr ptr, UIntPtr bytes, IntPtr stream, IntPtr arg);

        [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
        [return: MarshalAs(UnmanagedType.U1)]
        private delegate bool NativeFailure(UIntPtr bytes, IntPtr arg);

        [ThreadStatic] private static Exception pending;

        // The function pointer does not keep the delegate: `pin` does, while
        // any handle holds this callback.
        private readonly Delegate native;
        private GCHandle pin;
        private int holders;

        private NativeCallback(Delegate native)
        {
            this.native = native;
        }

        internal IntPtr Pointer
        {
            get { return Marshal.GetFunctionPointerForDelegate(native); }
        }

        /// <summary>One more handle may reach C code that calls this.</summary>
        internal void Hold()
        {
            lock (this)
            {
                if (holders++ == 0) pin = GCHandle.Alloc(native);
            }
        }

        /// <summary>A handle that held this has released its C object.</summary>
        internal void LetGo()
        {
            lock (this)
            {
                if (--holders == 0) pin.Free();
            }
        }

        internal static NativeCallback Of(AllocateCallback callback, string name)
        {
            if (callback == null) throw new ArgumentNullException(name);
            return new NativeCallback(new NativeAllocate((bytes, stream, arg) =>
            {
                try
                {
                    return callback((ulong)bytes, stream);
                }
                catch (Exception e)
                {
                    Keep(e);
                    return IntPtr.Zero;
                }
            }));
        }

        internal static NativeCallback Of(DeallocateCallback callback, string name)
        {
            if (callback == null) throw new ArgumentNullException(name);
            return new NativeCallback(new NativeDeallocate((ptr, bytes, stream, arg) =>
            {
                try
                {
                    callback(ptr, (ulong)bytes, stream);
                }
                catch (Exception e)
                {
                    Keep(e);
                }
            }));
        }

        internal static NativeCallback Of(FailureCallback callback, string name)
        {
            if (callback == null) throw new ArgumentNullException(name);
            return new NativeCallback(new NativeFailure((bytes, arg) =>
            {
                try
                {
                    return callback((ulong)bytes);
                }
                catch (Exception e)
                {
                    Keep(e);
                    return false;
                }
            }));
        }

        /// <summary>Keeps the first exception of the current call (a later one
        /// of the same call says less about what went wrong).</summary>
        internal static void Keep(Exception e)
        {
            if (pending == null) pending = e;
        }

        /// <summary>Throws, with its own stack trace, the exception a callback
        /// of the current call threw, if one did.</summary>
        internal static void RethrowPending()
        {
            Exception thrown = pending;
            if (thrown == null) return;
            pending = null;
            ExceptionDispatchInfo.Capture(thrown).Throw();
        }
    }
}
