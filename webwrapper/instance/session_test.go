//go:build !windows

package instance

import (
	"bufio"
	"encoding/json"
	"errors"
	"os/exec"
	"slices"
	"testing"

	"github.com/partnergate/partnergate/internal/wintest"
)

// One wrapper per desktop session, not per user: with a wrapper running on display :1, a
// start of the same user on display :2 becomes that display's running wrapper instead of
// handing its arguments to the one on :1, and a start on :1 still hands them over.
func TestOnePerSession(t *testing.T) {
	dir := wintest.TempDir(t)
	t.Setenv("WAYLAND_DISPLAY", "")
	t.Setenv("DISPLAY", ":1")
	hold := helper(t, "hold", dir)
	out, err := hold.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := hold.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hold.Process.Kill(); _ = hold.Wait() })
	lines := bufio.NewScanner(out)
	if !lines.Scan() || lines.Text() != "primary" {
		t.Fatalf("helper on :1 said %q, want primary", lines.Text())
	}

	t.Setenv("DISPLAY", ":2")
	other := helper(t, "start", dir, "id=2")
	var exit *exec.ExitError
	if err := other.Run(); !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Fatalf("a start on :2 = %v, want it the running wrapper of :2 (exit 3), not a hand-over to :1", err)
	}

	t.Setenv("DISPLAY", ":1.0")
	if err := helper(t, "start", dir, "id=1").Run(); err != nil {
		t.Fatalf("a start on :1.0 = %v, want its arguments handed to the wrapper of :1", err)
	}
	if !lines.Scan() {
		t.Fatal("the wrapper of :1 received nothing")
	}
	var got []string
	if err := json.Unmarshal(lines.Bytes(), &got); err != nil || !slices.Equal(got, []string{"id=1"}) {
		t.Errorf("the wrapper of :1 received %q (%v), want [id=1] and nothing from :2", lines.Text(), err)
	}
}
