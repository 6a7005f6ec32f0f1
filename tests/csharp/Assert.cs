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

    /// <summary>As Throws, for a CmrException that must carry `status`.</summary>
    public static Cmr.CmrException ThrowsStatus(Cmr.Status status, Action action, string what)
    {
        var e = Throws<Cmr.CmrException>(action, what);
        Equal(status, e.Status, what + " (status)");
        True(e.CmrMessage.Length > 0, what + ": the exception carries cmr's message");
        return e;
    }
}
