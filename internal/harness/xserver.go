package harness

import (
	"os/exec"
	"syscall"
	"time"
)

// StopXServer ends a started X server (Xvfb) with SIGTERM, which lets it remove its socket
// and lock file from /tmp (a kill would leave them), and kills it when it has not ended
// within 10 seconds.
func StopXServer(cmd *exec.Cmd) {
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}
