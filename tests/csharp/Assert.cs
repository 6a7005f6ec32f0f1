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
        return (TException)Throws(typeof(TException), action, what);
    }

    /// <summary>Runs `action`, which must throw exactly an `expected`; returns it.</summary>
    private static Exception Throws(Type expected, Action action, string what)
    {
        try
        {
            action();
        }
        catch (Exception e)
        {
            if (e.GetType() == expected) return e;
            throw new AssertionFailed(string.Format("{0}: expected {1}, got {2}", what, expected.Name, e));
        }
        throw new AssertionFailed(string.Format("{0}: expected {1}, nothing was thrown", what, expected.Name));
    }

    /// <summary>The exception class cmr reports `status` with.</summary>
    private static Type KindOf(Cmr.Status status)
    {
        switch (status)
        {
            case Cmr.Status.InvalidArgument:
            case Cmr.Status.NullPointer:
            case Cmr.Status.InvalidRef:
            case Cmr.Status.UnknownPointer:
            case Cmr.Status.PropertyMissing:
                return typeof(Cmr.CmrArgumentException);
            case Cmr.Status.BadAlignment:
            case Cmr.Status.UnsupportedAlignment:
            case Cmr.Status.SizeOverflow:
            case Cmr.Status.UnknownDevice:
                return typeof(Cmr.CmrArgumentOutOfRangeException);
            case Cmr.Status.OutOfMemory:
                return typeof(Cmr.CmrOutOfMemoryException);
            case Cmr.Status.IO:
                return typeof(Cmr.CmrIOException);
            default:
                return typeof(Cmr.CmrException);
        }
    }

    /// <summary>
    /// As Throws, for the exception cmr reports `status` with, which must carry it: an
    /// ArgumentException for a bad argument, an ArgumentOutOfRangeException for one out of
    /// range, a CmrException for the rest.
    /// </summary>
    public static Cmr.ICmrFailure ThrowsStatus(Cmr.Status status, Action action, string what)
    {
        var e = (Cmr.ICmrFailure)Throws(KindOf(status), action, what);
        Equal(status, e.Status, what + " (status)");
        True(e.CmrMessage.Length > 0, what + ": the exception carries cmr's message");
        return e;
    }
}
