package store

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/partnergate/partnergate/internal/pgtest"
	"github.com/partnergate/partnergate/linkspec"
	"github.com/partnergate/partnergate/personspec"
)

// clock is an injected clock tests move by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

var testKey = []byte("0123456789abcdef0123456789abcdef")

// TestMain runs the tests and then stops the private PostgreSQL cluster the postgres
// backend started.
func TestMain(m *testing.M) { pgtest.Main(m) }

type backend struct {
	name string
	open func(t *testing.T, c *clock) *Store
}

// backends returns SQLite and PostgreSQL, always both: PostgreSQL is the test binary's own
// cluster (internal/pgtest), and a machine without the server programs fails the tests
// rather than testing SQLite alone. Each open gives a fresh, empty database: a temporary
// file, or a new PostgreSQL database dropped when the test ends.
func backends(t *testing.T) []backend {
	t.Helper()
	return []backend{{"sqlite", func(t *testing.T, c *clock) *Store {
		s, err := Open(context.Background(), filepath.Join(t.TempDir(), "data", "app.db"), Options{SSNKey: testKey, Now: c.Now})
		if err != nil {
			t.Fatalf("Open(sqlite) = %v", err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}}, {"postgres", func(t *testing.T, c *clock) *Store {
		t.Helper()
		s, _ := openPostgres(t, c)
		return s
	}}}
}

// openPostgres opens a fresh database on the private cluster and returns the store and the
// database's URL.
func openPostgres(t *testing.T, c *clock) (*Store, string) {
	t.Helper()
	url := pgtest.NewDatabase(t)
	s, err := Open(context.Background(), url, Options{SSNKey: testKey, Now: c.Now})
	if err != nil {
		t.Fatalf("Open(postgres) = %v", err)
	}
	// registered after the database's drop, so it runs first
	t.Cleanup(func() { s.Close() })
	return s, url
}

// queryRow scans one row of query (with ? placeholders) into dest, failing the test on any
// error, so that an assertion never reads a zero value a failed query left behind.
func queryRow(t *testing.T, s *Store, query string, args []any, dest ...any) {
	t.Helper()
	if err := s.db.QueryRow(s.q(query), args...).Scan(dest...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

// TestPostgresBackendIsThePrivateCluster: the postgres backend is a real PostgreSQL server,
// the test binary's own and not the machine's (port 5432); its version is logged, so that
// `go test -v` shows which server the PostgreSQL half ran against.
func TestPostgresBackendIsThePrivateCluster(t *testing.T) {
	var open func(t *testing.T, c *clock) *Store
	for _, b := range backends(t) {
		if b.name == "postgres" {
			open = b.open
		}
	}
	if open == nil {
		t.Fatal("backends() has no postgres backend")
	}
	s := open(t, newClock())
	if s.d.name != "postgres" {
		t.Fatalf("postgres backend's dialect = %q, want postgres", s.d.name)
	}
	var version string
	var port int
	queryRow(t, s, "SELECT version(), current_setting('port')::int", nil, &version, &port)
	if !strings.HasPrefix(version, "PostgreSQL ") {
		t.Errorf("version() = %q, want a PostgreSQL server", version)
	}
	if c := pgtest.Start(t); port == 5432 || c.Addr() != net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) {
		t.Errorf("server port = %d, want the private cluster's (%s)", port, c.Addr())
	}
	t.Logf("postgres backend: %s on port %d", version, port)
}

// TestOpenSQLitePathNeedsNoEscaping: the file: URI is built from the path escaped, so a
// path with URI syntax in it (?, #, %) names that very file.
func TestOpenSQLitePathNeedsNoEscaping(t *testing.T) {
	path := filepath.Join(t.TempDir(), "data?mode=memory#x %41", "app.db")
	s, err := Open(context.Background(), path, Options{SSNKey: testKey})
	if err != nil {
		t.Fatalf("Open(%q) = %v", path, err)
	}
	defer s.Close()
	if _, err := s.EnsureInstructor(context.Background(), "a", "a@example.com", "A", "pw-1"); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
		t.Errorf("database file %q: %v, want it created", path, err)
	}
}

// TestConcurrentOpenMigratesOnce: app service instances starting at once on one fresh
// PostgreSQL database all come up; the advisory lock covers creating schema_migrations too.
func TestConcurrentOpenMigratesOnce(t *testing.T) {
	ctx := context.Background()
	first, url := openPostgres(t, newClock()) // a fresh database, dropped after the test
	const empty = "DROP SCHEMA public CASCADE; CREATE SCHEMA public"
	if _, err := first.db.Exec(empty); err != nil {
		t.Fatalf("emptying the database: %v", err)
	}
	for round := 0; round < 3; round++ {
		errs := make(chan error, 6)
		var wg sync.WaitGroup
		for i := 0; i < cap(errs); i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s, err := Open(ctx, url, Options{SSNKey: testKey})
				if err == nil {
					s.Close()
				}
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Errorf("round %d: concurrent Open = %v", round, err)
			}
		}
		if round < 2 {
			if _, err := first.db.Exec(empty); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func newClock() *clock { return &clock{t: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)} }

func mainLink(employee, org, contact string) Link {
	return Link{Partner: "demo", Endpoint: "url", RequestID: "req-1", Kind: linkspec.KindMain, Payload: &linkspec.Payload{
		EmployeeID: employee, EmployeeFirstname: "Ida", EmployeeLastname: "Berg", EmployeeEmail: "ida@partner.example",
		OrganizationID: org, OrganizationName: "North Clinic",
		Contact: &linkspec.Contact{ID: contact, Firstname: "Ola", Lastname: "Nordmann", Birthdate: "1990-01-01"},
		CaseID:  "case-7",
	}}
}

func goLink(org, contact, email string) Link {
	return Link{Partner: "demo", Endpoint: "payload", RequestID: "req-2", Kind: linkspec.KindGo, Payload: &linkspec.Payload{
		OrganizationID: org, OrganizationName: "North Clinic",
		Contact: &linkspec.Contact{ID: contact, Firstname: "Kari", Lastname: "Hansen", Email: email},
	}}
}

func count(t *testing.T, s *Store, table string) int {
	t.Helper()
	var n int
	if err := s.db.QueryRow("SELECT COUNT(*) FROM " + table).Scan(&n); err != nil {
		t.Fatalf("counting %s: %v", table, err)
	}
	return n
}

func mustResolve(t *testing.T, s *Store, l Link) *Resolved {
	t.Helper()
	r, err := s.ResolveLink(context.Background(), l)
	if err != nil {
		t.Fatalf("ResolveLink = %v", err)
	}
	return r
}

// linkSession exchanges the link's login code: the session its holder gets, which sees the
// link's organization (ScopeOrganization).
func linkSession(t *testing.T, s *Store, r *Resolved) *Session {
	t.Helper()
	ex, err := s.ExchangeCode(context.Background(), r.Code)
	if err != nil {
		t.Fatalf("ExchangeCode = %v", err)
	}
	return ex.Session
}

// eidSession signs a member account in as the national eID sign-in does: its session sees
// the member's plans of every organization (ScopeMember).
func eidSession(t *testing.T, s *Store, account int64) *Session {
	t.Helper()
	in, err := s.NationalEIDSignIn(context.Background(), account)
	if err != nil {
		t.Fatalf("NationalEIDSignIn(%d) = %v", account, err)
	}
	return in.Session
}

func TestMigrationsIdempotent(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "app.db")
	for i := 0; i < 2; i++ {
		s, err := Open(context.Background(), path, Options{SSNKey: testKey})
		if err != nil {
			t.Fatalf("Open #%d = %v", i+1, err)
		}
		known, err := newest()
		if err != nil {
			t.Fatal(err)
		}
		v, err := s.version(context.Background())
		if err != nil || v != known {
			t.Errorf("version() after open #%d = %d, %v, want %d", i+1, v, err, known)
		}
		var mode string
		queryRow(t, s, "PRAGMA journal_mode", nil, &mode)
		if mode != "wal" {
			t.Errorf("journal_mode = %q, want wal", mode)
		}
		var fk int
		queryRow(t, s, "PRAGMA foreign_keys", nil, &fk)
		if fk != 1 {
			t.Errorf("foreign_keys = %d, want 1", fk)
		}
		s.Close()
	}
}

// TestUnicodeCase: the searches and the e-mail comparisons fold case beyond ASCII on both
// databases, as PostgreSQL's lower() does under a UTF-8 LC_CTYPE: "åse" finds "Åse", and
// "ÅSE@x.no" at sign-up collides with "Åse@x.no". SQLite's own lower() maps ASCII only.
func TestUnicodeCase(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			s := b.open(t, newClock())
			org := orgOf(t, s, "org1")
			p, _, _ := mustSelect(t, s, org, personspec.Select{CustomID: "c-åse", Firstname: "Åse", Lastname: "Ørnø"})
			if _, err := s.CreateWorkout(ctx, org, 0, p.ID, 0, "Knee plan for ÅSE ØRNØ"); err != nil {
				t.Fatal(err)
			}
			queryRow(t, s, `INSERT INTO exercises (organization_id, name, category, body_part, equipment, instructions, created_at)
VALUES (?, 'Ærlig Ånd', 'Styrke', 'Hofte', 'Ingen', 'x', 0) RETURNING id`, []any{org}, new(int64))
			for _, text := range []string{"åse ørnø", "ÅSE ØRNØ", "Åse"} {
				if ws, err := s.Workouts(ctx, org, WorkoutQuery{Text: text}); err != nil || len(ws) != 1 {
					t.Errorf("Workouts(Text: %q) = %d, %v, want the plan for ÅSE ØRNØ", text, len(ws), err)
				}
			}
			for _, q := range []ExerciseQuery{{Text: "ærlig ånd"}, {Text: "ÆRLIG"}, {Category: "styrke", BodyPart: "HOFTE", Equipment: "ingen"}} {
				if es, err := s.Exercises(ctx, org, q); err != nil || len(es) != 1 || es[0].Name != "Ærlig Ånd" {
					t.Errorf("Exercises(%+v) = %+v, %v, want Ærlig Ånd", q, es, err)
				}
			}

			if _, err := s.EnsureInstructor(ctx, "coach", "Åse@x.no", "Coach", "pw-1"); err != nil {
				t.Fatal(err)
			}
			for _, login := range []string{"åse@x.no", "ÅSE@X.NO"} {
				if _, err := s.SignIn(ctx, login, "pw-1", ""); err != nil {
					t.Errorf("SignIn(%q) = %v, want the account of Åse@x.no", login, err)
				}
			}
			r := mustResolve(t, s, mainLink("e1", "org1", "c1"))
			ex, err := s.ExchangeCode(ctx, r.Code)
			if err != nil {
				t.Fatal(err)
			}
			for _, email := range []string{"åse@x.no", "ÅSE@x.no"} {
				if _, err := s.CreateInstructorForPending(ctx, ex.Token, "ida", email, "Ida", "pw-2"); !errors.Is(err, ErrEmailTaken) {
					t.Errorf("CreateInstructorForPending(e-mail %q) = %v, want ErrEmailTaken (Åse@x.no has it)", email, err)
				}
			}
		})
	}
}

// TestCaseMapping: the store tells whether the database maps case beyond ASCII, which the
// app service warns about at start: SQLite does (the store's own lower), PostgreSQL under
// a UTF-8 LC_CTYPE does, and under LC_CTYPE C it maps ASCII only.
func TestCaseMapping(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name        string
		open        func(t *testing.T) *Store
		wantUnicode bool
		wantCtype   string
	}{
		{"sqlite", func(t *testing.T) *Store { return backends(t)[0].open(t, newClock()) }, true, ""},
		{"postgres C.UTF-8", func(t *testing.T) *Store { return backends(t)[1].open(t, newClock()) }, true, "C.UTF-8"},
		{"postgres C", func(t *testing.T) *Store {
			s, err := Open(ctx, pgtest.NewDatabase(t, "LC_CTYPE 'C' TEMPLATE template0"), Options{SSNKey: testKey, Now: newClock().Now})
			if err != nil {
				t.Fatalf("Open(postgres, LC_CTYPE C) = %v", err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}, false, "C"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			unicode, ctype, err := tc.open(t).CaseMapping(ctx)
			if err != nil || unicode != tc.wantUnicode || ctype != tc.wantCtype {
				t.Errorf("CaseMapping = %v, %q, %v; want %v, %q", unicode, ctype, err, tc.wantUnicode, tc.wantCtype)
			}
		})
	}
}
