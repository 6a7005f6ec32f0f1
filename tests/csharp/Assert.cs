// SPDX-License-Identifier: Apache-2.0
// The assertions of the C# tests: each failure says what was expected and what came.
using System;

internal sealed class AssertionFailed : Exception
{
    public AssertionFailed(string message) : base(message)
    {
    }
}

internal static class Assert
{
    public static void True(bool condition, string what)
    {
        if (!condition) throw new AssertionFailed(what);
    }

    public static void Equal<T>(T expected, T actual, string what)
    {
        if (!Equals(expected, actual))
        {
            throw new AssertionFailed(string.Format("{0}: expected {1}, got {2}", what, expected, actual));
        }
    }

    /// <summary>Runs `action`, which must throw exactly a `TException`; returns it.</summary>
    public static TException Throws<TException>(Action action, string what) where TException : Exception
    {
        try
        {
            action();
        }
        catch (Exception e)
        {
            if (e.GetType() == typeof(TException)) return (TException)e;
            throw new AssertionFailed(string.Format("{0}: expected {1}, got {2}", what, typeof(TException).Name, e));
        }
        throw new AssertionFailed(string.Format("{0}: expected {1}, nothing was thrown", what, typeof(TException).Name));
    }

    /// <summary>
    /// As Throws, for the exception cmr reports `status` with, which must carry it: an
    /// ArgumentException for a bad argument, an ArgumentOutOfRangeException for one out of
    /// range, a CmrException for the rest.
    /// </summary>
    public static Cmr.ICmrFailure ThrowsStatus(Cmr.Status status, Action action, string what)
    {
        Cmr.ICmrFailure e;
        switch (status)
        {
            case Cmr.Status.InvalidArgument:
            case Cmr.Status.NullPointer:
            case Cmr.Status.InvalidRef:
            case Cmr.Status.UnknownPointer:
            case Cmr.Status.PropertyMissing:
                e = Throws<Cmr.CmrArgumentException>(action, what);
                break;
            case Cmr.Status.BadAlignment:
            case Cmr.Status.UnsupportedAlignment:
            case Cmr.Status.SizeOverflow:
            case Cmr.Status.UnknownDevice:
                e = Throws<Cmr.CmrArgumentOutOfRangeException>(action, what);
                break;
            case Cmr.Status.OutOfMemory:
                e = Throws<Cmr.CmrOutOfMemoryException>(action, what);
                break;
            case Cmr.Status.IO:
                e = Throws<Cmr.CmrIOException>(action, what);
                break;
            default:
                e = Throws<Cmr.CmrException>(action, what);
                break;
        }
        Equal(status, e.Status, what + " (status)");
        True(e.CmrMessage.Length > 0, what + ": the exception carries cmr's message");
        return e;
    }
}
