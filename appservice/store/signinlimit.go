package store

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"time"
)

// SignInLimits are the bounds of password attempts that CountSignIn keeps. The policy is
// the caller's (the web package's sign-in and first-sight pages); the counts are the
// database's, so that every app service instance on it keeps the same ones.
type SignInLimits struct {
	// Window is the length of the fixed windows the attempts are counted in.
	Window time.Duration
	// PerAddress and PerPair bound the attempts a window from one address, and of one
	// login name from one address; an attempt beyond either is refused.
	PerAddress, PerPair int
	// PerLogin is how many attempts a window one login name gets from all addresses
	// before each further one must wait its turn: BaseDelay after the turn before it ends,
	// twice as long for each attempt after it, up to MaxDelay. The login name alone never
	// refuses an attempt outright (a stranger could then lock its owner out), but an
	// attempt whose turn would begin more than MaxDelay from now is refused: so guesses at
	// one login name, from however many addresses and instances, are checked one at a time,
	// at most one per MaxDelay.
	PerLogin            int
	BaseDelay, MaxDelay time.Duration
}

// SignInVerdict is CountSignIn's answer.
type SignInVerdict struct {
	// Allowed is set when the attempt was counted: it may check its password once Wait
	// has passed.
	Allowed bool
	Wait    time.Duration
	// RetryAfter is, for a refused attempt, how long until it may be tried again.
	RetryAfter time.Duration
}

// CountSignIn counts one password attempt for login (lower case) from addr (the client's
// address as the caller counts them) and says whether it may go on, and when. A refused
// attempt changes nothing. Addresses and login names are stored as keyed hashes only.
//
// The cost, on the hot path of every sign-in, is one indexed read and, for an attempt that
// is not refused by it, one short write transaction of three upserts (a fourth update when
// the login name is past PerLogin): under a millisecond on SQLite and on PostgreSQL
// (BenchmarkCountSignIn), against tens of milliseconds of the argon2id hash it guards
// (BenchmarkCheckPassword).
func (s *Store) CountSignIn(ctx context.Context, addr, login string, l SignInLimits) (SignInVerdict, error) {
	now := s.now()
	win := l.Window.Milliseconds()
	keyA, keyP, keyL := s.signInKey("a", addr), s.signInKey("p", login+"\x00"+addr), s.signInKey("l", login)

	// Refusing bounds come first, the address before the pair: every transaction takes its
	// rows in this order, so two of them never wait on each other's.
	bounds := []bound{{keyA, l.PerAddress}, {keyP, l.PerPair}}
	// A flood from one address is refused here, by a read, without a write transaction.
	if retry, err := s.overLimit(ctx, now, win, bounds); err != nil || retry > 0 {
		return SignInVerdict{RetryAfter: retry}, err
	}
	var v SignInVerdict
	errRefused := errors.New("refused")
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		// The upserts lock the rows until the commit (PostgreSQL) or hold the write lock
		// (SQLite): attempts at one key, on any instance, are counted one after the other.
		for _, b := range bounds {
			start, n, _, err := s.countAttempt(ctx, tx, b.key, now, win)
			if err != nil {
				return err
			}
			if n > b.limit {
				v.RetryAfter = max(v.RetryAfter, time.Duration(start+win-now)*time.Millisecond)
			}
		}
		if v.RetryAfter > 0 {
			return errRefused // counted since the read: a concurrent attempt took the last one
		}
		start, n, turnAt, err := s.countAttempt(ctx, tx, keyL, now, win)
		if err != nil || n <= l.PerLogin {
			v.Allowed = err == nil
			return err
		}
		delay := l.MaxDelay
		if over := n - l.PerLogin - 1; over < 16 {
			delay = min(l.BaseDelay<<over, l.MaxDelay)
		}
		turn := max(now, turnAt) + delay.Milliseconds()
		if wait := time.Duration(turn-now) * time.Millisecond; wait > l.MaxDelay {
			v.RetryAfter = wait - l.MaxDelay
			return errRefused
		}
		if _, err := tx.ExecContext(ctx, s.q(`UPDATE signin_counts SET turn_at = ?, expires_at = ? WHERE subject = ?`),
			turn, max(start+win, turn), keyL); err != nil {
			return err
		}
		v.Allowed, v.Wait = true, time.Duration(turn-now)*time.Millisecond
		return nil
	})
	if errors.Is(err, errRefused) {
		return SignInVerdict{RetryAfter: v.RetryAfter}, nil
	}
	return v, err
}

// bound is a counted key and the attempts a window it allows.
type bound struct {
	key   string
	limit int
}

// overLimit reads the current windows of the bounds' keys and returns how long until the
// last of those that have reached their limit ends; 0 when none has.
func (s *Store) overLimit(ctx context.Context, now, win int64, bounds []bound) (time.Duration, error) {
	var retry time.Duration
	for _, b := range bounds {
		var start int64
		var n int
		err := s.db.QueryRowContext(ctx, s.q(`SELECT window_start, attempts FROM signin_counts WHERE subject = ? AND window_start > ?`),
			b.key, now-win).Scan(&start, &n)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return 0, err
		case n >= b.limit:
			retry = max(retry, time.Duration(start+win-now)*time.Millisecond)
		}
	}
	return retry, nil
}

// countAttempt adds one to key's current window, starting a new one at now when the last
// has ended, and returns the window's start, its count and the key's turn.
func (s *Store) countAttempt(ctx context.Context, tx *sql.Tx, key string, now, win int64) (start int64, n int, turnAt int64, err error) {
	cut := now - win
	err = tx.QueryRowContext(ctx, s.q(`INSERT INTO signin_counts (subject, window_start, attempts, turn_at, expires_at) VALUES (?, ?, 1, 0, ?)
ON CONFLICT (subject) DO UPDATE SET
	attempts = CASE WHEN signin_counts.window_start > ? THEN signin_counts.attempts + 1 ELSE 1 END,
	window_start = CASE WHEN signin_counts.window_start > ? THEN signin_counts.window_start ELSE excluded.window_start END,
	expires_at = CASE WHEN signin_counts.window_start > ? THEN signin_counts.expires_at ELSE excluded.expires_at END
RETURNING window_start, attempts, turn_at`), key, now, now+win, cut, cut, cut).Scan(&start, &n, &turnAt)
	return start, n, turnAt, err
}

// signInKey is the stored key of one counted thing: its kind and a keyed hash of its value,
// so that the table holds no address or login name.
func (s *Store) signInKey(kind, value string) string {
	return kind + ":" + hex.EncodeToString(s.keyedHash("partnergate-signin-v1", kind+"\x00"+value)[:16])
}
