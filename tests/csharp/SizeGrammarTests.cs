// SPDX-License-Identifier: Apache-2.0
// The size grammar through C#: the table the C suite reads (tests/sizes.txt,
// at CMR_SIZES_TABLE), through Cmr.ByteSize.Parse.
using System;
using System.IO;
using Cmr;

internal sealed class SizeGrammarTests
{
    [Test]
    private void ParseReadsTheTable()
    {
        int cases = 0;
        foreach (string line in File.ReadAllLines(Environment.GetEnvironmentVariable("CMR_SIZES_TABLE")))
        {
            if (line.Length == 0 || line.StartsWith("#")) continue;
            int space = line.IndexOf(' ');
            string expected = line.Substring(0, space);
            string text = line.Substring(space + 1).Replace("\\t", "\t");
            cases++;
            if (expected == "invalid" || expected == "overflow")
            {
                Status status = expected == "invalid" ? Status.InvalidArgument : Status.SizeOverflow;
                Assert.ThrowsStatus(status, () => ByteSize.Parse(text), "\"" + text + "\"");
            }
            else
            {
                Assert.Equal(ulong.Parse(expected), ByteSize.Parse(text), "\"" + text + "\"");
            }
        }
        Assert.True(cases > 60, "the table has its cases");
        Assert.Throws<ArgumentException>(() => ByteSize.Parse("1\0GiB"), "a NUL character");
    }
}
