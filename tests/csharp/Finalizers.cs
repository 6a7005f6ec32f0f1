// SPDX-License-Identifier: Apache-2.0
// Runs the finalizers of whatever is unreachable now, and of what those
// finalizers left unreachable in turn.
using System;

internal static class Finalizers
{
    public static void Run()
    {
        for (int round = 0; round < 3; round++)
        {
            GC.Collect();
            GC.WaitForPendingFinalizers();
        }
    }
}
