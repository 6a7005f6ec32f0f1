// SPDX-License-Identifier: Apache-2.0

package cmr

import "github.com/cmr-project/cmr/go/internal/capi"

// LogLevel is a level of cmr's diagnostic log, in RMM's (spdlog's) order.
type LogLevel int

const (
	LogTrace LogLevel = iota
	LogDebug
	LogInfo
	LogWarn
	LogError
	LogCritical
	LogOff // as a threshold: nothing is written
)

// The diagnostic log, shared by C and every language (as RMM's debug log):
// lines "[YYYY-MM-DD HH:MM:SS.mmm] [level] [thread id] message" about pool
// growth, upstream failures, failure-callback retries, per-device changes,
// stream pools and resources made and destroyed, on stderr or appended to a
// file. CMR_DEBUG_LOG_LEVEL and CMR_DEBUG_LOG_FILE set both at first use.

// SetLogLevel writes messages at or above level (default LogInfo); a level
// outside LogTrace..LogOff is ErrInvalidArgument.
func SetLogLevel(level LogLevel) error {
	return check(capi.Cmr_log_set_level(capi.Enum_SS_cmr_log_level(level)))
}

// GetLogLevel is the level set now.
func GetLogLevel() (LogLevel, error) {
	return readLevel(capi.Cmr_log_get_level)
}

// SetLogFlushLevel makes messages at or above level reach the sink at once
// (default LogWarn).
func SetLogFlushLevel(level LogLevel) error {
	return check(capi.Cmr_log_set_flush_level(capi.Enum_SS_cmr_log_level(level)))
}

// GetLogFlushLevel is the flush level set now.
func GetLogFlushLevel() (LogLevel, error) {
	return readLevel(capi.Cmr_log_get_flush_level)
}

// readLevel is the level get writes.
func readLevel(get func(*int32) *capi.Failure) (LogLevel, error) {
	var level int32
	err := check(get(&level))
	return LogLevel(level), err
}

// ShouldLog says whether a message at level would be written now.
func ShouldLog(level LogLevel) bool {
	return capi.Cmr_log_should_log(capi.Enum_SS_cmr_log_level(level))
}

// FlushLog writes out what the sink has buffered.
func FlushLog() error { return check(capi.Cmr_log_flush()) }

// SetLogFile appends the log to path; "" is stderr.
func SetLogFile(path string) error {
	if err := checkText(path, "path"); err != nil {
		return err
	}
	return check(capi.Cmr_log_set_file(path))
}

// GetLogFile is the file the log goes to, "" for stderr.
func GetLogFile() (string, error) {
	var path string
	err := check(capi.Cmr_log_get_file(&path))
	return path, err
}
