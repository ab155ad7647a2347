// Package browser starts the headless chromium of the browser tests (integration/e2e,
// integration/kit), apart from package harness so that the tests that need no browser do
// not build chromedp.
package browser

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
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

// TrustRoot is the option of a browser that trusts the CA certificate in caFile (PEM) as a
// root, the way a person's computer trusts a CA its administrator added: in the user's NSS
// database ($HOME/.pki/nssdb), where Chromium on Linux keeps the roots a user added, made
// with NSS's certutil in a home folder of the browser's own. Nothing else is relaxed: a
// certificate of another CA, for another name or expired is refused as always.
func TrustRoot(t testing.TB, caFile string) chromedp.ExecAllocatorOption {
	t.Helper()
	certutil, err := exec.LookPath("certutil")
	if err != nil {
		t.Fatalf("certutil not found: install Debian's libnss3-tools package (apt-get install libnss3-tools, which scripts/test-deps.sh does) and run again")
	}
	home := t.TempDir()
	db := "sql:" + filepath.Join(home, ".pki", "nssdb")
	if err := os.MkdirAll(filepath.Join(home, ".pki", "nssdb"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"-N", "-d", db, "--empty-password"},
		{"-A", "-d", db, "-n", "partnergate test root", "-t", "C,,", "-i", caFile},
	} {
		if out, err := exec.Command(certutil, args...).CombinedOutput(); err != nil {
			t.Fatalf("certutil %v: %v\n%s", args, err, out)
		}
	}
	return chromedp.Env("HOME=" + home)
}

// Resolve is the option of a browser that resolves host to addr (an IP address), as the
// name's DNS record would in production; other names resolve as usual.
func Resolve(host, addr string) chromedp.ExecAllocatorOption {
	return chromedp.Flag("host-resolver-rules", "MAP "+host+" "+addr)
}
