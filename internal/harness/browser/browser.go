// Package browser starts the headless chromium of the browser tests (integration/e2e,
// integration/kit), apart from package harness so that the tests that need no browser do
// not build chromedp.
package browser

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chromiumPath is where Debian's chromium package installs the browser.
const chromiumPath = "/usr/bin/chromium"

// New starts a headless chromium with a fresh profile and returns its first tab's
// context; opts are added to the allocator's options (a window size). The browser ends
// with the test, and leaves nothing behind: the profile and chromium's own temporary files
// (its singleton socket folder, org.chromium.Chromium.*, which a killed chromium leaves in
// TMPDIR) are in t.TempDir, removed after the browser has exited.
func New(t testing.TB, opts ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Fatalf("chromium not found at %s: install Debian's chromium package (apt-get install chromium, which scripts/test-deps.sh does) and run again", chromiumPath)
	}
	// Registered before the cleanup below, so removed after it (cleanups run last first).
	dir := t.TempDir()
	all := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath),
		chromedp.Headless,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(dir + "/profile"),
		chromedp.Env("TMPDIR=" + dir),
	}
	if os.Geteuid() == 0 {
		all = append(all, chromedp.NoSandbox) // chromium refuses to run its sandbox as root
	}
	all = append(all, opts...)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), all...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		// Close the browser gracefully, so that it removes its own files; then cancel the
		// allocator, which kills a browser that did not close and waits for it to exit, so
		// that nothing writes into dir while t.TempDir removes it.
		c, stop := context.WithTimeout(ctx, 10*time.Second)
		_ = chromedp.Cancel(c)
		stop()
		cancel()
		cancelAlloc()
	})
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	return ctx
}
