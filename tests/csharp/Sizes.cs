// SPDX-License-Identifier: Apache-2.0
// Sizes the C# tests share.
internal static class Sizes
{
    public const ulong MiB = 1 << 20;
}
