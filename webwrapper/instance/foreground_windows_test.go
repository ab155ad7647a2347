package instance

import (
	"os"
	"testing"
)

// The real AllowSetForegroundWindow is there and called (Wine stubs it, answering TRUE;
// Windows answers FALSE to a process that may not set the foreground itself, which a test
// binary may be). That forwarding calls it is TestForwardAllowsForeground.
func TestAllowForeground(t *testing.T) {
	if err := allowSetForegroundWindow.Find(); err != nil {
		t.Fatalf("user32 has no AllowSetForegroundWindow: %v", err)
	}
	if !allowForegroundWindow(os.Getpid()) {
		t.Log("AllowSetForegroundWindow refused: this process may not set the foreground itself")
	}
}
