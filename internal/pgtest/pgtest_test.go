package pgtest

import (
	"context"
	"database/sql"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestMain(m *testing.M) { Main(m) }

func query(t *testing.T, url, q string, dest ...any) {
	t.Helper()
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.QueryRowContext(context.Background(), q).Scan(dest...); err != nil {
		t.Fatalf("%s on %s: %v", q, url, err)
	}
}

// TestNewDatabase: each call gives another empty database on the private cluster, in a
// folder of its own and not on the machine's port 5432, and the database is gone once the
// test that asked for it has ended.
func TestNewDatabase(t *testing.T) {
	var names [2]string
	t.Run("create", func(t *testing.T) {
		for i := range names {
			url := NewDatabase(t)
			var port int
			query(t, url, "SELECT current_database(), current_setting('port')::int", &names[i], &port)
			if c := Start(t); port == 5432 || c.Addr() != net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) {
				t.Errorf("server port = %d, want the private cluster's %s", port, c.Addr())
			}
			var tables int
			query(t, url, "SELECT COUNT(*) FROM pg_tables WHERE schemaname = 'public'", &tables)
			if tables != 0 {
				t.Errorf("database %s has %d tables, want an empty one", names[i], tables)
			}
		}
		if names[0] == names[1] {
			t.Errorf("NewDatabase twice gave %s both times", names[0])
		}
	})
	c := Start(t)
	if !strings.HasPrefix(c.dir, filepath.Join(os.TempDir(), dirPrefix)) {
		t.Errorf("cluster folder %s, want one under %s", c.dir, os.TempDir())
	}
	for _, name := range names {
		var n int
		query(t, c.URL("postgres"), "SELECT COUNT(*) FROM pg_database WHERE datname = '"+name+"'", &n)
		if n != 0 {
			t.Errorf("database %s still exists after its test ended", name)
		}
	}
	t.Logf("cluster: PostgreSQL %s at %s", c.Version(), c.Addr())
}
