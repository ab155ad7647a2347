package web

import (
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/partnergate/partnergate/internal/pgtest"
)

// TestMain stops the test binary's PostgreSQL cluster, when a test started one.
func TestMain(m *testing.M) { pgtest.Main(m) }

// database is one of the store's two backends for the HTTP tests.
type database struct {
	name string
	// open returns a fresh database as store.Open takes it, and the driver and source name
	// of a raw connection to it, for checks and injected failures beside the store.
	open func(t *testing.T) (db, driver, dsn string)
}

var databases = []database{
	{"sqlite", func(t *testing.T) (string, string, string) {
		path := filepath.Join(t.TempDir(), "app.db")
		return path, "sqlite", path + "?_pragma=busy_timeout(5000)"
	}},
	{"postgres", func(t *testing.T) (string, string, string) {
		url := pgtest.NewDatabase(t)
		return url, "pgx", url
	}},
}

// rawDB connects to a database beside the store.
func rawDB(t *testing.T, driver, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
