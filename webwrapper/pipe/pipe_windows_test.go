package pipe

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/partnergate/partnergate/internal/wintest"
	"github.com/partnergate/partnergate/webwrapper/command"
)

// The named pipe \\.\pipe\svcpipe.<pid> answers in the original's framing, as Windows
// code (under Wine in ./test.sh).
func TestNamedPipe(t *testing.T) {
	pid := os.Getpid()
	srv, err := Listen(pid)
	if err != nil {
		t.Fatal(err)
	}
	if want := `\\.\pipe\svcpipe.` + strconv.Itoa(pid); srv.Path() != want {
		t.Errorf("Path() = %q, want %q", srv.Path(), want)
	}
	wintest.PrimePipe(srv.Path())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- srv.Serve(ctx, func(ctx context.Context, c command.Command) ([]byte, bool, error) {
			switch c.Name {
			case command.Version:
				return []byte("2.1.5.7"), true, nil
			case command.Close:
				return []byte(`{"ok":true}`), true, nil
			}
			return nil, false, nil
		})
	}()
	cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer ccancel()
	for _, tt := range []struct{ method, want string }{{"Version", "2.1.5.7"}, {"Show", ""}, {"Close", `{"ok":true}`}} {
		got, err := Call(cctx, srv.Path(), tt.method, nil)
		if err != nil || string(got) != tt.want {
			t.Errorf("Call(%s) = %q, %v; want %q", tt.method, got, err, tt.want)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve = %v", err)
	}
}
