// SPDX-License-Identifier: Apache-2.0
// The allocation history and snapshots from C#.
using System;
using System.IO;
using Cmr;

internal sealed class HistoryTests
{
    [Test]
    private void StartStopAndWriteSnapshots()
    {
        try
        {
            Assert.ThrowsStatus(Status.InvalidArgument, () => History.Start(1UL << 27), "a capacity past the most");
            using (var system = new SystemMemoryResource())
            using (var pool = new PoolMemoryResource(system, 1UL << 20))
            {
                History.Start(0, true, 8);
                Assert.True(History.IsRecording, "recording after Start");
                IntPtr ptr = pool.Allocate(1000);
                string path = Path.GetTempFileName();
                History.WriteSnapshot(pool, SnapshotFormat.Json, path);
                string text = File.ReadAllText(path);
                Assert.True(text.StartsWith("{\"segments\":[{"), "a segment: " + text.Substring(0, 40));
                Assert.True(text.Contains("\"total_size\":1048576,"), "the pool's chunk");
                Assert.True(text.Contains("{\"action\":\"alloc\",\"addr\":" + ptr.ToInt64() + ",\"size\":1000,"),
                            "the allocation's trace");
                History.WriteSnapshot(pool, SnapshotFormat.Html, path);
                Assert.True(File.ReadAllText(path).StartsWith("<!DOCTYPE html>"), "the report");
                File.Delete(path);
                Assert.ThrowsStatus(Status.IO, () => History.WriteSnapshot(pool, SnapshotFormat.Json, "/nonexistent/dir/x"),
                                    "an unwritable path");
                Assert.ThrowsStatus(Status.InvalidArgument, () => History.WriteSnapshot(pool, (SnapshotFormat)9, "/tmp/x"),
                                    "format 9");
                pool.Deallocate(ptr, 1000);
                History.Stop();
                Assert.True(!History.IsRecording, "stopped");
            }
        }
        finally
        {
            History.Stop();
        }
    }
}
