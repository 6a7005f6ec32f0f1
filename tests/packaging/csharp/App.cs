// SPDX-License-Identifier: Apache-2.0
// A program of a Cmr NuGet package user, built against the package's Cmr.dll.
using System;
using System.Reflection;

public static class App
{
    public static void Main()
    {
        using (var stack = new Cmr.ResourceStack("pool(system, initial_pool_size=1MiB)"))
        {
            IntPtr pointer = stack.Top.Allocate(1000);
            stack.Top.Deallocate(pointer, 1000);
        }
        Console.WriteLine("cmr " + Cmr.Library.Version + " assembly " + typeof(Cmr.Library).Assembly.GetName().Version
                          + (Cmr.Library.BuiltWithCuda ? " cuda" : " host"));
    }
}
