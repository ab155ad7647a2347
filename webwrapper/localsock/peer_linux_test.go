package localsock

import (
	"context"
	"io"
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestMain lets the test binary be a client of another process: with LOCALSOCK_DIAL set it
// connects there, prints what it reads and exits.
func TestMain(m *testing.M) {
	if path := os.Getenv("LOCALSOCK_DIAL"); path != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, err := Dial(ctx, path)
		if err != nil {
			os.Exit(3)
		}
		b, _ := io.ReadAll(c)
		os.Stdout.Write(b)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// A client of the user in another desktop session (another display) is hung up on; one in
// this session, or in none, is let in.
func TestPeerOfAnotherSession(t *testing.T) {
	t.Setenv("DISPLAY", ":7")
	t.Setenv("WAYLAND_DISPLAY", "")
	path := testPath(t, "peer")
	ln, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("hello"))
			c.Close()
		}
	}()
	for _, tt := range []struct {
		display string
		want    string
	}{{":7", "hello"}, {":7.0", "hello"}, {"", "hello"}, {":8", ""}} {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), "LOCALSOCK_DIAL="+path, "DISPLAY="+tt.display, "XDG_SESSION_ID=")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("client with DISPLAY=%q: %v", tt.display, err)
		}
		if string(out) != tt.want {
			t.Errorf("client with DISPLAY=%q read %q, want %q", tt.display, out, tt.want)
		}
	}
}
