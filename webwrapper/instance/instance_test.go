package instance

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/partnergate/partnergate/internal/wintest"
)

// The test binary re-executes itself as another wrapper start when helperEnv is set:
// "hold" acquires and prints each forwarded argument list as a JSON line; "start"
// acquires with its arguments and exits 0 when they were forwarded, 3 when it became the
// running instance.
const helperEnv = "WEBWRAPPER_INSTANCE_HELPER"

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "":
		os.Exit(m.Run())
	case "hold":
		primary, inst, err := Acquire(context.Background(), os.Getenv("DIR"), nil)
		if err != nil || !primary {
			fmt.Fprintln(os.Stderr, "hold:", primary, err)
			os.Exit(1)
		}
		fmt.Println("primary")
		for args := range inst.Args() {
			b, _ := json.Marshal(args)
			fmt.Println(string(b))
		}
	case "start":
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		primary, _, err := Acquire(ctx, os.Getenv("DIR"), os.Args[1:])
		if err != nil {
			fmt.Fprintln(os.Stderr, "start:", err)
			os.Exit(1)
		}
		if primary {
			os.Exit(3)
		}
		os.Exit(0)
	}
}

func helper(t *testing.T, mode, dir string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), helperEnv+"="+mode, "DIR="+dir)
	cmd.Stderr = os.Stderr
	return cmd
}

func acquire(t *testing.T, dir string, args ...string) (bool, *Instance) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	primary, inst, err := Acquire(ctx, dir, args)
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	if inst != nil {
		t.Cleanup(func() { _ = inst.Close() })
	}
	return primary, inst
}

// A start forwards to a running instance in another process; when that process is
// killed, the next start becomes the running instance, and a later process forwards to it
// and exits 0.
func TestKilledInstanceLeavesNoLock(t *testing.T) {
	dir := wintest.TempDir(t)
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
		t.Fatalf("helper said %q, want primary", lines.Text())
	}

	want := []string{`C:\data\input.xml`, `firstname=Kari Nordmann`, "æøå"}
	if primary, _ := acquire(t, dir, want...); primary {
		t.Fatalf("Acquire while another process holds the lock: primary = true")
	}
	if !lines.Scan() {
		t.Fatalf("helper received nothing")
	}
	var got []string
	if err := json.Unmarshal(lines.Bytes(), &got); err != nil || !slices.Equal(got, want) {
		t.Errorf("running instance received %q (%v), want %q", lines.Text(), err, want)
	}

	if err := hold.Process.Kill(); err != nil { // SIGKILL: no cleanup in the helper
		t.Fatal(err)
	}
	_ = hold.Wait()

	primary, inst := acquire(t, dir)
	if !primary {
		t.Fatalf("Acquire after the holder was killed: primary = false, want a stale lock taken over")
	}

	start := helper(t, "start", dir, "signon=kari", "queryexercises=knee")
	if err := start.Run(); err != nil {
		t.Fatalf("second process: %v, want exit status 0", err)
	}
	select {
	case got := <-inst.Args():
		if !slices.Equal(got, []string{"signon=kari", "queryexercises=knee"}) {
			t.Errorf("Args() = %q", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("no forwarded arguments")
	}
}

func TestForwardInProcess(t *testing.T) {
	dir := wintest.TempDir(t)
	primary, inst := acquire(t, dir)
	if !primary {
		t.Fatalf("first Acquire: primary = false")
	}
	for _, args := range [][]string{{"a=1"}, {}, {"b=2", "c"}} {
		if p, _ := acquire(t, dir, args...); p {
			t.Fatalf("second Acquire: primary = true")
		}
		got := <-inst.Args()
		if !slices.Equal(got, args) || got == nil {
			t.Errorf("Args() = %#v, want %#v", got, args)
		}
	}
	if err := inst.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, ok := <-inst.Args(); ok {
		t.Errorf("Args() open after Close")
	}
	if primary, _ := acquire(t, dir); !primary {
		t.Errorf("Acquire after Close: primary = false")
	}
}

// A start gives up when the lock is held but nobody answers, rather than hanging.
func TestNoAnswer(t *testing.T) {
	dir := wintest.TempDir(t)
	primary, inst := acquire(t, dir)
	if !primary {
		t.Fatal("first Acquire: primary = false")
	}
	_ = inst.ln.Close() // the holder hangs: locked, not listening
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, _, err := Acquire(ctx, dir, []string{"x"})
	if err == nil || !strings.Contains(err.Error(), "forwarding to the running instance") {
		t.Errorf("Acquire = %v, want a forwarding error", err)
	}
}
