package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/partnergate/partnergate/internal/pgtest"
)

// limits are small bounds for the tests: 3 per address, 2 per pair, turns after 2 per
// login name, 100 ms doubling to 400 ms.
var limits = SignInLimits{Window: time.Minute, PerAddress: 3, PerPair: 2, PerLogin: 2,
	BaseDelay: 100 * time.Millisecond, MaxDelay: 400 * time.Millisecond}

func countSignIn(t *testing.T, s *Store, addr, login string) SignInVerdict {
	t.Helper()
	v, err := s.CountSignIn(context.Background(), addr, login, limits)
	if err != nil {
		t.Fatalf("CountSignIn(%s, %s) = %v", addr, login, err)
	}
	return v
}

// TestCountSignIn: the bounds per address and per (login name, address) refuse with the
// time left in the window; a login name's attempts past its free ones take turns, and one
// whose turn is too far away is refused; a refused attempt changes nothing; a new window
// starts afresh; DeleteExpired forgets what counts no more; nothing is stored in clear.
func TestCountSignIn(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			c := newClock()
			s := b.open(t, c)
			ctx := context.Background()

			for i := range 2 {
				if v := countSignIn(t, s, "192.0.2.1", "ida"); !v.Allowed || v.Wait != 0 {
					t.Fatalf("attempt %d of ida from .1 = %+v, want allowed at once", i+1, v)
				}
			}
			c.Add(10 * time.Second)
			if v := countSignIn(t, s, "192.0.2.1", "ida"); v.Allowed || v.RetryAfter != 50*time.Second {
				t.Errorf("third attempt of ida from .1 = %+v, want refused for the 50 s left of the pair's window", v)
			}
			if v := countSignIn(t, s, "192.0.2.1", "bo"); !v.Allowed {
				t.Errorf("bo from .1 = %+v, want allowed: the address has one attempt left", v)
			}
			rows := tableRows(t, s)
			if v := countSignIn(t, s, "192.0.2.1", "cy"); v.Allowed || v.RetryAfter != 50*time.Second {
				t.Errorf("cy from .1 = %+v, want refused: the address used its 3", v)
			}
			if got := tableRows(t, s); got != rows {
				t.Errorf("rows after a refused attempt = %s, want unchanged %s", got, rows)
			}

			// ida's third and later attempts (from other addresses) take turns.
			for i, want := range []time.Duration{100 * time.Millisecond, 300 * time.Millisecond} {
				if v := countSignIn(t, s, "192.0.2."+strconv.Itoa(10+i), "ida"); !v.Allowed || v.Wait != want {
					t.Errorf("ida's attempt %d at once = %+v, want allowed after %v", i+3, v, want)
				}
			}
			rows = tableRows(t, s)
			if v := countSignIn(t, s, "192.0.2.20", "ida"); v.Allowed || v.RetryAfter != 300*time.Millisecond {
				t.Errorf("ida's fifth attempt at once = %+v, want refused: its turn would begin 700 ms from now", v)
			}
			if got := tableRows(t, s); got != rows {
				t.Errorf("rows after a refused turn = %s, want unchanged %s", got, rows)
			}
			c.Add(time.Second)
			if v := countSignIn(t, s, "192.0.2.20", "ida"); !v.Allowed || v.Wait != 400*time.Millisecond {
				t.Errorf("ida's fifth attempt a second later = %+v, want allowed after 400 ms", v)
			}

			c.Add(time.Minute)
			if v := countSignIn(t, s, "192.0.2.1", "ida"); !v.Allowed || v.Wait != 0 {
				t.Errorf("ida from .1 in a new window = %+v, want allowed at once", v)
			}
			if out := tableRows(t, s); strings.Contains(out, "192.0.2") || strings.Contains(out, "ida") {
				t.Errorf("signin_counts holds an address or a login name in clear: %s", out)
			}
			c.Add(time.Minute)
			if err := s.DeleteExpired(ctx); err != nil {
				t.Fatal(err)
			}
			if got := tableRows(t, s); got != "" {
				t.Errorf("rows after DeleteExpired a window later = %s, want none", got)
			}
		})
	}
}

// tableRows prints signin_counts, ordered.
func tableRows(t *testing.T, s *Store) string {
	t.Helper()
	rows, err := s.db.Query(`SELECT subject, window_start, attempts, turn_at, expires_at FROM signin_counts ORDER BY subject`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var subject string
		var start, turn, expires int64
		var n int
		if err := rows.Scan(&subject, &start, &n, &turn, &expires); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s %d %d %d %d; ", subject, start, n, turn, expires)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// BenchmarkCountSignIn measures what the limits add to a sign-in that is let through: the
// read, and the transaction of three upserts, each attempt from another address for
// another login name (no turns). The argon2id check it comes before takes tens of ms.
func BenchmarkCountSignIn(b *testing.B) {
	for _, be := range []struct {
		name string
		open func(b *testing.B, c *clock) *Store
	}{
		{"sqlite", func(b *testing.B, c *clock) *Store {
			s, err := Open(context.Background(), b.TempDir()+"/app.db", Options{SSNKey: testKey, Now: c.Now})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			return s
		}},
		{"postgres", func(b *testing.B, c *clock) *Store {
			s, err := Open(context.Background(), pgtest.NewDatabase(b), Options{SSNKey: testKey, Now: c.Now})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			return s
		}},
	} {
		b.Run(be.name, func(b *testing.B) {
			s := be.open(b, newClock())
			ctx := context.Background()
			i := 0
			for b.Loop() {
				i++
				if v, err := s.CountSignIn(ctx, "198.51."+strconv.Itoa(i/256%256)+"."+strconv.Itoa(i%256), "user-"+strconv.Itoa(i), limits); err != nil || !v.Allowed {
					b.Fatalf("CountSignIn = %+v, %v", v, err)
				}
			}
		})
	}
}
