//go:build !windows

package pipe

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/partnergate/partnergate/internal/wintest"
	"github.com/partnergate/partnergate/webwrapper/command"
)

// fakeHandler answers as the wrapper does: version as bare text, data as JSON, the window
// commands without a reply, and an error for a workout it does not know.
func fakeHandler(calls *atomic.Int32) Handler {
	return func(ctx context.Context, c command.Command) ([]byte, bool, error) {
		calls.Add(1)
		switch c.Name {
		case command.Version:
			return []byte("2.1.4.19787"), true, nil
		case command.GetListOfUsers:
			return []byte(`[{"id":1,"customId":"` + c.Args["customid"].(string) + `"}]`), true, nil
		case command.OpenWorkout:
			if c.Args["id"] != int64(7) {
				return nil, false, errors.New("workout not found")
			}
		case command.Close:
			return []byte(`{"ok":true}`), true, nil
		}
		return nil, false, nil
	}
}

// start runs a server for a made-up process id in a fresh runtime folder.
func start(t *testing.T) (srv *Server, calls *atomic.Int32, done chan error) {
	t.Helper()
	t.Setenv("XDG_RUNTIME_DIR", wintest.TempDir(t))
	srv, err := Listen(424242)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	calls = new(atomic.Int32)
	done = make(chan error, 1)
	go func() { done <- srv.Serve(ctx, fakeHandler(calls)) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve = %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Error("Serve did not return after cancel")
		}
	})
	return srv, calls, done
}

func call(t *testing.T, path, method string, args map[string]any) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	reply, err := Call(ctx, path, method, args)
	if err != nil {
		t.Fatalf("Call(%s) = %v", method, err)
	}
	return reply
}

func TestServerReplies(t *testing.T) {
	srv, _, _ := start(t)
	if want := filepath.Join(os.Getenv("XDG_RUNTIME_DIR"), "svcpipe.424242"); srv.Path() != want {
		t.Fatalf("Path() = %q, want %q", srv.Path(), want)
	}
	fi, err := os.Stat(srv.Path())
	if err != nil || fi.Mode().Type() != fs.ModeSocket || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket %v mode %v, want a socket of mode 0600", err, fi.Mode())
	}
	for _, tt := range []struct {
		method string
		args   map[string]any
		want   string // "" = closed without a reply
	}{
		{"Version", nil, "2.1.4.19787"},
		{"GetListOfUsers", map[string]any{"customId": "1001"}, `[{"id":1,"customId":"1001"}]`},
		{"OpenWorkout", map[string]any{"id": "7"}, ""},
		{"OpenWorkout", map[string]any{"id": 8}, `{"error":"workout not found"}`},
		{"OpenWorkout", map[string]any{}, `{"error":"openworkout: id: required"}`},
		{"Show", nil, ""},
		{"Hide", nil, ""},
		{"Frobnicate", nil, `{"error":"unknown command \"frobnicate\""}`},
		{"SelectPerson", map[string]any{"userid": "0", "customid": "1", "firstname": "A", "lastname": "B",
			"profiledata": []any{map[string]any{"key": "weight", "value": "72", "date": "2024-03-05 08:30"}}}, ""},
		{"Close", nil, `{"ok":true}`},
	} {
		if got := call(t, srv.Path(), tt.method, tt.args); string(got) != tt.want {
			t.Errorf("Call(%s, %v) = %q, want %q", tt.method, tt.args, got, tt.want)
		}
	}
}

// TestForeignClient speaks the framing byte by byte, as a client written against the
// original wrapper might, and reads the reply the same way.
func TestForeignClient(t *testing.T) {
	srv, _, _ := start(t)
	conn, err := net.Dial("unix", srv.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := []byte(`{"Method":"version","Args":{}}`)
	raw := binary.LittleEndian.AppendUint32(nil, uint32(len(body)))
	raw = append(raw, body...)
	for i := range raw {
		if _, err := conn.Write(raw[i : i+1]); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond)
	}
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	var got []byte
	one := make([]byte, 1)
	for {
		n, err := conn.Read(one)
		got = append(got, one[:n]...)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	want := append([]byte{11, 0, 0, 0}, "2.1.4.19787"...)
	if string(got) != string(want) {
		t.Fatalf("reply bytes = %q, want %q", got, want)
	}
}

func TestServerBadConnections(t *testing.T) {
	srv, calls, _ := start(t)
	dial := func() net.Conn {
		c, err := net.Dial("unix", srv.Path())
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(5 * time.Second))
		return c
	}
	t.Run("request split across writes", func(t *testing.T) {
		c := dial()
		defer c.Close()
		body := `{"Method":"GetListOfUsers","Args":{"customid":"x"}}`
		raw := append(binary.LittleEndian.AppendUint32(nil, uint32(len(body))), body...)
		for _, part := range [][]byte{raw[:2], raw[2:7], raw[7:30], raw[30:]} {
			c.Write(part)
			time.Sleep(5 * time.Millisecond)
		}
		got, err := ReadMessage(c)
		if err != nil || string(got) != `[{"id":1,"customId":"x"}]` {
			t.Fatalf("reply = %q, %v", got, err)
		}
	})
	t.Run("length over the limit", func(t *testing.T) {
		c := dial()
		defer c.Close()
		c.Write(binary.LittleEndian.AppendUint32(nil, MaxMessage+1))
		got, err := ReadMessage(c)
		if msg, ok := ReplyError(got); err != nil || !ok || msg != ErrTooLarge.Error() {
			t.Fatalf("reply = %q, %v; want the too-large error", got, err)
		}
	})
	t.Run("closed early", func(t *testing.T) {
		before := calls.Load()
		c := dial()
		c.Write([]byte{50, 0, 0, 0, '{', '"'})
		c.Close()
		// The server must still answer the next client, and never have run the cut request.
		if got := call(t, srv.Path(), "version", nil); string(got) != "2.1.4.19787" {
			t.Fatalf("version after an early close = %q", got)
		}
		if n := calls.Load() - before; n != 1 {
			t.Fatalf("handler ran %d times, want once (the version only)", n)
		}
	})
	t.Run("not JSON", func(t *testing.T) {
		c := dial()
		defer c.Close()
		WriteMessage(c, []byte("version"))
		got, _ := ReadMessage(c)
		if msg, ok := ReplyError(got); !ok || msg != "request is not a JSON object" {
			t.Fatalf("reply = %q", got)
		}
	})
}

func TestServerStops(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", wintest.TempDir(t))
	srv, err := Listen(4242)
	if err != nil {
		t.Fatal(err)
	}
	// A second server for the same process id is refused while the first listens.
	if _, err := Listen(4242); err == nil {
		t.Fatal("Listen twice for one pid succeeded")
	}
	ctx, cancel := context.WithCancel(context.Background())
	block := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- srv.Serve(ctx, func(ctx context.Context, c command.Command) ([]byte, bool, error) {
			close(block)
			<-ctx.Done()
			return nil, false, ctx.Err()
		})
	}()
	go Call(context.Background(), srv.Path(), "getlistofusers", nil)
	<-block
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return")
	}
	if _, err := os.Lstat(srv.Path()); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("socket after Serve: %v, want it removed", err)
	}
}

func TestStaleSocketReplaced(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", wintest.TempDir(t))
	path, _ := Path(77)
	// A socket nobody listens on, as a killed process leaves it.
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	srv, err := Listen(77)
	if err != nil {
		t.Fatalf("Listen over a stale socket = %v", err)
	}
	srv.ln.Close()
}

func TestPathFallback(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", "")
	tmp := wintest.TempDir(t)
	t.Setenv("TMPDIR", tmp)
	path, err := Path(5)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(path)
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 || filepath.Dir(dir) != tmp {
		t.Fatalf("Path(5) = %q in a folder %v, want a 0700 folder under %s", path, fi.Mode(), tmp)
	}
	// A folder others may write to is refused.
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := Path(5); err == nil {
		t.Fatal("Path accepted a folder of mode 0777")
	}
}

// A runtime folder that others may enter, read or write is not used: the socket goes to
// the user's private folder under the temporary folder instead.
func TestPathRuntimeDirChecked(t *testing.T) {
	tmp := wintest.TempDir(t)
	t.Setenv("TMPDIR", tmp)
	private := filepath.Join(tmp, "svcpipe-"+strconv.Itoa(os.Getuid()), "svcpipe.5")
	for _, tt := range []struct {
		name string
		mode os.FileMode
		want string // "runtime" = in the runtime folder
	}{
		{"0700", 0o700, "runtime"},
		{"0755", 0o755, private},
		{"0710", 0o710, private},
		{"1777", os.ModeSticky | 0o777, private},
		{"0770", 0o770, private},
		{"0702", 0o702, private},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(wintest.TempDir(t), "run")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(dir, tt.mode); err != nil {
				t.Fatal(err)
			}
			t.Setenv("XDG_RUNTIME_DIR", dir)
			want := tt.want
			if want == "runtime" {
				want = filepath.Join(dir, "svcpipe.5")
			}
			if got, err := Path(5); err != nil || got != want {
				t.Errorf("Path(5) with XDG_RUNTIME_DIR of mode %v = %q, %v; want %q", tt.mode, got, err, want)
			}
		})
	}
	// A link to a private folder is not the folder: it may be swapped.
	link := filepath.Join(wintest.TempDir(t), "link")
	if err := os.Symlink(wintest.TempDir(t), link); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_RUNTIME_DIR", link)
	if got, _ := Path(5); got != private {
		t.Errorf("Path(5) with XDG_RUNTIME_DIR a symbolic link = %q, want %q", got, private)
	}
}

// A command runs to its end when its client writes its request and hangs up at once, as
// the original's sample client does: the handler's context lasts, and only the reply is
// dropped, which the log says.
func TestCommandOutlivesClient(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", wintest.TempDir(t))
	srv, err := Listen(4343)
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	var logMu sync.Mutex
	srv.Logger = slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		logMu.Lock()
		defer logMu.Unlock()
		return logs.Write(p)
	}), nil))
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	release := make(chan struct{})
	ran := make(chan error, 1)
	go func() {
		served <- srv.Serve(ctx, func(ctx context.Context, c command.Command) ([]byte, bool, error) {
			select { // the page answers after the client has gone, unless the command is cut off
			case <-release:
			case <-ctx.Done():
			}
			ran <- ctx.Err()
			return []byte(`{"Id":1}`), true, nil
		})
	}()
	conn, err := net.Dial("unix", srv.Path())
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteMessage(conn, []byte(`{"Method":"selectperson","Args":{"userid":0,"customid":"1","firstname":"A","lastname":"B"}}`)); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	// Time for a server that watched for the hang-up to cut the command off; one that does
	// not passes whatever the wait.
	time.Sleep(300 * time.Millisecond)
	close(release)
	select {
	case err := <-ran:
		if err != nil {
			t.Errorf("the command's context after its client hung up = %v, want it to last", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the command did not run")
	}
	cancel()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	logMu.Lock()
	defer logMu.Unlock()
	if got := logs.String(); !strings.Contains(got, "reply is dropped") || !strings.Contains(got, "command=selectperson") {
		t.Errorf("log = %q, want the dropped reply of selectperson", got)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
