package wintest

import (
	"time"

	"github.com/Microsoft/go-winio"
)

// PrimePipe makes a throwaway connection to the named pipe at path: under Wine the first
// client of a new go-winio listener lands on a placeholder instance and hangs until its
// time limit, every later one connects at once. On Windows it is a connection the server
// closes unanswered.
func PrimePipe(path string) {
	timeout := 200 * time.Millisecond
	if c, err := winio.DialPipe(path, &timeout); err == nil {
		_ = c.Close()
	}
}
