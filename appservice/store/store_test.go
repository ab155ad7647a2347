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

func TestMigrationsIdempotent(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "app.db")
	for i := 0; i < 2; i++ {
		s, err := Open(context.Background(), path, Options{SSNKey: testKey})
		if err != nil {
			t.Fatalf("Open #%d = %v", i+1, err)
		}
		_, names, err := s.gooseMigrations()
		if err != nil {
			t.Fatal(err)
		}
		v, err := s.SchemaVersion(context.Background())
		if err != nil || v != len(names) {
			t.Errorf("SchemaVersion() after open #%d = %d, %v, want %d", i+1, v, err, len(names))
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

func TestResolveOrganizationAndContact(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			s := b.open(t, newClock())

			first := mustResolve(t, s, mainLink("e1", "org1", "c1"))
			if !first.PersonCreated {
				t.Errorf("first link: PersonCreated = false, want true")
			}

			t.Run("organization name kept current", func(t *testing.T) {
				l := mainLink("e1", "org1", "c1")
				l.Payload.OrganizationName = "North Clinic (renamed)"
				r := mustResolve(t, s, l)
				if r.OrganizationID != first.OrganizationID {
					t.Errorf("organization id = %d, want %d", r.OrganizationID, first.OrganizationID)
				}
				var name string
				queryRow(t, s, "SELECT name FROM organizations WHERE id = ?", []any{r.OrganizationID}, &name)
				if name != "North Clinic (renamed)" {
					t.Errorf("organization name = %q, want %q", name, "North Clinic (renamed)")
				}
			})

			t.Run("same partner organization id in another partner is another organization", func(t *testing.T) {
				l := mainLink("e1", "org1", "c1")
				l.Partner = "other"
				r := mustResolve(t, s, l)
				if r.OrganizationID == first.OrganizationID {
					t.Errorf("organization of partner other = %d, want a new one", r.OrganizationID)
				}
			})

			t.Run("contact by partner id, fields updated", func(t *testing.T) {
				l := mainLink("e1", "org1", "c1")
				l.Payload.Contact.Lastname = "Nordmann-Berg"
				l.Payload.Contact.SSN = "010190 12345"
				r := mustResolve(t, s, l)
				if r.PersonID != first.PersonID || r.PersonCreated {
					t.Errorf("person = %d (created %v), want %d (not created)", r.PersonID, r.PersonCreated, first.PersonID)
				}
				c, err := s.Person(ctx, r.OrganizationID, r.PersonID)
				if err != nil || c.Lastname != "Nordmann-Berg" {
					t.Fatalf("person = %+v, %v, want lastname %q", c, err, "Nordmann-Berg")
				}
			})

			t.Run("contact by ssn under a new partner id", func(t *testing.T) {
				l := mainLink("e1", "org1", "c1-new")
				l.Payload.Contact.SSN = "010190-12345"
				r := mustResolve(t, s, l)
				if r.PersonID != first.PersonID || r.PersonCreated {
					t.Errorf("person = %d (created %v), want %d found by ssn", r.PersonID, r.PersonCreated, first.PersonID)
				}
				c, err := s.Person(ctx, r.OrganizationID, r.PersonID)
				if err != nil || strings.Join(c.PartnerIDs, ",") != "c1,c1-new" {
					t.Errorf("person partner ids = %+v, %v, want c1 and the new c1-new", c, err)
				}
			})

			t.Run("link without ssn keeps the known hash", func(t *testing.T) {
				mustResolve(t, s, mainLink("e1", "org1", "c1-new"))
				l := mainLink("e1", "org1", "c1-newer")
				l.Payload.Contact.SSN = "01019012345"
				r := mustResolve(t, s, l)
				if r.PersonID != first.PersonID {
					t.Errorf("person = %d, want %d found by the kept ssn hash", r.PersonID, first.PersonID)
				}
			})

			t.Run("ssn matches across the partner's organizations, not across partners", func(t *testing.T) {
				l := mainLink("e1", "org2", "c9")
				l.Payload.Contact.SSN = "01019012345"
				r := mustResolve(t, s, l)
				if r.PersonID != first.PersonID || r.PersonCreated {
					t.Errorf("person in org2 = %d (created %v), want %d of org1", r.PersonID, r.PersonCreated, first.PersonID)
				}
				l.Partner = "other"
				r = mustResolve(t, s, l)
				if r.PersonID == first.PersonID || !r.PersonCreated {
					t.Errorf("person of partner other = %d (created %v), want a new person", r.PersonID, r.PersonCreated)
				}
			})

			t.Run("unknown contact is created", func(t *testing.T) {
				l := mainLink("e1", "org1", "c2")
				l.Payload.Contact.SSN = "999"
				r := mustResolve(t, s, l)
				if !r.PersonCreated || r.PersonID == first.PersonID {
					t.Errorf("person = %d (created %v), want a new person", r.PersonID, r.PersonCreated)
				}
			})

			t.Run("ssn never stored in clear", func(t *testing.T) {
				rows, err := s.db.Query("SELECT * FROM persons")
				if err != nil {
					t.Fatal(err)
				}
				defer rows.Close()
				cols, _ := rows.Columns()
				for rows.Next() {
					vals := make([]any, len(cols))
					ptrs := make([]any, len(cols))
					for i := range vals {
						ptrs[i] = &vals[i]
					}
					if err := rows.Scan(ptrs...); err != nil {
						t.Fatal(err)
					}
					for i, v := range vals {
						var str string
						switch v := v.(type) {
						case string:
							str = v
						case []byte:
							str = string(v)
						}
						if strings.Contains(str, "12345") {
							t.Errorf("persons.%s holds the identity number in clear", cols[i])
						}
					}
				}
			})

			t.Run("caseId kept with the link", func(t *testing.T) {
				r := mustResolve(t, s, mainLink("e1", "org1", "c2"))
				var caseID string
				queryRow(t, s, "SELECT case_id FROM links WHERE id = ?", []any{r.LinkID}, &caseID)
				if caseID != "case-7" {
					t.Errorf("links.case_id = %q, want %q", caseID, "case-7")
				}
			})
		})
	}
}

func TestMainClientFirstSightThenSSO(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			s := b.open(t, newClock())
			if created, err := s.EnsureInstructor(ctx, "Instructor", "coach@service.example", "Coach", "s3cret-pass"); err != nil || !created {
				t.Fatalf("EnsureInstructor = %v, %v, want created", created, err)
			}

			r := mustResolve(t, s, mainLink("e1", "org1", "c1"))
			if r.AccountID != 0 {
				t.Fatalf("first sight: AccountID = %d, want 0 (sign-in needed)", r.AccountID)
			}
			ex, err := s.ExchangeCode(ctx, r.Code)
			if err != nil {
				t.Fatalf("ExchangeCode = %v", err)
			}
			if !ex.Session.Pending || ex.Session.Employee == nil || ex.Session.Employee.Email != "ida@partner.example" {
				t.Fatalf("first sight session = %+v, want pending for the employee", ex.Session)
			}

			if _, err := s.SignIn(ctx, "instructor", "wrong", ex.Token); !errors.Is(err, ErrBadCredentials) {
				t.Errorf("SignIn(wrong password) = %v, want ErrBadCredentials", err)
			}
			if _, err := s.SignIn(ctx, "nobody", "s3cret-pass", ""); !errors.Is(err, ErrBadCredentials) {
				t.Errorf("SignIn(unknown user) = %v, want ErrBadCredentials", err)
			}
			in, err := s.SignIn(ctx, "COACH@service.example", "s3cret-pass", ex.Token)
			if err != nil {
				t.Fatalf("SignIn(by e-mail) = %v", err)
			}
			// Signing in does not link: the person confirms first (login CSRF).
			if !in.Session.ConfirmLink || in.Session.Account == nil || in.Session.Employee == nil || in.Session.Person == nil || in.Session.Person.Firstname != "Ola" {
				t.Fatalf("SignIn session = %+v, want one asking to confirm the link, with the contact in focus", in.Session)
			}
			if again := mustResolve(t, s, mainLink("e1", "org1", "c1")); again.AccountID != 0 {
				t.Fatalf("link before the confirmation: AccountID = %d, want 0 (not linked yet)", again.AccountID)
			}
			linked, err := s.ConfirmLink(ctx, in.Token, true)
			if err != nil || !linked {
				t.Fatalf("ConfirmLink(accept) = %v, %v, want linked", linked, err)
			}
			if _, err := s.ConfirmLink(ctx, in.Token, true); !errors.Is(err, ErrNoSession) {
				t.Errorf("ConfirmLink(settled) = %v, want ErrNoSession", err)
			}
			in.Session, err = s.Session(ctx, in.Token)
			if err != nil || in.Session.ConfirmLink || in.Session.Person == nil {
				t.Fatalf("session after confirming = %+v, %v, want signed in with the contact in focus", in.Session, err)
			}
			if in.Session.Organization == nil || in.Session.Organization.Name != "North Clinic" || in.Session.CaseID != "case-7" {
				t.Errorf("signed-in session organization %+v case %q, want North Clinic, case-7", in.Session.Organization, in.Session.CaseID)
			}
			if _, err := s.Session(ctx, ex.Token); !errors.Is(err, ErrNoSession) {
				t.Errorf("Session(pending token after sign-in) = %v, want ErrNoSession", err)
			}

			r2 := mustResolve(t, s, mainLink("e1", "org1", "c2"))
			if r2.AccountID != in.Session.Account.ID {
				t.Fatalf("second link: AccountID = %d, want %d (single sign-on)", r2.AccountID, in.Session.Account.ID)
			}
			ex2, err := s.ExchangeCode(ctx, r2.Code)
			if err != nil || ex2.Session.Pending || ex2.Session.Account.Username != "instructor" {
				t.Fatalf("second exchange = %+v, %v, want a signed-in instructor", ex2, err)
			}

			t.Run("first link wins", func(t *testing.T) {
				if _, err := s.EnsureInstructor(ctx, "other", "other@service.example", "Other", "pass-2"); err != nil {
					t.Fatal(err)
				}
				// a code issued before the link, exchanged for a pending session, then used by another account
				r := mustResolve(t, s, mainLink("e2", "org1", "c1"))
				ex, _ := s.ExchangeCode(ctx, r.Code)
				exOther, _ := s.ExchangeCode(ctx, mustResolve(t, s, mainLink("e2", "org1", "c1")).Code)
				first, err := s.SignIn(ctx, "instructor", "s3cret-pass", ex.Token)
				if err != nil {
					t.Fatal(err)
				}
				other, err := s.SignIn(ctx, "other", "pass-2", exOther.Token)
				if err != nil || !other.Session.ConfirmLink {
					t.Fatalf("SignIn(other) = %v, session %+v, want one asking to confirm", err, other)
				}
				if linked, err := s.ConfirmLink(ctx, first.Token, true); err != nil || !linked {
					t.Fatalf("ConfirmLink(first) = %v, %v, want linked", linked, err)
				}
				if linked, err := s.ConfirmLink(ctx, other.Token, true); err != nil || linked {
					t.Fatalf("ConfirmLink(second) = %v, %v, want not linked: the first link wins", linked, err)
				}
				var acct int64
				queryRow(t, s, "SELECT account_id FROM employees WHERE id = ?", []any{r.EmployeeID}, &acct)
				if acct != first.Session.Account.ID {
					t.Errorf("employee account = %d, want %d", acct, first.Session.Account.ID)
				}
				sess, err := s.Session(ctx, other.Token)
				if err != nil || sess.ConfirmLink || sess.Employee != nil || sess.Person != nil {
					t.Errorf("second account's session = %+v, %v, want signed in without the link's employee and contact", sess, err)
				}
			})

			t.Run("declined", func(t *testing.T) {
				r := mustResolve(t, s, mainLink("e3", "org1", "c1"))
				ex, _ := s.ExchangeCode(ctx, r.Code)
				in, err := s.SignIn(ctx, "instructor", "s3cret-pass", ex.Token)
				if err != nil {
					t.Fatal(err)
				}
				if linked, err := s.ConfirmLink(ctx, in.Token, false); err != nil || linked {
					t.Fatalf("ConfirmLink(decline) = %v, %v, want not linked", linked, err)
				}
				sess, err := s.Session(ctx, in.Token)
				if err != nil || sess.Account == nil || sess.ConfirmLink || sess.Employee != nil || sess.Organization != nil || sess.Person != nil {
					t.Errorf("session after declining = %+v, %v, want signed in with nothing of the link", sess, err)
				}
				if again := mustResolve(t, s, mainLink("e3", "org1", "c1")); again.AccountID != 0 {
					t.Errorf("link after declining: AccountID = %d, want 0", again.AccountID)
				}
			})
		})
	}
}

func TestGoMemberCreatedOnce(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			s := b.open(t, newClock())
			r := mustResolve(t, s, goLink("org1", "c1", "kari@example.com"))
			if !r.AccountCreated || r.AccountID == 0 {
				t.Fatalf("first Go link: AccountCreated %v AccountID %d, want a new account", r.AccountCreated, r.AccountID)
			}
			ex, err := s.ExchangeCode(ctx, r.Code)
			if err != nil || ex.Session.Pending || ex.Session.Account.Role != RoleMember || ex.Session.Account.DisplayName != "Kari Hansen" {
				t.Fatalf("Go exchange = %+v, %v, want a member session for Kari Hansen", ex, err)
			}
			r2 := mustResolve(t, s, goLink("org1", "c1", "kari.new@example.com"))
			if r2.AccountCreated || r2.AccountID != r.AccountID {
				t.Errorf("second Go link: AccountCreated %v AccountID %d, want existing %d", r2.AccountCreated, r2.AccountID, r.AccountID)
			}
			var email string
			queryRow(t, s, "SELECT email FROM accounts WHERE id = ?", []any{r.AccountID}, &email)
			if email != "kari.new@example.com" {
				t.Errorf("member e-mail = %q, want the latest %q", email, "kari.new@example.com")
			}
			if _, err := s.SignIn(ctx, "kari.new@example.com", "", ""); !errors.Is(err, ErrBadCredentials) {
				t.Errorf("SignIn(member) = %v, want ErrBadCredentials: members have no password", err)
			}
		})
	}
}

func TestResolveRollsBack(t *testing.T) {
	for _, b := range backends(t) {
		for _, step := range []string{"organization", "contact", "user", "link"} {
			t.Run(b.name+"/"+step, func(t *testing.T) {
				s := b.open(t, newClock())
				boom := errors.New("injected failure")
				s.hook = func(name string) error {
					if name == step {
						return boom
					}
					return nil
				}
				for _, l := range []Link{mainLink("e1", "org1", "c1"), goLink("org1", "c1", "k@example.com")} {
					l.RequestID, l.OnceUntil = "req-"+string(l.Kind), newClock().Now().Add(2*time.Minute)
					if _, err := s.ResolveLink(context.Background(), l); !errors.Is(err, boom) {
						t.Fatalf("ResolveLink(%s) = %v, want the injected failure", l.Kind, err)
					}
				}
				for _, table := range []string{"organizations", "persons", "person_identities", "person_organizations", "employees", "accounts", "memberships", "links", "login_codes", "used_requests"} {
					if n := count(t, s, table); n != 0 {
						t.Errorf("after failure at %s: %s has %d rows, want 0", step, table, n)
					}
				}
			})
		}
	}
}

// TestRequestIDSingleUse: a link whose request id is single-use (a gateway assertion binds
// it) is resolved once; a replay mints no code, also when replays race, and a failed
// resolution does not use the id up.
func TestRequestIDSingleUse(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			c := newClock()
			s := b.open(t, c)
			once := func(id string) Link {
				l := mainLink("e1", "org1", "c1")
				l.RequestID, l.OnceUntil = id, c.Now().Add(2*time.Minute)
				return l
			}
			boom := errors.New("injected failure")
			s.hook = func(name string) error {
				if name == "link" {
					return boom
				}
				return nil
			}
			if _, err := s.ResolveLink(ctx, once("req-a")); !errors.Is(err, boom) {
				t.Fatalf("ResolveLink(failing) = %v", err)
			}
			s.hook = nil
			if _, err := s.ResolveLink(ctx, once("req-a")); err != nil {
				t.Fatalf("ResolveLink(after a failed attempt) = %v, want resolved: the failure used nothing up", err)
			}
			if _, err := s.ResolveLink(ctx, once("req-a")); !errors.Is(err, ErrRequestReplayed) {
				t.Fatalf("ResolveLink(replay) = %v, want ErrRequestReplayed", err)
			}
			if n := count(t, s, "login_codes"); n != 1 {
				t.Errorf("login codes after a replay = %d, want 1", n)
			}

			var wg sync.WaitGroup
			results := make(chan error, 6)
			for range cap(results) {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, err := s.ResolveLink(ctx, once("req-race"))
					results <- err
				}()
			}
			wg.Wait()
			close(results)
			wins := 0
			for err := range results {
				switch {
				case err == nil:
					wins++
				case !errors.Is(err, ErrRequestReplayed):
					t.Errorf("racing replay = %v", err)
				}
			}
			if wins != 1 {
				t.Errorf("racing replays resolved %d times, want 1", wins)
			}

			// Once the assertion has expired, the row is cleared or taken over.
			c.Add(3 * time.Minute)
			if _, err := s.ResolveLink(ctx, once("req-a")); err != nil {
				t.Errorf("ResolveLink(id past its time) = %v, want resolved", err)
			}
			if err := s.DeleteExpired(ctx); err != nil {
				t.Fatal(err)
			}
			if n := count(t, s, "used_requests"); n != 1 {
				t.Errorf("used request ids after DeleteExpired = %d, want 1 (req-a's renewed row)", n)
			}
		})
	}
}

func TestConcurrentFirstLinks(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			s := b.open(t, newClock())
			var wg sync.WaitGroup
			errs := make(chan error, 8)
			for i := 0; i < 8; i++ {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					l := goLink("org-new", "c-new", "new@example.com")
					if i%2 == 0 {
						l = mainLink("e-new", "org-new", "c-new")
					}
					_, err := s.ResolveLink(context.Background(), l)
					errs <- err
				}(i)
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Errorf("concurrent ResolveLink = %v, want nil", err)
				}
			}
			for table, want := range map[string]int{"organizations": 1, "persons": 1, "person_identities": 1, "person_organizations": 1, "employees": 1, "accounts": 1, "links": 8} {
				if n := count(t, s, table); n != want {
					t.Errorf("%s has %d rows after 8 concurrent first links, want %d", table, n, want)
				}
			}
		})
	}
}

func TestLoginCode(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			c := newClock()
			s := b.open(t, c)

			t.Run("single use", func(t *testing.T) {
				r := mustResolve(t, s, goLink("org1", "c1", "k@example.com"))
				if len(r.Code) < 43 { // 256 bits, base64url
					t.Errorf("code length = %d, want >= 43", len(r.Code))
				}
				if _, err := s.ExchangeCode(ctx, r.Code); err != nil {
					t.Fatalf("first ExchangeCode = %v", err)
				}
				if _, err := s.ExchangeCode(ctx, r.Code); !errors.Is(err, ErrCodeUsed) {
					t.Errorf("second ExchangeCode = %v, want ErrCodeUsed", err)
				}
			})
			t.Run("concurrent exchanges, one wins", func(t *testing.T) {
				r := mustResolve(t, s, goLink("org1", "c1", "k@example.com"))
				var wg sync.WaitGroup
				var mu sync.Mutex
				wins := 0
				for i := 0; i < 4; i++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						if _, err := s.ExchangeCode(ctx, r.Code); err == nil {
							mu.Lock()
							wins++
							mu.Unlock()
						} else if !errors.Is(err, ErrCodeUsed) {
							t.Errorf("concurrent ExchangeCode = %v, want nil or ErrCodeUsed", err)
						}
					}()
				}
				wg.Wait()
				if wins != 1 {
					t.Errorf("successful exchanges = %d, want 1", wins)
				}
			})
			t.Run("expires after 60 seconds", func(t *testing.T) {
				r := mustResolve(t, s, goLink("org1", "c1", "k@example.com"))
				c.Add(60 * time.Second)
				if _, err := s.ExchangeCode(ctx, r.Code); !errors.Is(err, ErrCodeExpired) {
					t.Errorf("ExchangeCode after 60s = %v, want ErrCodeExpired", err)
				}
				r = mustResolve(t, s, goLink("org1", "c1", "k@example.com"))
				c.Add(59 * time.Second)
				if _, err := s.ExchangeCode(ctx, r.Code); err != nil {
					t.Errorf("ExchangeCode after 59s = %v, want nil", err)
				}
			})
			t.Run("unknown", func(t *testing.T) {
				if _, err := s.ExchangeCode(ctx, "not-a-code"); !errors.Is(err, ErrCodeInvalid) {
					t.Errorf("ExchangeCode(unknown) = %v, want ErrCodeInvalid", err)
				}
			})
			t.Run("stored hashed", func(t *testing.T) {
				r := mustResolve(t, s, goLink("org1", "c1", "k@example.com"))
				var n int
				queryRow(t, s, "SELECT COUNT(*) FROM login_codes WHERE code_hash = ?", []any{r.Code}, &n)
				if n != 0 {
					t.Errorf("login_codes holds the code in clear")
				}
			})
			t.Run("session expires", func(t *testing.T) {
				r := mustResolve(t, s, goLink("org1", "c1", "k@example.com"))
				ex, err := s.ExchangeCode(ctx, r.Code)
				if err != nil {
					t.Fatal(err)
				}
				c.Add(12 * time.Hour)
				if _, err := s.Session(ctx, ex.Token); !errors.Is(err, ErrNoSession) {
					t.Errorf("Session after 12h = %v, want ErrNoSession", err)
				}
			})
		})
	}
}

func TestNormalizeSSN(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"010190-12345", "01019012345"},
		{" 010190 12345 ", "01019012345"},
		{"131052-308t", "131052308T"},
		{"--", ""},
	} {
		if got := NormalizeSSN(tt.in); got != tt.want {
			t.Errorf("NormalizeSSN(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestPassword(t *testing.T) {
	h, err := HashPassword("correct horse")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(h, "$argon2id$v=19$m=19456,t=2,p=1$") {
		t.Errorf("HashPassword() = %q, want an argon2id PHC string", h)
	}
	for _, tt := range []struct {
		name, hash, pw string
		want           bool
	}{
		{"right", h, "correct horse", true},
		{"wrong", h, "correct horse!", false},
		{"garbage hash", "$argon2id$x", "correct horse", false},
		{"huge memory refused", strings.Replace(h, "m=19456", "m=99999999", 1), "correct horse", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := CheckPassword(tt.hash, tt.pw); got != tt.want {
				t.Errorf("CheckPassword(%q) = %v, want %v", tt.pw, got, tt.want)
			}
		})
	}
}

// BenchmarkResolveLink measures the database work of one link on SQLite: a known
// organization, contact and linked employee (the steady state), plus the login code.
func BenchmarkResolveLink(b *testing.B) {
	s, err := Open(context.Background(), filepath.Join(b.TempDir(), "app.db"), Options{SSNKey: testKey})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	l := mainLink("e1", "org1", "c1")
	l.Payload.Contact.SSN = "01019012345"
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := s.ResolveLink(context.Background(), l); err != nil {
			b.Fatal(err)
		}
	}
}
