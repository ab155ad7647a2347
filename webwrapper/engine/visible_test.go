package engine

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/partnergate/partnergate/internal/harness"
)

// display makes sure a display is there for a visible window: DISPLAY as given, else a
// private Xvfb for this test.
func display(t *testing.T) {
	t.Helper()
	if os.Getenv("DISPLAY") != "" {
		return
	}
	xvfb, err := exec.LookPath("Xvfb")
	if err != nil {
		t.Fatal("no DISPLAY and no Xvfb: scripts/test-deps.sh installs xvfb (apt-get install xvfb)")
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	// -displayfd picks a free display and writes its number to fd 3.
	cmd := exec.Command(xvfb, "-displayfd", "3", "-screen", "0", "1600x1200x24", "-nolisten", "tcp")
	cmd.ExtraFiles = []*os.File{w}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting Xvfb: %v", err)
	}
	_ = w.Close()
	t.Cleanup(func() { harness.StopXServer(cmd) })
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(r).ReadString('\n')
		line <- strings.TrimSpace(s)
	}()
	select {
	case n := <-line:
		if n == "" {
			t.Fatal("Xvfb gave no display number")
		}
		t.Setenv("DISPLAY", ":"+n)
	case <-time.After(10 * time.Second):
		t.Fatal("Xvfb did not start within 10s")
	}
}

// The visible window is the one --app window: no stray tab (chromedp adds about:blank to
// the command line), the requested bounds, and window states the engine can set.
func TestChromeVisible(t *testing.T) {
	display(t)
	c, _ := startChromeVisible(t, Options{Bounds: Bounds{Left: 10, Top: 20, Width: 900, Height: 700}})
	wantReady(t, c, "/")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	targets, err := chromedp.Targets(c.ctx)
	if err != nil {
		t.Fatal(err)
	}
	var pages []string
	for _, x := range targets {
		if x.Type == "page" {
			pages = append(pages, x.URL)
		}
	}
	if len(pages) != 1 {
		t.Errorf("page targets = %q, want the app window only", pages)
	}
	if b, maximized, err := c.Bounds(ctx); err != nil || b != (Bounds{Left: 10, Top: 20, Width: 900, Height: 700}) || maximized {
		t.Errorf("Bounds() = %+v, %v, %v; want the start bounds", b, maximized, err)
	}
	if err := c.Minimize(ctx); err != nil {
		t.Errorf("Minimize: %v", err)
	}
	if err := c.Restore(ctx); err != nil {
		t.Errorf("Restore: %v", err)
	}
	var n int
	if err := c.Call(ctx, "add", []any{1, 2}, &n); err != nil || n != 3 {
		t.Errorf("Call after Restore = %d, %v; want 3", n, err)
	}
}
