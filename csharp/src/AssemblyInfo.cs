// SPDX-License-Identifier: Apache-2.0
using System.Runtime.CompilerServices;

// The benchmark times the native module's call alone too, beside the public
// API's, to show what the binding adds to it (bench/csharp/BenchCall.cs).
[assembly: InternalsVisibleTo("CmrBench")]
