package store

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/partnergate/partnergate/internal/pgtest"
)

// oldRunner makes the database the hand-written migration runner before goose left: its
// schema_migrations table, migrations 1 and 2 (testdata/oldrunner, copies of those files as
// that runner applied them) and a little data in them.
func oldRunner(t *testing.T, db *sql.DB, d dialect) {
	t.Helper()
	s := &Store{db: db, d: d, opts: Options{Now: newClock().Now}}
	exec := func(stmt string, args ...any) {
		t.Helper()
		if _, err := db.Exec(s.q(stmt), args...); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	exec(`CREATE TABLE schema_migrations (version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`)
	files, err := filepath.Glob("testdata/oldrunner/*.sql")
	if err != nil || len(files) != 2 {
		t.Fatalf("old migrations = %v, %v", files, err)
	}
	sort.Strings(files)
	for i, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, stmt := range splitStatements(strings.ReplaceAll(string(b), "@IDENTITY@", d.identity)) {
			exec(stmt)
		}
		exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, 1)`, i+1, filepath.Base(f))
	}
	for _, stmt := range []string{
		`INSERT INTO organizations (id, partner, partner_org_id, name, created_at, updated_at) VALUES (1, 'demo', 'org1', 'North', 1, 1), (2, 'demo', 'org2', 'South', 1, 1)`,
		// c1 in two organizations was two contacts; c3 has a member account.
		`INSERT INTO contacts (id, organization_id, partner_contact_id, ssn_hash, firstname, middlename, lastname, birthdate, gender, mobile, email, diagnosis, created_at, updated_at) VALUES
			(1, 1, 'c1', 'hash-1', 'Ola', '', 'Nordmann', '1990-01-01', 'M', '', '', '', 1, 1),
			(2, 2, 'c1', 'hash-1', 'Ola', '', 'Nordmann', '1990-01-01', 'male', '', '', '', 2, 2),
			(3, 1, 'c3', NULL, 'Kari', '', 'Hansen', '', 'K', '', 'kari@example.com', '', 3, 3)`,
		`INSERT INTO accounts (id, role, username, email, display_name, password_hash, contact_id, created_at, updated_at) VALUES
			(1, 'instructor', 'coach', 'coach@example.com', 'Coach', NULL, NULL, 1, 1),
			(2, 'member', NULL, 'kari@example.com', 'Kari Hansen', NULL, 3, 1, 1)`,
		`INSERT INTO employees (id, partner, partner_employee_id, username, firstname, lastname, email, account_id, created_at, updated_at) VALUES
			(1, 'demo', 'e1', 'ida', 'Ida', 'Berg', 'ida@example.com', 1, 1, 1)`,
		`INSERT INTO links (id, partner, kind, endpoint, request_id, organization_id, contact_id, employee_id, account_id, case_id, created_at) VALUES
			(1, 'demo', 'main', 'url', 'r1', 1, 1, 1, NULL, 'case-7', 1),
			(2, 'demo', 'go', 'payload', 'r2', 1, 3, NULL, 2, '', 1)`,
	} {
		exec(stmt)
	}
	exec(`INSERT INTO sessions (token_hash, account_id, employee_id, organization_id, contact_id, link_id, created_at, expires_at)
VALUES (?, 1, 1, 1, 1, 1, 1, ?)`, hashSecret("old-session"), newClock().Now().UnixMilli()+3600_000)
	if d.name == "postgres" {
		// The old runner's rows were numbered by the identity columns, not given ids.
		for _, table := range []string{"organizations", "contacts", "accounts", "employees", "links"} {
			exec(`SELECT setval(pg_get_serial_sequence('` + table + `', 'id'), (SELECT MAX(id) FROM ` + table + `))`)
		}
	}
}

// TestOldRunnerDatabaseMigrates: a database made by the earlier migration runner opens:
// goose takes versions 1 and 2 as applied, migration 3 turns contacts into persons with the
// same ids, and the old rows keep working with the new code.
func TestOldRunnerDatabaseMigrates(t *testing.T) {
	for _, b := range []struct {
		name string
		dsn  func(t *testing.T) (string, *sql.DB, dialect)
	}{
		{"sqlite", func(t *testing.T) (string, *sql.DB, dialect) {
			path := filepath.Join(t.TempDir(), "app.db")
			db, err := openSQLite(path)
			if err != nil {
				t.Fatal(err)
			}
			return path, db, sqliteDialect
		}},
		{"postgres", func(t *testing.T) (string, *sql.DB, dialect) {
			url := pgtest.NewDatabase(t)
			db, err := sql.Open("pgx", url)
			if err != nil {
				t.Fatal(err)
			}
			return url, db, postgresDialect
		}},
	} {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			dsn, db, d := b.dsn(t)
			oldRunner(t, db, d)
			db.Close()

			c := newClock()
			for round := 1; round <= 2; round++ {
				s, err := Open(ctx, dsn, Options{SSNKey: testKey, Now: c.Now})
				if err != nil {
					t.Fatalf("Open #%d of the old runner's database = %v", round, err)
				}
				t.Cleanup(func() { s.Close() })
				_, names, _ := s.gooseMigrations()
				if v, err := s.schemaVersion(ctx); err != nil || v != len(names) {
					t.Errorf("schemaVersion() after open #%d = %d, %v, want %d", round, v, err, len(names))
				}
			}
			s, err := Open(ctx, dsn, Options{SSNKey: testKey, Now: c.Now})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()

			for _, tt := range []struct {
				org, id        int64
				name, customID string
				gender         string
				partnerIDs     string
			}{
				{1, 1, "Ola Nordmann", "c1", "male", "c1"},
				{2, 2, "Ola Nordmann", "c1", "male", ""}, // c1 stays with the older contact
				{1, 3, "Kari Hansen", "c3", "female", "c3"},
			} {
				p, err := s.Person(ctx, tt.org, tt.id)
				if err != nil {
					t.Fatalf("Person(%d, %d) = %v", tt.org, tt.id, err)
				}
				if p.Name() != tt.name || p.CustomID != tt.customID || p.Gender != tt.gender || strings.Join(p.PartnerIDs, ",") != tt.partnerIDs {
					t.Errorf("Person(%d, %d) = %+v, want %s, custom id %s, gender %s, partner ids %q", tt.org, tt.id, p, tt.name, tt.customID, tt.gender, tt.partnerIDs)
				}
			}
			if _, err := s.Person(ctx, 2, 1); err != ErrNotFound {
				t.Errorf("Person(org 2, contact of org 1) = %v, want ErrNotFound", err)
			}

			sess, err := s.Session(ctx, "old-session")
			if err != nil || sess.Person == nil || sess.Person.ID != 1 || sess.CaseID != "case-7" {
				t.Errorf("old session = %+v, %v, want person 1 and the link's case-7", sess, err)
			}
			var members int
			queryRow(t, s, "SELECT COUNT(*) FROM memberships WHERE account_id = 1 AND organization_id = 1", nil, &members)
			if members != 1 {
				t.Errorf("memberships of the linked instructor in org1 = %d, want 1", members)
			}

			r := mustResolve(t, s, goLink("org1", "c3", "kari@example.com"))
			if r.PersonID != 3 || r.AccountID != 2 || r.AccountCreated {
				t.Errorf("Go link for old c3 = person %d account %d (created %v), want person 3, account 2", r.PersonID, r.AccountID, r.AccountCreated)
			}
			r = mustResolve(t, s, goLink("org2", "c-new", "new@example.com"))
			if r.PersonID <= 3 || !r.PersonCreated || !r.AccountCreated {
				t.Errorf("Go link for a new contact = person %d (created %v), account created %v, want a new person after id 3", r.PersonID, r.PersonCreated, r.AccountCreated)
			}
			// The foreign keys of links, sessions and accounts point at persons now.
			if _, err := s.db.Exec(s.q(`INSERT INTO links (partner, kind, endpoint, request_id, organization_id, contact_id, case_id, created_at)
VALUES ('demo', 'go', 'x', 'x', 1, 999, '', 1)`)); err == nil {
				t.Error("link to person 999 inserted, want a foreign key failure")
			}
			if d.name == "sqlite" {
				rows, err := s.db.Query("PRAGMA foreign_key_check")
				if err != nil {
					t.Fatal(err)
				}
				if rows.Next() {
					t.Error("PRAGMA foreign_key_check reports violations after the migration")
				}
				rows.Close()
			}
		})
	}
}

// TestConcurrentOpenSQLite: app service instances starting at once on one fresh SQLite file
// all come up; a migration another instance applied meanwhile is skipped.
func TestConcurrentOpenSQLite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.db")
	errs := make(chan error, 4)
	for range cap(errs) {
		go func() {
			s, err := Open(context.Background(), path, Options{SSNKey: testKey})
			if err == nil {
				s.Close()
			}
			errs <- err
		}()
	}
	for range cap(errs) {
		if err := <-errs; err != nil {
			t.Errorf("concurrent Open = %v", err)
		}
	}
}
