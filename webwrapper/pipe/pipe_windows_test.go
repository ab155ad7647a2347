package pipe

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"

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

// The descriptor the pipe is made with grants the current user alone, and no entry is
// inherited. (Whether Windows keeps another user out is its to enforce; Wine has one user
// and cannot show it.)
func TestNamedPipeSecurity(t *testing.T) {
	user, err := windows.GetCurrentProcessToken().GetTokenUser()
	if err != nil {
		t.Fatal(err)
	}
	sd, err := windows.SecurityDescriptorFromString(userOnly(user.User.Sid))
	if err != nil {
		t.Fatalf("the descriptor does not parse: %v", err)
	}
	ctl, _, err := sd.Control()
	if err != nil || ctl&windows.SE_DACL_PROTECTED == 0 {
		t.Errorf("control = %#x, %v; want a protected DACL", ctl, err)
	}
	dacl, _, err := sd.DACL()
	if err != nil || dacl == nil || dacl.AceCount != 1 {
		t.Fatalf("DACL = %+v, %v; want one entry", dacl, err)
	}
	var ace *windows.ACCESS_ALLOWED_ACE
	if err := windows.GetAce(dacl, 0, &ace); err != nil {
		t.Fatal(err)
	}
	sid := (*windows.SID)(unsafe.Pointer(&ace.SidStart))
	if ace.Header.AceType != windows.ACCESS_ALLOWED_ACE_TYPE || !sid.Equals(user.User.Sid) {
		t.Errorf("entry = type %d for %s, want allowed for the current user %s", ace.Header.AceType, sid, user.User.Sid)
	}
}
