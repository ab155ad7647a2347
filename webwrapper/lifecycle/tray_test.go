//go:build linux

package lifecycle

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/partnergate/partnergate/internal/wintest"
	"github.com/partnergate/partnergate/webwrapper/app"
	"github.com/partnergate/partnergate/webwrapper/engine"
	"github.com/partnergate/partnergate/webwrapper/engine/enginetest"
)

// lockedBuffer is a log sink the tray's goroutines may write to while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Without a DBus session bus (Xvfb, a bare X server) the wrapper starts no tray and says
// so, and closing it is quiet: systray v1.12.2 closed its nil DBus connection at Quit,
// a nil-pointer panic that the tray used to recover from and log.
func TestTrayWithoutDBus(t *testing.T) {
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path="+wintest.TempDir(t)+"/no-bus")
	eng := enginetest.New()
	if err := eng.Start(context.Background(), engine.Options{URL: "http://app/"}); err != nil {
		t.Fatal(err)
	}
	var logs lockedBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	a := app.New(eng, app.Options{Version: "2.1.5.0", Logger: log})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go a.Run(ctx)
	stop := startTray(ctx, a, log, "en")
	stop()
	cancel()
	<-a.Done()
	got := logs.String()
	if strings.Contains(got, "panic") || strings.Contains(got, "nil pointer") || !strings.Contains(got, "no tray") {
		t.Errorf("log = %q, want \"no tray\" and no panic", got)
	}
}
