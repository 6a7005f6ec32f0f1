// SPDX-License-Identifier: Apache-2.0
// The diagnostic log and stream pools from C#.
using System;
using System.IO;
using System.Text.RegularExpressions;
using Cmr;

internal sealed class LogStreamPoolTests
{
    [Test]
    private void LevelsAndFile()
    {
        try
        {
            Assert.Equal(LogLevel.Info, Log.Level, "default level");
            Assert.Equal(LogLevel.Warn, Log.FlushLevel, "default flush level");
            Log.Level = LogLevel.Error;
            Assert.True(Log.ShouldLog(LogLevel.Critical) && !Log.ShouldLog(LogLevel.Warn), "should log");
            Assert.True(!Log.ShouldLog(LogLevel.Off), "off is never written");
            string path = Path.GetTempFileName();
            Log.File = path;
            Assert.Equal(path, Log.File, "the file");
            Log.Level = LogLevel.Debug;
            new StreamPool(2).Dispose();
            Log.Flush();
            Log.File = null;
            Assert.Equal("", Log.File, "back on stderr");
            string text = File.ReadAllText(path);
            File.Delete(path);
            Assert.True(Regex.IsMatch(text, @"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}\] \[debug\] \[\d+\] cmr_stream_pool_create: stream pool .* of 2 streams"),
                        "the pool's creation is logged: " + text);
            Assert.ThrowsStatus(Status.InvalidArgument, () => Log.File = "/nonexistent-cmr-dir/x.log", "an unopenable file");
        }
        finally
        {
            Log.Level = LogLevel.Info;
            Log.FlushLevel = LogLevel.Warn;
            Log.File = "";
        }
    }

    [Test]
    private void StreamPoolRoundRobin()
    {
        using (var pool = new StreamPool(3, StreamFlags.NonBlocking))
        using (var stack = new ResourceStack("pool(system, initial_pool_size=1MiB)"))
        using (MemoryResource top = stack.Top)
        {
            Assert.Equal(3UL, pool.Size, "size");
            IntPtr[] at = { pool.GetStream(0), pool.GetStream(1), pool.GetStream(2) };
            Assert.True(at[0] != at[1] && at[1] != at[2] && at[0] != IntPtr.Zero, "distinct streams");
            for (int turn = 0; turn < 7; turn++) Assert.Equal(at[turn % 3], pool.GetStream(), "turn " + turn);
            Assert.Equal(at[1], pool.GetStream(10UL), "modulo the size");
            IntPtr ptr = top.Allocate(4096, at[0]);
            top.Deallocate(ptr, 4096, at[1]);
        }
        using (var defaults = new StreamPool())
        {
            Assert.Equal(StreamPool.DefaultSize, defaults.Size, "the default size");
        }
        Assert.ThrowsStatus(Status.InvalidArgument, () => new StreamPool(4, (StreamFlags)2), "bad flags");
        var closed = new StreamPool(2);
        closed.Dispose();
        closed.Dispose();
        Assert.Throws<ObjectDisposedException>(() => closed.GetStream(), "a disposed pool");
    }
}
