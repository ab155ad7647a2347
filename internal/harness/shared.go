package harness

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"testing"
)

// Shared is a resource that the tests of a package share (one gateway that every attack
// is sent to), started by whichever test asks first. Its start function gets a testing.TB
// of the process, not of that test: the resource outlives the test, Main runs its Cleanup
// functions and removes its TempDir folders after all tests, and a failed start fails every
// test that asks, with the same message. So no test depends on which test started it, and
// `go test -run` or -shuffle runs any subset in any order.
type Shared[T any] struct {
	once sync.Once
	v    T
	err  string
}

// Get returns the resource, starting it with start on the first call.
func (s *Shared[T]) Get(t testing.TB, start func(tb testing.TB) T) T {
	t.Helper()
	builds.mu.Lock()
	managed := builds.managed
	builds.mu.Unlock()
	if !managed {
		t.Fatal("harness: a Shared resource outside harness.Main: add `func TestMain(m *testing.M) { harness.Main(m) }` to the package, so that it is cleaned up after the tests")
	}
	s.once.Do(func() {
		tb := newProcessTB()
		// start runs in its own goroutine, as a test does, so that a Fatal (runtime.Goexit)
		// ends start and not the test that asked.
		done := make(chan struct{})
		go func() {
			defer close(done)
			s.v = start(tb)
		}()
		<-done
		if tb.Failed() {
			s.err = tb.output()
		}
	})
	if s.err != "" {
		t.Fatalf("starting the shared resource failed:\n%s", s.err)
	}
	return s.v
}

// shared lists the process TBs, for Main to clean up.
var shared processTBs

type processTBs struct {
	mu  sync.Mutex
	tbs []*processTB
}

// close runs every process TB's cleanups, newest first, and reports whether none of them
// failed; it prints the output of those that did.
func (p *processTBs) close() bool {
	p.mu.Lock()
	tbs := p.tbs
	p.tbs = nil
	p.mu.Unlock()
	ok := true
	for i := len(tbs) - 1; i >= 0; i-- {
		tb := tbs[i]
		tb.runCleanups()
		if tb.Failed() {
			ok = false
			fmt.Fprintf(os.Stderr, "--- FAIL: shared resource (cleanup after the tests)\n%s\n", tb.output())
		}
	}
	return ok
}

// processTB is the testing.TB of a Shared resource.
type processTB struct {
	testing.TB // nil: every method of TB is defined below; the embedding only satisfies TB's unexported method

	ctx    context.Context
	cancel context.CancelFunc

	mu       sync.Mutex
	failed   bool
	out      bytes.Buffer
	cleanups []func()
}

func newProcessTB() *processTB {
	tb := &processTB{}
	tb.ctx, tb.cancel = context.WithCancel(context.Background())
	shared.mu.Lock()
	shared.tbs = append(shared.tbs, tb)
	shared.mu.Unlock()
	return tb
}

func (tb *processTB) runCleanups() {
	tb.cancel()
	for {
		tb.mu.Lock()
		n := len(tb.cleanups)
		if n == 0 {
			tb.mu.Unlock()
			return
		}
		f := tb.cleanups[n-1]
		tb.cleanups = tb.cleanups[:n-1]
		tb.mu.Unlock()
		// in a goroutine of its own, as testing runs cleanups: a Fatal ends f, not Main
		done := make(chan struct{})
		go func() {
			defer close(done)
			f()
		}()
		<-done
	}
}

func (tb *processTB) output() string {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	return tb.out.String()
}

func (tb *processTB) Name() string                   { return "shared" }
func (tb *processTB) Helper()                        {}
func (tb *processTB) Context() context.Context       { return tb.ctx }
func (tb *processTB) Output() io.Writer              { return tb }
func (tb *processTB) Attr(key, value string)         { tb.Logf("attr %s=%s", key, value) }
func (tb *processTB) Log(args ...any)                { tb.log(fmt.Sprintln(args...)) }
func (tb *processTB) Logf(format string, a ...any)   { tb.log(fmt.Sprintf(format, a...)) }
func (tb *processTB) Error(args ...any)              { tb.Log(args...); tb.Fail() }
func (tb *processTB) Errorf(format string, a ...any) { tb.Logf(format, a...); tb.Fail() }
func (tb *processTB) Fatal(args ...any)              { tb.Log(args...); tb.FailNow() }
func (tb *processTB) Fatalf(format string, a ...any) { tb.Logf(format, a...); tb.FailNow() }
func (tb *processTB) Skip(args ...any)               { tb.Log(args...); tb.SkipNow() }
func (tb *processTB) Skipf(format string, a ...any)  { tb.Logf(format, a...); tb.SkipNow() }
func (tb *processTB) Skipped() bool                  { return false }

// SkipNow fails: a shared resource that cannot start is a failure of every test that needs
// it, not a reason to pass them.
func (tb *processTB) SkipNow() { tb.FailNow() }

func (tb *processTB) FailNow() {
	tb.Fail()
	runtime.Goexit()
}

func (tb *processTB) Fail() {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	tb.failed = true
}

func (tb *processTB) Failed() bool {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	return tb.failed
}

func (tb *processTB) Write(p []byte) (int, error) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	return tb.out.Write(p)
}

func (tb *processTB) log(s string) {
	if len(s) == 0 || s[len(s)-1] != '\n' {
		s += "\n"
	}
	_, _ = tb.Write([]byte(s))
}

func (tb *processTB) Cleanup(f func()) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	tb.cleanups = append(tb.cleanups, f)
}

// TempDir returns a new folder, removed by Main after the tests.
func (tb *processTB) TempDir() string {
	dir, err := os.MkdirTemp("", "partnergate-shared-")
	if err != nil {
		tb.Fatalf("TempDir: %v", err)
	}
	tb.Cleanup(func() {
		if err := os.RemoveAll(dir); err != nil {
			tb.Errorf("removing %s: %v", dir, err)
		}
	})
	return dir
}

// ArtifactDir is TempDir: a shared resource keeps no artifacts.
func (tb *processTB) ArtifactDir() string { return tb.TempDir() }

// Setenv and Chdir change the whole process, which a resource shared by tests must not.
func (tb *processTB) Setenv(key, _ string) { tb.Fatalf("Setenv(%q) in a shared resource", key) }
func (tb *processTB) Chdir(dir string)     { tb.Fatalf("Chdir(%q) in a shared resource", dir) }
