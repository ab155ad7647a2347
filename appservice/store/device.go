package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"strings"
	"time"
)

// The defaults of Options.DeviceIdle and Options.DeviceLifetime, and how soon after its
// sign-in a session may ask for a device sign-on.
const (
	DefaultDeviceIdle     = 30 * 24 * time.Hour
	DefaultDeviceLifetime = 180 * 24 * time.Hour
	// DeviceIssueWindow bounds the age of a session that asks for a device sign-on: the
	// desktop asks right after the person signed in, and a session cookie stolen later
	// cannot be turned into a credential that outlives it by months.
	DeviceIssueWindow = 10 * time.Minute
)

// Errors of the device sign-on. The web answers them all alike (the wrapper asks for the
// password); the store tells them apart for the log and the tests.
var (
	// ErrDeviceRefused: the session may not get a device sign-on (not an instructor's, not
	// fresh from a sign-in, or itself started by a device sign-on).
	ErrDeviceRefused = errors.New("this session cannot get a device sign-on")
	// ErrDeviceUnknown: no live device sign-on has this secret (never issued, revoked,
	// ended), or it was presented by another installation or external user than its own,
	// which ends it.
	ErrDeviceUnknown = errors.New("device sign-on unknown")
	// ErrDeviceReused: a secret the device sign-on had already exchanged was presented
	// again; someone holds a copy, so the device sign-on has ended.
	ErrDeviceReused = errors.New("device sign-on used twice: ended")
	// ErrDeviceExpired: the device sign-on was idle too long, reached its lifetime, or the
	// account's password changed since it was issued; it has ended.
	ErrDeviceExpired = errors.New("device sign-on expired")
)

// DeviceBinding is what a device sign-on is issued for besides the account: the external
// user of the desktop wrapper (B-SSO's signon), the wrapper installation's own id, and the
// computer's name, shown in the list of signed-in desktops.
type DeviceBinding struct {
	ExternalUser string
	Installation string
	Computer     string
}

// Device is one signed-in desktop, as its account's list shows it.
type Device struct {
	ID           int64
	ExternalUser string
	Computer     string
	CreatedAt    time.Time
	LastUsedAt   time.Time
	// ExpiresAt is when it ends unless used before: the earlier of the last use plus the
	// idle period and the issue plus the lifetime.
	ExpiresAt time.Time
}

// DeviceSignedIn is the outcome of DeviceSignIn.
type DeviceSignedIn struct {
	Token   string // the new session's token, in clear only here
	Secret  string // the device sign-on's next secret, in clear only here
	Session *Session
}

// passwordStamp is what a device sign-on remembers of the account's password: the SHA-256
// of its hash (of "" without a password), so that any change of the password ends it.
func passwordStamp(hash sql.NullString) string {
	sum := sha256.Sum256([]byte(hash.String))
	return hex.EncodeToString(sum[:])
}

// IssueDeviceSignOn gives the signed-in session of token a device sign-on for b and
// returns its first secret. Only an instructor's session may, within DeviceIssueWindow of
// its sign-in, and not one a device sign-on started (a family never forks): else
// ErrDeviceRefused; no such session is ErrNoSession. An earlier device sign-on of the
// account for the same installation and external user ends: one per desktop and user.
func (s *Store) IssueDeviceSignOn(ctx context.Context, token string, b DeviceBinding) (secret string, d *Device, err error) {
	if strings.TrimSpace(b.ExternalUser) == "" || strings.TrimSpace(b.Installation) == "" {
		return "", nil, errors.New("device sign-on needs an external user and an installation")
	}
	secret, secretHash, err := newSecret()
	if err != nil {
		return "", nil, err
	}
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		sess, err := s.readSession(ctx, tx, token)
		if err != nil {
			return err
		}
		var created int64
		var fromDevice sql.NullInt64
		if err := tx.QueryRowContext(ctx, s.q(`SELECT created_at, device_id FROM sessions WHERE token_hash = ?`), hashSecret(token)).
			Scan(&created, &fromDevice); err != nil {
			return err
		}
		now := s.now()
		if sess.Pending || sess.ConfirmLink || sess.Account == nil || sess.Account.Role != RoleInstructor ||
			fromDevice.Valid || created <= now-DeviceIssueWindow.Milliseconds() {
			return ErrDeviceRefused
		}
		if err := s.endDevices(ctx, tx, `account_id = ? AND installation = ? AND LOWER(external_user) = LOWER(?)`,
			sess.Account.ID, b.Installation, b.ExternalUser); err != nil {
			return err
		}
		var hash sql.NullString
		if err := tx.QueryRowContext(ctx, s.q(`SELECT password_hash FROM accounts WHERE id = ?`), sess.Account.ID).Scan(&hash); err != nil {
			return err
		}
		var org sql.NullInt64
		if sess.Organization != nil {
			org = sql.NullInt64{Int64: sess.Organization.ID, Valid: true}
		}
		d = &Device{ExternalUser: b.ExternalUser, Computer: b.Computer, CreatedAt: time.UnixMilli(now), LastUsedAt: time.UnixMilli(now)}
		d.ExpiresAt = s.deviceExpiry(now, now)
		if err := tx.QueryRowContext(ctx, s.q(`INSERT INTO device_signons (account_id, organization_id, external_user, installation, computer, password_stamp, created_at, last_used_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`), sess.Account.ID, org, b.ExternalUser, b.Installation, b.Computer, passwordStamp(hash), now, now).Scan(&d.ID); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, s.q(`INSERT INTO device_secrets (secret_hash, device_id) VALUES (?, ?)`), secretHash, d.ID)
		return err
	})
	if err != nil {
		return "", nil, err
	}
	return secret, d, nil
}

// DeviceSignIn exchanges a device sign-on's secret, presented by the installation and
// external user of b (whose computer, when not empty, renames the listed one), for a new session of its account and the device sign-on's next
// secret: each secret is good for one exchange. A secret exchanged before (someone holds
// a copy), or presented for another installation or external user, ends the device
// sign-on with the sessions it started (ErrDeviceReused, ErrDeviceUnknown); so do the idle
// period, the lifetime and a changed password (ErrDeviceExpired). An unknown secret is
// ErrDeviceUnknown.
func (s *Store) DeviceSignIn(ctx context.Context, secret string, b DeviceBinding) (*DeviceSignedIn, error) {
	if secret == "" || len(secret) > 128 {
		return nil, ErrDeviceUnknown
	}
	token, tokenHash, err := newSecret()
	if err != nil {
		return nil, err
	}
	next, nextHash, err := newSecret()
	if err != nil {
		return nil, err
	}
	out := &DeviceSignedIn{Token: token, Secret: next}
	// ended is the refusal of a device sign-on the transaction ended: it commits the
	// ending, then refuses.
	var ended error
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		var (
			id, account, created, lastUsed int64
			org, used                      sql.NullInt64
			external, installation, stamp  string
			hash                           sql.NullString
			role                           string
		)
		err := tx.QueryRowContext(ctx, s.q(`SELECT d.id, d.account_id, d.organization_id, d.external_user, d.installation, d.password_stamp,
	d.created_at, d.last_used_at, x.used_at, a.password_hash, a.role
FROM device_secrets x JOIN device_signons d ON d.id = x.device_id JOIN accounts a ON a.id = d.account_id
WHERE x.secret_hash = ?`), hashSecret(secret)).Scan(&id, &account, &org, &external, &installation, &stamp, &created, &lastUsed, &used, &hash, &role)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrDeviceUnknown
		}
		if err != nil {
			return err
		}
		now := s.now()
		switch {
		case used.Valid:
			ended = ErrDeviceReused
		case installation != b.Installation || !strings.EqualFold(external, b.ExternalUser):
			ended = ErrDeviceUnknown
		case now >= s.deviceExpiry(created, lastUsed).UnixMilli():
			ended = ErrDeviceExpired
		case stamp != passwordStamp(hash) || role != RoleInstructor:
			ended = ErrDeviceExpired
		}
		if ended == nil {
			// Marked used in the statement that checks it is unused: of two exchanges of
			// one secret at once, the second finds it used, as a later one would.
			res, err := tx.ExecContext(ctx, s.q(`UPDATE device_secrets SET used_at = ? WHERE secret_hash = ? AND used_at IS NULL`), now, hashSecret(secret))
			if err := oneRow(res, err); errors.Is(err, ErrNotFound) {
				ended = ErrDeviceReused
			} else if err != nil {
				return err
			}
		}
		if ended != nil {
			return s.endDevice(ctx, tx, id)
		}
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO device_secrets (secret_hash, device_id) VALUES (?, ?)`), nextHash, id); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, s.q(`UPDATE device_signons SET last_used_at = ?, computer = COALESCE(NULLIF(?, ''), computer) WHERE id = ?`),
			now, b.Computer, id); err != nil {
			return err
		}
		// The organization it was issued in while the account is still its instructor,
		// else where a password sign-in would land.
		if org.Valid {
			var n int
			if err := tx.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM memberships WHERE account_id = ? AND organization_id = ?`), account, org.Int64).Scan(&n); err != nil {
				return err
			}
			org.Valid = n > 0
		}
		if !org.Valid {
			if org, err = s.lastMembership(ctx, tx, account); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO sessions (token_hash, account_id, organization_id, device_id, case_id, created_at, expires_at)
VALUES (?, ?, ?, ?, '', ?, ?)`), tokenHash, account, org, id, now, now+s.opts.SessionTTL.Milliseconds()); err != nil {
			return err
		}
		out.Session, err = s.readSession(ctx, tx, token)
		return err
	})
	if err != nil {
		return nil, err
	}
	if ended != nil {
		return nil, ended
	}
	return out, nil
}

// DeviceSignOut ends the device sign-on that secret (its current secret or an earlier
// one) belongs to, with the sessions it started: the desktop forgot the link. An unknown
// secret is no error: there is nothing left to end.
func (s *Store) DeviceSignOut(ctx context.Context, secret string) error {
	if secret == "" || len(secret) > 128 {
		return nil
	}
	return s.inTx(ctx, func(tx *sql.Tx) error {
		var id int64
		err := tx.QueryRowContext(ctx, s.q(`SELECT device_id FROM device_secrets WHERE secret_hash = ?`), hashSecret(secret)).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		return s.endDevice(ctx, tx, id)
	})
}

// Devices lists the live device sign-ons of an account, the most recently used first.
func (s *Store) Devices(ctx context.Context, accountID int64) ([]Device, error) {
	now := s.now()
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT id, external_user, computer, created_at, last_used_at FROM device_signons
WHERE account_id = ? AND last_used_at > ? AND created_at > ? ORDER BY last_used_at DESC, id DESC`),
		accountID, now-s.opts.DeviceIdle.Milliseconds(), now-s.opts.DeviceLifetime.Milliseconds())
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []Device{}
	for rows.Next() {
		var d Device
		var created, used int64
		if err := rows.Scan(&d.ID, &d.ExternalUser, &d.Computer, &created, &used); err != nil {
			return nil, err
		}
		d.CreatedAt, d.LastUsedAt, d.ExpiresAt = time.UnixMilli(created), time.UnixMilli(used), s.deviceExpiry(created, used)
		out = append(out, d)
	}
	return out, rows.Err()
}

// RevokeDevice ends the account's device sign-on id with the sessions it started;
// ErrNotFound when the account has no such device sign-on.
func (s *Store) RevokeDevice(ctx context.Context, accountID, id int64) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM device_signons WHERE id = ? AND account_id = ?`), id, accountID).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return ErrNotFound
		}
		return s.endDevice(ctx, tx, id)
	})
}

// deviceExpiry is when a device sign-on issued at created and last used at lastUsed ends.
func (s *Store) deviceExpiry(created, lastUsed int64) time.Time {
	return time.UnixMilli(min(lastUsed+s.opts.DeviceIdle.Milliseconds(), created+s.opts.DeviceLifetime.Milliseconds()))
}

// endDevice deletes device sign-on id, its secrets and the sessions it started.
func (s *Store) endDevice(ctx context.Context, tx *sql.Tx, id int64) error {
	for _, q := range []string{
		`DELETE FROM sessions WHERE device_id = ?`,
		`DELETE FROM device_secrets WHERE device_id = ?`,
		`DELETE FROM device_signons WHERE id = ?`,
	} {
		if _, err := tx.ExecContext(ctx, s.q(q), id); err != nil {
			return err
		}
	}
	return nil
}

// endDevices ends every device sign-on that where (a condition on device_signons) selects.
func (s *Store) endDevices(ctx context.Context, tx *sql.Tx, where string, args ...any) error {
	rows, err := tx.QueryContext(ctx, s.q(`SELECT id FROM device_signons WHERE `+where), args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return err
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	rows.Close() // before the deletes: SQLite's connection is busy while rows are open
	for _, id := range ids {
		if err := s.endDevice(ctx, tx, id); err != nil {
			return err
		}
	}
	return nil
}

// deleteExpiredDevices ends the device sign-ons past their idle period or lifetime.
func (s *Store) deleteExpiredDevices(ctx context.Context, tx *sql.Tx, now int64) error {
	return s.endDevices(ctx, tx, `last_used_at <= ? OR created_at <= ?`,
		now-s.opts.DeviceIdle.Milliseconds(), now-s.opts.DeviceLifetime.Milliseconds())
}
