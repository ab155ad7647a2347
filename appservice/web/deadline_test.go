package web

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

// hang makes the fixture's database hang without going down, as a lock held by another
// session does, and returns what ends the hang. SQLite: another connection holds the write
// lock (BEGIN IMMEDIATE), so the store's writes wait (busy_timeout, 10 s, which no
// context interrupts) while its reads go on (WAL). PostgreSQL: another session holds every
// table of the schema in ACCESS EXCLUSIVE mode, so reads and writes wait without end.
func hang(t *testing.T, db database, driver, dsn string) (release func()) {
	t.Helper()
	raw := rawDB(t, driver, dsn)
	conn, err := raw.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	exec := func(q string) {
		if _, err := conn.ExecContext(context.Background(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if db.name == "sqlite" {
		exec("BEGIN IMMEDIATE")
	} else {
		var tables string
		if err := conn.QueryRowContext(context.Background(),
			`SELECT string_agg(quote_ident(tablename), ', ') FROM pg_tables WHERE schemaname = current_schema()`).Scan(&tables); err != nil {
			t.Fatal(err)
		}
		exec("BEGIN")
		exec("LOCK TABLE " + tables + " IN ACCESS EXCLUSIVE MODE")
	}
	released := false
	release = func() {
		if !released {
			released = true
			exec("ROLLBACK")
			conn.Close()
		}
	}
	t.Cleanup(release)
	return release
}

// TestDatabaseHangs: while the database hangs (not down: it takes connections and pings,
// and answers nothing else), a request that waits on it answers 503 unavailable with
// Retry-After once the database timeout passes, in the shape of its route, well before the
// server's 30 s write timeout. Before the change a link waited the whole busy timeout on
// SQLite and then answered 500, and on PostgreSQL held the request without end.
func TestDatabaseHangs(t *testing.T) {
	const timeout = 500 * time.Millisecond
	for _, db := range databases {
		t.Run(db.name, func(t *testing.T) {
			dsn, driver, rawDSN := db.open(t)
			f := newFixtureOn(t, "http://localhost:8080", dsn, nil)
			f.h.cfg.DatabaseTimeout = timeout
			member, opener, _, form := beforeOutage(t, f)

			release := hang(t, db, driver, rawDSN)

			// within serves r and fails the test when the answer takes longer than the
			// timeout and some slack; the answer comes back once the hang ends either way.
			within := func(what string, r *http.Request, serve func(*http.Request) *http.Response) (*http.Response, string) {
				t.Helper()
				done := make(chan *http.Response, 1)
				start := time.Now()
				go func() { done <- serve(r) }()
				select {
				case res := <-done:
					if d := time.Since(start); d > timeout+2*time.Second {
						t.Errorf("%s took %v, want about the database timeout (%v)", what, d.Round(time.Millisecond), timeout)
					}
					return res, body(t, res)
				case <-time.After(timeout + 4*time.Second):
					t.Errorf("%s has not answered after %v, want an answer after the database timeout (%v)", what, time.Since(start).Round(time.Millisecond), timeout)
					release()
					<-done
					t.FailNow()
					return nil, ""
				}
			}
			direct := func(r *http.Request) *http.Response { return serve(f.h, r) }
			unavailable := func(what string, res *http.Response, b string, json bool) {
				t.Helper()
				if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") != retryAfter {
					t.Errorf("%s = %d Retry-After %q, want 503 with Retry-After %s", what, res.StatusCode, res.Header.Get("Retry-After"), retryAfter)
				}
				if ct := res.Header.Get("Content-Type"); json != (ct == "application/problem+json") || !json && !strings.Contains(b, `<code id="code">unavailable</code>`) {
					t.Errorf("%s = %s\n%s\nwant unavailable as %s", what, ct, b, map[bool]string{true: "problem+json", false: "the problem page"}[json])
				}
				if res.Header.Get("Content-Security-Policy") == "" || res.Header.Get("Cache-Control") != "no-store" {
					t.Errorf("%s lacks the security headers: %v", what, res.Header)
				}
			}

			res, b := within("POST /partner/demo/url", forwardRequest(t, "url", mainPayload(), "main", f.now), direct)
			unavailable("POST /partner/demo/url", res, b, true)
			var p problemBody
			if err := json.Unmarshal([]byte(b), &p); err != nil || p.Code != "unavailable" || !strings.HasPrefix(p.RequestID, "req-") {
				t.Errorf("POST /partner/demo/url = %s, want unavailable with the gateway's request id", b)
			}
			res, b = within("POST /partner/demo/payload", forwardRequest(t, "payload", mainPayload(), "main", f.now), direct)
			unavailable("POST /partner/demo/payload", res, b, false)
			login := httptest.NewRequest(http.MethodPost, "/app/login", strings.NewReader(url.Values{"code": {form[1]}, "csrf": {form[2]}}.Encode()))
			login.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			res, b = within("POST /app/login", login, opener.do)
			unavailable("POST /app/login", res, b, false)
			if db.name == "postgres" {
				// Reads wait too.
				res, b = within("GET /go", httptest.NewRequest(http.MethodGet, "/go", nil), member.do)
				unavailable("GET /go", res, b, false)
				res, b = within("GET /app/api/me/workouts", httptest.NewRequest(http.MethodGet, "/app/api/me/workouts", nil), member.do)
				unavailable("GET /app/api/me/workouts", res, b, true)
			}

			// Once the hang ends, the service answers again.
			release()
			if err := f.h.Drain(context.Background()); err != nil {
				t.Fatal(err)
			}
			if res := member.do(httptest.NewRequest(http.MethodGet, "/app/api/me/workouts", nil)); res.StatusCode != http.StatusOK {
				t.Errorf("GET /app/api/me/workouts after the hang = %d, want 200", res.StatusCode)
			}
		})
	}
}

// TestDrainWaitsForRoutesPastDeadline: a link that answered 503 at its deadline while
// SQLite's write lock was held elsewhere still runs in the background (SQLite waits out
// its busy timeout whatever the context says) and still uses the store. Drain does not
// return while it runs, so that the app service's Shutdown closes the store only after
// it; it returns once the lock is let go and the route has ended.
func TestDrainWaitsForRoutesPastDeadline(t *testing.T) {
	db := databases[0]
	dsn, driver, rawDSN := db.open(t)
	f := newFixtureOn(t, "http://localhost:8080", dsn, nil)
	f.h.cfg.DatabaseTimeout = 200 * time.Millisecond
	release := hang(t, db, driver, rawDSN)

	if res := serve(f.h, forwardRequest(t, "url", mainPayload(), "main", f.now)); res.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("POST /partner/demo/url with the write lock held = %d, want 503 at the deadline", res.StatusCode)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := f.h.Drain(ctx); err == nil {
		t.Fatal("Drain while the timed-out route waits on the lock = nil, want it to wait until ctx ends")
	}
	release()
	ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := f.h.Drain(ctx); err != nil {
		t.Fatalf("Drain once the lock is let go = %v, want nil when the route has ended", err)
	}
}
