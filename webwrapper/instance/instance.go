// Package instance keeps one wrapper per user and desktop session (localsock.Session: the
// Windows session, elsewhere the display): the first start takes a lock file and listens
// on a local endpoint; a later start in the same session finds it and hands it its
// arguments, which the running instance applies as its own (the spec's SVC-7). The lock
// is an OS file lock (github.com/gofrs/flock), so a killed instance never leaves it
// behind. A start in another session of the user has its own lock, pid and endpoint, so
// its arguments never land in a window on another screen.
//
// The endpoint is not the svcpipe of the pipe protocol: its name and framing are the
// wrapper's own, so that an integrator's pipe client can never reach it by mistake.
package instance

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gofrs/flock"

	"github.com/partnergate/partnergate/webwrapper/localsock"
)

const (
	// maxMessage bounds one forwarded argument list.
	maxMessage = 1 << 20
	// ioTimeout bounds one forward, both sides.
	ioTimeout = 5 * time.Second
)

// Instance is the running (primary) instance.
type Instance struct {
	dir    string
	base   string // the session's file names in dir: base.lock, base.pid, base.<pid>.sock
	lock   *flock.Flock
	ln     net.Listener
	args   chan []string
	done   chan struct{}
	wg     sync.WaitGroup
	closed sync.Once
}

// Dir is the lock folder of a product under the user's cache folder.
func Dir(vendor, product string) (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("finding the user cache folder: %w", err)
	}
	return filepath.Join(dir, vendor, product), nil
}

// Acquire makes this process the running instance, or hands args to the one that runs.
// primary is true with an Instance that receives later starts' arguments; false when args
// went to the running instance, and this process should exit. It keeps trying for ctx's
// lifetime while the running instance is starting up or going away.
func Acquire(ctx context.Context, dir string, args []string) (primary bool, inst *Instance, err error) {
	return acquireSession(ctx, dir, baseName(localsock.Session()), args)
}

// baseName is the session's files' name in the instance folder: "instance" for a wrapper
// that knows no session, else "instance-<session>".
func baseName(session string) string {
	if session == "" {
		return "instance"
	}
	return "instance-" + session
}

func acquireSession(ctx context.Context, dir, base string, args []string) (primary bool, inst *Instance, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return false, nil, fmt.Errorf("creating the instance folder: %w", err)
	}
	// The folder is the wrapper's own (lock, endpoint, browser profile), and its endpoint
	// may be made only in a folder nobody else may enter: one left wider is narrowed.
	if err := os.Chmod(dir, 0o700); err != nil {
		return false, nil, fmt.Errorf("making the instance folder private: %w", err)
	}
	lock := flock.New(filepath.Join(dir, base+".lock"))
	var last error
	for {
		ok, err := lock.TryLock()
		if err != nil {
			return false, nil, fmt.Errorf("locking the instance: %w", err)
		}
		if ok {
			inst, err := start(dir, base, lock)
			if err != nil {
				_ = lock.Unlock()
				return false, nil, err
			}
			return true, inst, nil
		}
		if last = forward(ctx, dir, base, args); last == nil {
			return false, nil, nil
		}
		// The holder may not listen yet, or may be exiting; try both again shortly.
		select {
		case <-ctx.Done():
			return false, nil, fmt.Errorf("forwarding to the running instance: %w", last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// start listens on this process's endpoint, then writes its pid, so that a pid found
// next to the lock always names an endpoint that was listening.
func start(dir, base string, lock *flock.Flock) (*Instance, error) {
	removeStale(dir, base)
	pid := os.Getpid()
	path, err := endpoint(dir, base, pid)
	if err != nil {
		return nil, fmt.Errorf("listening for other starts: %w", err)
	}
	ln, err := localsock.Listen(path)
	if err != nil {
		return nil, fmt.Errorf("listening for other starts: %w", err)
	}
	if err := writePID(dir, base, pid); err != nil {
		_ = ln.Close()
		return nil, err
	}
	inst := &Instance{dir: dir, base: base, lock: lock, ln: ln, args: make(chan []string, 16), done: make(chan struct{})}
	inst.wg.Add(1)
	go inst.serve()
	return inst, nil
}

// Args delivers the argument lists of later starts, in the order they arrived.
func (i *Instance) Args() <-chan []string { return i.args }

// Close stops listening and releases the lock; Args is closed after the last list.
func (i *Instance) Close() error {
	var err error
	i.closed.Do(func() {
		close(i.done)
		err = i.ln.Close()
		i.wg.Wait()
		close(i.args)
		_ = os.Remove(filepath.Join(i.dir, i.base+".pid"))
		if uerr := i.lock.Unlock(); err == nil {
			err = uerr
		}
	})
	return err
}

func (i *Instance) serve() {
	defer i.wg.Done()
	for {
		c, err := i.ln.Accept()
		if err != nil {
			return // closed
		}
		i.wg.Add(1)
		go func() {
			defer i.wg.Done()
			i.handle(c)
		}()
	}
}

// handle reads one JSON array of strings on a line (a longer one than maxMessage is
// dropped), queues it and answers "ok", so that
// the sender exits only once its arguments are accepted.
func (i *Instance) handle(c net.Conn) {
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(time.Now().Add(ioTimeout))
	line, err := bufio.NewReader(io.LimitReader(c, maxMessage)).ReadBytes('\n')
	if err != nil {
		return
	}
	var args []string
	if err := json.Unmarshal(line, &args); err != nil {
		_, _ = c.Write([]byte("error: not a JSON array of strings\n"))
		return
	}
	select {
	case i.args <- args:
		_, _ = c.Write([]byte("ok\n"))
	case <-i.done:
	}
}

// allowForeground lets the running instance, process pid, bring its window to the front;
// a variable for the tests.
var allowForeground = allowForegroundWindow

// forward sends args to the instance whose pid is next to the lock.
func forward(ctx context.Context, dir, base string, args []string) error {
	pid, err := readPID(dir, base)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, ioTimeout)
	defer cancel()
	path, err := endpoint(dir, base, pid)
	if err != nil {
		return err
	}
	// This start is the program the person (or their EHR) just started, which Windows lets
	// take the foreground; the running instance, which brings its window to the front for
	// every later start, may then too.
	allowForeground(pid)
	c, err := localsock.Dial(ctx, path)
	if err != nil {
		return fmt.Errorf("connecting to instance %d: %w", pid, err)
	}
	defer func() { _ = c.Close() }()
	deadline, _ := ctx.Deadline()
	_ = c.SetDeadline(deadline)
	if args == nil {
		args = []string{}
	}
	msg, err := json.Marshal(args)
	if err != nil {
		return err
	}
	if _, err := c.Write(append(msg, '\n')); err != nil {
		return fmt.Errorf("forwarding to instance %d: %w", pid, err)
	}
	reply, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return fmt.Errorf("forwarding to instance %d: %w", pid, err)
	}
	if reply != "ok\n" {
		return fmt.Errorf("instance %d refused the arguments: %s", pid, strings.TrimSpace(reply))
	}
	return nil
}

func writePID(dir, base string, pid int) error {
	path := filepath.Join(dir, base+".pid")
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(strconv.Itoa(pid)+"\n"), 0o600); err != nil {
		return fmt.Errorf("writing the instance pid: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("writing the instance pid: %w", err)
	}
	return nil
}

func readPID(dir, base string) (int, error) {
	data, err := os.ReadFile(filepath.Join(dir, base+".pid"))
	if err != nil {
		return 0, fmt.Errorf("reading the instance pid: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 {
		return 0, errors.New("reading the instance pid: not a process id")
	}
	return pid, nil
}
