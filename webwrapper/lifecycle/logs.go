package lifecycle

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// logs is the wrapper's log: info and above to stderr; once enabled (Log=True or
// Debug=True at start, or the pipe's log command later, as the original's undocumented log
// method), debug and above to stderr and to a new file in a folder under the temporary
// folder. Nothing logs a
// person's data: commands log their name and errors, whose texts never quote a value.
type logs struct {
	logger *slog.Logger
	level  slog.LevelVar
	out    *switchWriter
	once   sync.Once
}

// switchWriter writes to stderr, and to a file once one is set.
type switchWriter struct {
	mu     sync.Mutex
	stderr io.Writer
	file   *os.File
}

func (s *switchWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.file != nil {
		_, _ = s.file.Write(p)
	}
	return s.stderr.Write(p)
}

func newLogs(stderr io.Writer) *logs {
	l := &logs{out: &switchWriter{stderr: stderr}}
	l.level.Set(slog.LevelInfo)
	l.logger = slog.New(slog.NewTextHandler(l.out, &slog.HandlerOptions{Level: &l.level}))
	return l
}

// enable turns on debug logging and the log file, once.
func (l *logs) enable() {
	l.once.Do(func() {
		l.level.Set(slog.LevelDebug)
		dir := filepath.Join(os.TempDir(), product+" logs")
		name := fmt.Sprintf("webwrapper-%s-%d.log", time.Now().Format("20060102-150405"), os.Getpid())
		if err := os.MkdirAll(dir, 0o700); err != nil {
			l.logger.Warn("log file", "error", err)
			return
		}
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			l.logger.Warn("log file", "error", err)
			return
		}
		l.out.mu.Lock()
		l.out.file = f
		l.out.mu.Unlock()
		l.logger.Info("logging to a file", "path", f.Name())
	})
}

// file is the log file's path, "" while there is none.
func (l *logs) file() string {
	l.out.mu.Lock()
	defer l.out.mu.Unlock()
	if l.out.file == nil {
		return ""
	}
	return l.out.file.Name()
}

func (l *logs) close() {
	l.out.mu.Lock()
	defer l.out.mu.Unlock()
	if l.out.file != nil {
		_ = l.out.file.Close()
		l.out.file = nil
	}
}
