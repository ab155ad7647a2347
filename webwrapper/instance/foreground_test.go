package instance

import (
	"os"
	"slices"
	"testing"

	"github.com/partnergate/partnergate/internal/wintest"
)

// A later start lets the running instance take the foreground before it hands over its
// command line: the instance brings its window to the front for it, which Windows refuses
// to a program in the background unless the foreground one allows it.
func TestForwardAllowsForeground(t *testing.T) {
	var allowed []int
	allowForeground = func(pid int) bool { allowed = append(allowed, pid); return true }
	t.Cleanup(func() { allowForeground = allowForegroundWindow })
	dir := wintest.TempDir(t)
	primary, inst := acquire(t, dir)
	if !primary {
		t.Fatal("first Acquire: primary = false")
	}
	defer inst.Close()
	if p, _ := acquire(t, dir, "a=1"); p {
		t.Fatal("second Acquire: primary = true")
	}
	<-inst.Args()
	// Once per try: a forwarding that fails (under Wine the first connection to a new pipe
	// listener may) is tried again.
	if len(allowed) == 0 || slices.ContainsFunc(allowed, func(pid int) bool { return pid != os.Getpid() }) {
		t.Errorf("the later start allowed %v to take the foreground, want the running instance %d", allowed, os.Getpid())
	}
}
