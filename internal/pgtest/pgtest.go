// Package pgtest gives a test binary its own PostgreSQL: a private, throwaway cluster
// (initdb in a temporary folder, postgres on a free loopback port, trust authentication),
// started at the first test that asks for a database and removed when the binary's tests
// end. It is the PostgreSQL counterpart of plugins/nonce/redistest, so that `go test` alone
// tests the PostgreSQL half of the app service on any machine with the server binaries
// installed, and never touches the machine's own PostgreSQL.
//
// A package that uses it calls Main from its TestMain. Missing binaries fail the tests that
// need PostgreSQL, with what to install; nothing falls back to another database.
package pgtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // driver "pgx"

	"github.com/partnergate/partnergate/internal/freeport"
)

// install is what the failure messages tell a newcomer to do.
const install = "install Debian's postgresql package (apt-get install postgresql, which scripts/test-deps.sh does) and run again"

// dirPrefix names the cluster folders in os.TempDir, so that a later run finds the folder of
// a test binary that was killed before its TestMain could remove it.
const dirPrefix = "partnergate-pgtest-"

var (
	mainRunning bool

	once     sync.Once
	cluster  *Cluster
	startErr error
)

// Cluster is one running postgres server and its folder.
type Cluster struct {
	dir     string
	port    int
	version string
	cmd     *exec.Cmd
	waited  chan struct{}
}

// Main runs the package's tests and then stops the cluster, if a test started one, and
// removes its folder. Call it from TestMain: pgtest.Main(m).
func Main(m *testing.M) {
	mainRunning = true
	code := m.Run()
	if cluster != nil {
		if err := cluster.stop(); err != nil {
			fmt.Fprintf(os.Stderr, "pgtest: %v\n", err)
			if code == 0 {
				code = 1
			}
		}
	}
	os.Exit(code)
}

// Start returns the binary's cluster, starting it at the first call; a cluster that cannot
// start fails t (and every later caller) with the reason.
func Start(t testing.TB) *Cluster {
	t.Helper()
	if !mainRunning {
		t.Fatal("pgtest: the package's TestMain must call pgtest.Main(m), which stops the cluster")
	}
	once.Do(func() { cluster, startErr = start() })
	if startErr != nil {
		t.Fatalf("pgtest: %v", startErr)
	}
	return cluster
}

// NewDatabase creates a fresh, empty database on the binary's cluster and returns its URL;
// the database is dropped when t ends. options are CREATE DATABASE's, such as
// "LC_CTYPE 'C' TEMPLATE template0".
func NewDatabase(t testing.TB, options ...string) string {
	t.Helper()
	c := Start(t)
	b := make([]byte, 6)
	rand.Read(b)
	name := "test_" + hex.EncodeToString(b)
	if err := c.exec(strings.Join(append([]string{"CREATE DATABASE", name}, options...), " ")); err != nil {
		t.Fatalf("pgtest: creating database %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := c.exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)"); err != nil {
			t.Errorf("pgtest: dropping database %s: %v", name, err)
		}
	})
	return c.URL(name)
}

// URL is the connection URL of the named database on this cluster.
func (c *Cluster) URL(database string) string {
	return "postgres://postgres@" + c.Addr() + "/" + database + "?sslmode=disable"
}

// Addr is the server's host:port.
func (c *Cluster) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(c.port)) }

// Version is the server's version as it reports it (SHOW server_version).
func (c *Cluster) Version() string { return c.version }

func (c *Cluster) exec(stmt string) error {
	db, err := sql.Open("pgx", c.URL("postgres"))
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = db.ExecContext(ctx, stmt)
	return err
}

// binDir finds initdb and postgres: on PATH, else in Debian's /usr/lib/postgresql/<major>/bin
// (the newest major), where the postgresql package puts them off PATH.
func binDir() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		dir := filepath.Dir(p)
		if _, err := os.Stat(filepath.Join(dir, "postgres")); err == nil {
			return dir, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return major(dirs[i]) > major(dirs[j]) })
	for _, dir := range dirs {
		_, e1 := os.Stat(filepath.Join(dir, "initdb"))
		_, e2 := os.Stat(filepath.Join(dir, "postgres"))
		if e1 == nil && e2 == nil {
			return dir, nil
		}
	}
	return "", errors.New("the PostgreSQL server programs (initdb, postgres) are not on PATH nor in /usr/lib/postgresql/*/bin: " + install)
}

func major(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

// runAs is who runs initdb and postgres: the current user, or, for root (which both refuse),
// the postgres system user the Debian package creates.
func runAs() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, errors.New("running as root, and PostgreSQL refuses root, but there is no postgres user to run it as: " + install)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("user postgres has uid %q, gid %q", u.Uid, u.Gid)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func start() (*Cluster, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	cred, err := runAs()
	if err != nil {
		return nil, err
	}
	removeStale()
	dir, err := os.MkdirTemp("", dirPrefix)
	if err != nil {
		return nil, err
	}
	c := &Cluster{dir: dir}
	if err := c.init(bin, cred); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	// The port is free when chosen but may be taken before postgres binds it: try again.
	for attempt := 0; attempt < 3; attempt++ {
		if err = c.run(bin, cred); err == nil {
			return c, nil
		}
	}
	os.RemoveAll(dir)
	return nil, err
}

// init writes the owner file and runs initdb into dir/data.
func (c *Cluster) init(bin string, cred *syscall.Credential) error {
	if err := os.WriteFile(filepath.Join(c.dir, "owner"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return err
	}
	if cred != nil {
		if err := os.Chown(c.dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return err
		}
	}
	// LC_CTYPE C.UTF-8, as docs/operations.md asks of the production database: lower()
	// maps case by it, and under C it maps ASCII only, so that "åse" would not find "Åse".
	// Collation stays C (byte order), the same on every machine.
	cmd := c.command(filepath.Join(bin, "initdb"), cred, "--pgdata", filepath.Join(c.dir, "data"),
		"--username", "postgres", "--auth", "trust", "--encoding", "UTF8", "--locale", "C", "--lc-ctype", "C.UTF-8", "--no-sync")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("initdb in %s: %v: %s", c.dir, err, tail(out))
	}
	return nil
}

// run starts postgres on a free port and waits until it answers.
func (c *Cluster) run(bin string, cred *syscall.Credential) error {
	port, err := freeport.Port()
	if err != nil {
		return err
	}
	c.port = port
	logPath := filepath.Join(c.dir, "postgres.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logFile.Close()
	// Durability is of no use to a throwaway cluster; without it the tests run faster.
	cmd := c.command(filepath.Join(bin, "postgres"), cred, "-D", filepath.Join(c.dir, "data"),
		"-p", strconv.Itoa(c.port), "-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="+c.dir,
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// The server must not outlive the test binary, even one killed by go test's timeout,
	// before Main could stop it.
	cmd.SysProcAttr.Pdeathsig = syscall.SIGQUIT
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting postgres: %v", err)
	}
	c.cmd, c.waited = cmd, make(chan struct{})
	go func() { _ = cmd.Wait(); close(c.waited) }()

	db, err := sql.Open("pgx", c.URL("postgres"))
	if err != nil {
		c.kill()
		return err
	}
	defer db.Close()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err = db.QueryRowContext(ctx, "SHOW server_version").Scan(&c.version)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-c.waited:
			log, _ := os.ReadFile(logPath)
			return fmt.Errorf("postgres exited: %s", tail(log))
		default:
		}
		if time.Now().After(deadline) {
			c.kill()
			log, _ := os.ReadFile(logPath)
			return fmt.Errorf("postgres on port %d did not answer: %v: %s", c.port, err, tail(log))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (c *Cluster) command(path string, cred *syscall.Credential, args ...string) *exec.Cmd {
	cmd := exec.Command(path, args...)
	cmd.Dir = c.dir
	// No PG* variables or locale of the caller's: the flags say everything.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "LC_ALL=C", "TZ=UTC"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	return cmd
}

// stop shuts the server down (fast shutdown: SIGINT) and removes the folder.
func (c *Cluster) stop() error {
	if c.cmd != nil {
		_ = c.cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-c.waited:
		case <-time.After(60 * time.Second):
			c.kill()
		}
	}
	if err := os.RemoveAll(c.dir); err != nil {
		return fmt.Errorf("removing the cluster folder: %v", err)
	}
	return nil
}

func (c *Cluster) kill() {
	_ = c.cmd.Process.Kill()
	<-c.waited
}

// removeStale removes the folders of earlier test binaries that no longer run (killed
// before their TestMain ended; their servers died with them).
func removeStale() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+"*"))
	for _, dir := range dirs {
		b, err := os.ReadFile(filepath.Join(dir, "owner"))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 0 {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			os.RemoveAll(dir)
		}
	}
}

func tail(b []byte) string {
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return strings.TrimSpace(string(b))
}
