package main

import (
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/partnergate/partnergate/internal/pgtest"
)

// TestMain stops the test binary's PostgreSQL cluster.
func TestMain(m *testing.M) { pgtest.Main(m) }

// TestMigrateOnlyAndNewerSchema: -migrate-only migrates and exits 0 printing the version,
// without the service's secrets; once a newer release's migration is recorded, both
// -migrate-only and a normal start exit 1 with a message naming both versions and what to
// do, and the service does not start.
func TestMigrateOnlyAndNewerSchema(t *testing.T) {
	for _, b := range []struct {
		name, driver string
		dsn          func(t *testing.T) string
	}{
		{"sqlite", "sqlite", func(t *testing.T) string { return filepath.Join(t.TempDir(), "data", "app.db") }},
		{"postgres", "pgx", func(t *testing.T) string { return pgtest.NewDatabase(t) }},
	} {
		t.Run(b.name, func(t *testing.T) {
			dsn := b.dsn(t)
			t.Setenv("PARTNERGATE_UPSTREAM_SECRET", "")
			t.Setenv("PARTNERGATE_APP_SECRET", strings.Repeat("a", 32))
			cmd := func(args ...string) (int, string, string) {
				var out, errs strings.Builder
				code := run(append([]string{"-db", dsn, "-secret-file", filepath.Join(t.TempDir(), "app.secret"), "-listen", "127.0.0.1:0"}, args...), &out, &errs)
				return code, out.String(), errs.String()
			}

			code, out, errs := cmd("-migrate-only")
			var version int64
			if _, err := fmt.Sscanf(out, "database schema at version %d, migrated from 0\n", &version); code != 0 || err != nil || version < 4 {
				t.Fatalf("-migrate-only on a new database = %d %q %q, want 0 and the version migrated from 0", code, out, errs)
			}
			want := fmt.Sprintf("database schema at version %d, up to date\n", version)
			if code, out, errs := cmd("-migrate-only"); code != 0 || out != want {
				t.Errorf("-migrate-only again = %d %q %q, want 0 %q", code, out, errs, want)
			}

			db, err := sql.Open(b.driver, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.Exec(fmt.Sprintf(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (%d, '9999_future.sql', 1)`, version+1)); err != nil {
				t.Fatal(err)
			}
			wantErr := fmt.Sprintf("database schema version %d is newer than this binary's %d", version+1, version)
			if code, out, errs := cmd("-migrate-only"); code != 1 || out != "" || !strings.Contains(errs, wantErr) {
				t.Errorf("-migrate-only on a newer schema = %d %q %q, want 1 and %q", code, out, errs, wantErr)
			}
			t.Setenv("PARTNERGATE_UPSTREAM_SECRET", strings.Repeat("u", 32))
			code, _, errs = cmd()
			if code != 1 || !strings.Contains(errs, "appservice: opening database: "+wantErr+
				": a newer app service has migrated it; upgrade this binary to the release that migrated it, or restore the database backup taken before that upgrade to run this one\n") {
				t.Errorf("start on a newer schema = %d %q, want 1 and %q", code, errs, wantErr)
			}
		})
	}
}

// pgTool finds a PostgreSQL client program: on PATH, else in the newest server folder,
// where pgtest finds the server.
func pgTool(t *testing.T, name string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/" + name)
	if len(found) == 0 {
		t.Fatalf("%s not found: install Debian's postgresql package (scripts/test-deps.sh)", name)
	}
	sort.Strings(found)
	return found[len(found)-1]
}

// TestRestoreRollsBack: the backup docs/appservice.md gives before an upgrade (pg_dump; a
// copy of the SQLite file while the service is stopped), restored after a newer release
// migrated, lets the older binary start again: the rollback the refusal message points to.
func TestRestoreRollsBack(t *testing.T) {
	for _, b := range []struct {
		name, driver    string
		dsn             func(t *testing.T) string
		backup, restore func(t *testing.T, dsn, file string)
	}{
		{"sqlite", "sqlite", func(t *testing.T) string { return filepath.Join(t.TempDir(), "app.db") },
			func(t *testing.T, dsn, file string) { copyFile(t, dsn, file) },
			func(t *testing.T, dsn, file string) { copyFile(t, file, dsn) }},
		{"postgres", "pgx", func(t *testing.T) string { return pgtest.NewDatabase(t) },
			func(t *testing.T, dsn, file string) {
				if out, err := exec.Command(pgTool(t, "pg_dump"), "--format=custom", "--file="+file, dsn).CombinedOutput(); err != nil {
					t.Fatalf("pg_dump: %v\n%s", err, out)
				}
			},
			func(t *testing.T, dsn, file string) {
				if out, err := exec.Command(pgTool(t, "pg_restore"), "--clean", "--if-exists", "--dbname="+dsn, file).CombinedOutput(); err != nil {
					t.Fatalf("pg_restore: %v\n%s", err, out)
				}
			}},
	} {
		t.Run(b.name, func(t *testing.T) {
			dsn := b.dsn(t)
			t.Setenv("PARTNERGATE_UPSTREAM_SECRET", strings.Repeat("u", 32))
			t.Setenv("PARTNERGATE_APP_SECRET", strings.Repeat("a", 32))
			migrate := func() (int, string, string) {
				var out, errs strings.Builder
				code := run([]string{"-db", dsn, "-migrate-only"}, &out, &errs)
				return code, out.String(), errs.String()
			}
			if code, out, errs := migrate(); code != 0 {
				t.Fatalf("-migrate-only = %d %q %q", code, out, errs)
			}
			_, upToDate, _ := migrate()
			file := filepath.Join(t.TempDir(), "backup")
			b.backup(t, dsn, file)

			db, err := sql.Open(b.driver, dsn)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := db.Exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (9999, '9999_future.sql', 1)`); err != nil {
				t.Fatal(err)
			}
			db.Close()
			if code, _, errs := migrate(); code != 1 || !strings.Contains(errs, "version 9999 is newer") {
				t.Fatalf("-migrate-only after the newer release = %d %q, want 1 and the refusal", code, errs)
			}

			b.restore(t, dsn, file)
			if code, out, errs := migrate(); code != 0 || out != upToDate {
				t.Errorf("-migrate-only after the restore = %d %q %q, want 0 %q", code, out, errs, upToDate)
			}
		})
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestHeaderPrefixChecked: -header-prefix reaches the app service, which refuses to start
// with one the gateway would refuse as header_prefix (linkspec.ValidHeaderPrefix).
func TestHeaderPrefixChecked(t *testing.T) {
	t.Setenv("PARTNERGATE_UPSTREAM_SECRET", strings.Repeat("u", 32))
	t.Setenv("PARTNERGATE_APP_SECRET", strings.Repeat("a", 32))
	dir := t.TempDir()
	var out, errs strings.Builder
	code := run([]string{"-db", filepath.Join(dir, "app.db"), "-secret-file", filepath.Join(dir, "app.secret"), "-listen", "127.0.0.1:0",
		"-instructor", "", "-header-prefix", "X:Acme-"}, &out, &errs)
	if want := `header prefix "X:Acme-"`; code != 1 || !strings.Contains(errs.String(), want) {
		t.Errorf("-header-prefix X:Acme- = %d %q, want 1 and %q", code, errs.String(), want)
	}
}

// starter returns a start of the command with the secrets set, a database of its own and
// further args, answering the exit code and stderr.
func starter(t *testing.T) func(args ...string) (int, string) {
	t.Setenv("PARTNERGATE_UPSTREAM_SECRET", strings.Repeat("u", 32))
	t.Setenv("PARTNERGATE_APP_SECRET", strings.Repeat("a", 32))
	dir := t.TempDir()
	return func(args ...string) (int, string) {
		var out, errs strings.Builder
		code := run(append([]string{"-db", filepath.Join(dir, "app.db"), "-secret-file", filepath.Join(dir, "app.secret"), "-listen", "127.0.0.1:0",
			"-instructor", ""}, args...), &out, &errs)
		return code, errs.String()
	}
}

// TestDatabaseTimeoutChecked: -database-timeout and PARTNERGATE_APP_DATABASE_TIMEOUT take a
// duration from 100ms to 25s; anything else stops the start with the flag named.
func TestDatabaseTimeoutChecked(t *testing.T) {
	start := starter(t)
	for _, v := range []string{"0s", "50ms", "26s", "-1s", "ten"} {
		if code, errs := start("-database-timeout", v); code != 2 || !strings.Contains(errs, "-database-timeout") {
			t.Errorf("-database-timeout %s = %d %q, want 2 and the flag named", v, code, errs)
		}
	}
	t.Setenv("PARTNERGATE_APP_DATABASE_TIMEOUT", "1h")
	if code, errs := start(); code != 2 || !strings.Contains(errs, `-database-timeout "1h"`) {
		t.Errorf("PARTNERGATE_APP_DATABASE_TIMEOUT=1h = %d %q, want 2 and the value named", code, errs)
	}
}

// TestDeviceLifetimesChecked: -device-idle and -device-lifetime (and their variables) take
// whole days or a duration within their bounds, the idle period at most the lifetime;
// anything else stops the start with the flag named.
func TestDeviceLifetimesChecked(t *testing.T) {
	start := starter(t)
	for _, c := range []struct{ flag, value string }{
		{"-device-idle", "0d"}, {"-device-idle", "59m"}, {"-device-idle", "366d"}, {"-device-idle", "thirty"}, {"-device-idle", "1.5d"},
		{"-device-lifetime", "731d"}, {"-device-lifetime", "-1h"}, {"-device-lifetime", "29d"},
	} {
		if code, errs := start(c.flag, c.value); code != 2 || !strings.Contains(errs, c.flag+` "`+c.value+`"`) {
			t.Errorf("%s %s = %d %q, want 2 and the flag named", c.flag, c.value, code, errs)
		}
	}
	t.Setenv("PARTNERGATE_APP_DEVICE_LIFETIME", "7d")
	if code, errs := start(); code != 2 || !strings.Contains(errs, `-device-lifetime "7d": want at least -device-idle (30d)`) {
		t.Errorf("PARTNERGATE_APP_DEVICE_LIFETIME=7d under the default idle period = %d %q, want 2 and why", code, errs)
	}
}
