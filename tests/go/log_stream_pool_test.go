// SPDX-License-Identifier: Apache-2.0

package cmr_test

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/cmr-project/cmr/go/cmr"
)

func TestLogLevelsAndFile(t *testing.T) {
	defer func() {
		cmr.SetLogLevel(cmr.LogInfo)
		cmr.SetLogFlushLevel(cmr.LogWarn)
		cmr.SetLogFile("")
	}()
	if level, err := cmr.GetLogLevel(); err != nil || level != cmr.LogInfo {
		t.Fatalf("default level %v (%v), want LogInfo", level, err)
	}
	if level, err := cmr.GetLogFlushLevel(); err != nil || level != cmr.LogWarn {
		t.Fatalf("default flush level %v (%v), want LogWarn", level, err)
	}
	if err := cmr.SetLogLevel(cmr.LogLevel(9)); !errors.Is(err, cmr.ErrInvalidArgument) {
		t.Fatalf("level 9: %v, want ErrInvalidArgument", err)
	}
	path := filepath.Join(t.TempDir(), "cmr.log")
	mustOK(t, cmr.SetLogFile(path))
	if got, _ := cmr.GetLogFile(); got != path {
		t.Fatalf("log file %q, want %q", got, path)
	}
	mustOK(t, cmr.SetLogLevel(cmr.LogDebug))
	if !cmr.ShouldLog(cmr.LogDebug) || cmr.ShouldLog(cmr.LogTrace) || cmr.ShouldLog(cmr.LogOff) {
		t.Fatal("ShouldLog disagrees with the level")
	}
	pool, err := cmr.NewStreamPool(2, cmr.StreamSyncDefault)
	mustOK(t, err)
	pool.Close()
	mustOK(t, cmr.FlushLog())
	mustOK(t, cmr.SetLogFile(""))
	text, err := os.ReadFile(path)
	mustOK(t, err)
	line := regexp.MustCompile(`(?m)^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}\] \[debug\] \[\d+\] cmr_stream_pool_create: stream pool .* of 2 streams`)
	if !line.Match(text) {
		t.Fatalf("the log lacks the pool's creation:\n%s", text)
	}
}

func TestStreamPoolRoundRobin(t *testing.T) {
	pool, err := cmr.NewStreamPool(0, cmr.StreamNonBlocking)
	mustOK(t, err)
	if size, err := pool.Size(); err != nil || size != cmr.DefaultStreamPoolSize {
		t.Fatalf("size %d (%v), want %d", size, err, cmr.DefaultStreamPoolSize)
	}
	first, _ := pool.StreamAt(0)
	second, _ := pool.StreamAt(1)
	if first == second || first == cmr.DefaultStream {
		t.Fatalf("streams %v and %v: want two distinct made streams", first, second)
	}
	for turn := 0; turn < 2*cmr.DefaultStreamPoolSize; turn++ {
		stream, err := pool.Stream()
		want, _ := pool.StreamAt(uint64(turn))
		if err != nil || stream != want {
			t.Fatalf("turn %d: %v (%v), want %v", turn, stream, err, want)
		}
	}
	if again, _ := pool.StreamAt(cmr.DefaultStreamPoolSize + 1); again != second {
		t.Fatal("StreamAt is not modulo the size")
	}
	stack, err := cmr.ParseStack("pool(system, initial_pool_size=1MiB)")
	mustOK(t, err)
	defer stack.Close()
	ptr, err := stack.AllocateOn(4096, first)
	mustOK(t, err)
	mustOK(t, stack.DeallocateOn(ptr, 4096, second))
	mustOK(t, pool.Close())
	if err := pool.Close(); !errors.Is(err, cmr.ErrDestroyedHandle) {
		t.Fatalf("second Close: %v, want ErrDestroyedHandle", err)
	}
	if _, err := pool.Stream(); !errors.Is(err, cmr.ErrDestroyedHandle) {
		t.Fatalf("Stream after Close: %v, want ErrDestroyedHandle", err)
	}
	if _, err := cmr.NewStreamPool(4, cmr.StreamFlags(2)); !errors.Is(err, cmr.ErrInvalidArgument) {
		t.Fatalf("flags 2: %v, want ErrInvalidArgument", err)
	}
}
