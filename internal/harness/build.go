package harness

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// builds holds the programs built for this test process, in one temporary folder that
// Main removes after the tests: a race-enabled caddy is about 100 MB, and every package's
// test process builds its own.
var builds struct {
	mu      sync.Mutex
	managed bool // Main runs the tests, so the folder will be removed
	dir     string
	bins    map[string]*build
}

type build struct {
	once sync.Once
	path string
	err  error
}

// Main builds caddy and the main packages prebuild names (as Binary takes them), runs the
// package's tests, then the cleanups of Shared resources, then removes the programs the
// harness built, and exits. Every package that starts the gateway or another built program
// calls it from its TestMain, so that a run leaves nothing behind:
//
//	func TestMain(m *testing.M) { harness.Main(m) }
//
// The builds run before the tests so that they do not count against go test's -timeout:
// a race-enabled caddy from a cold build cache takes minutes on a small machine.
func Main(m *testing.M, prebuild ...string) {
	os.Exit(run(m, append([]string{"./cmd/caddy"}, prebuild...)...))
}

// run is Main with the packages to build before the tests.
func run(m *testing.M, prebuild ...string) int {
	builds.mu.Lock()
	builds.managed = true
	builds.mu.Unlock()
	for _, pkg := range prebuild {
		// a failed build fails the tests that need it, with its output
		b := buildOf(pkg)
		b.once.Do(func() { b.path, b.err = goBuild(pkg) })
	}

	code := m.Run()
	if !shared.close() {
		code = 1
	}
	builds.mu.Lock()
	defer builds.mu.Unlock()
	if builds.dir != "" {
		if err := os.RemoveAll(builds.dir); err != nil {
			fmt.Fprintf(os.Stderr, "harness: removing the built programs: %v\n", err)
			code = 1
		}
	}
	return code
}

// caddyBinary returns the path of a caddy built with -race from this checkout's cmd/caddy
// (the main package xcaddy.sh builds), building it on the first call of the test process.
func caddyBinary(t testing.TB) string {
	t.Helper()
	return Binary(t, "./cmd/caddy")
}

// Binary returns the path of the main package pkg (relative to the module root, as
// "./cmd/partnerlink") built with -race, building it on the first call of the test process
// into the folder Main removes. The race detector is the point: the module's code runs in
// these child processes, where the test binary's own -race does not reach; StartCaddy
// fails a test whose caddy reported a data race.
func Binary(t testing.TB, pkg string) string {
	t.Helper()
	builds.mu.Lock()
	managed := builds.managed
	builds.mu.Unlock()
	if !managed {
		t.Fatalf("harness: building %s outside harness.Main: add `func TestMain(m *testing.M) { harness.Main(m) }` to the package, so that the build is removed after the tests", pkg)
	}
	b := buildOf(pkg)
	b.once.Do(func() { b.path, b.err = goBuild(pkg) })
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// buildOf returns the build of pkg, new on the first call.
func buildOf(pkg string) *build {
	builds.mu.Lock()
	defer builds.mu.Unlock()
	if builds.bins == nil {
		builds.bins = map[string]*build{}
	}
	b := builds.bins[pkg]
	if b == nil {
		b = &build{}
		builds.bins[pkg] = b
	}
	return b
}

// goBuild builds pkg with -race into the process's build folder.
func goBuild(pkg string) (string, error) {
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	builds.mu.Lock()
	if builds.dir == "" {
		builds.dir, err = os.MkdirTemp("", "partnergate-build-")
	}
	dir := builds.dir
	builds.mu.Unlock()
	if err != nil {
		return "", fmt.Errorf("building %s: %v", pkg, err)
	}
	bin := filepath.Join(dir, filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-race", "-o", bin, pkg)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building %s with -race: %v\n%s", pkg, err, out)
	}
	return bin, nil
}
