package store

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// desk is the wrapper installation and external user the device tests sign on for.
var desk = DeviceBinding{ExternalUser: `CLINIC\asa`, Installation: "inst-1", Computer: "DESK-7"}

// instructorSignIn makes the instructor "asa" (once) and signs her in with her password.
func instructorSignIn(t *testing.T, s *Store) *SignedIn {
	t.Helper()
	ctx := context.Background()
	if _, err := s.EnsureInstructor(ctx, "asa", "asa@service.example", "Åsa", "first-password"); err != nil {
		t.Fatal(err)
	}
	in, err := s.SignIn(ctx, "asa", "first-password", "")
	if err != nil {
		t.Fatalf("SignIn = %v", err)
	}
	return in
}

// issue gives a fresh sign-in of asa a device sign-on for desk and returns its secret.
func issue(t *testing.T, s *Store) (string, *SignedIn) {
	t.Helper()
	in := instructorSignIn(t, s)
	secret, d, err := s.IssueDeviceSignOn(context.Background(), in.Token, desk)
	if err != nil || secret == "" || d.ID == 0 {
		t.Fatalf("IssueDeviceSignOn = %q, %+v, %v, want a secret", secret, d, err)
	}
	return secret, in
}

// signIn exchanges secret for desk and fails the test unless it gives a session.
func signIn(t *testing.T, s *Store, secret string) *DeviceSignedIn {
	t.Helper()
	out, err := s.DeviceSignIn(context.Background(), secret, desk)
	if err != nil {
		t.Fatalf("DeviceSignIn = %v, want a session", err)
	}
	return out
}

// refused fails the test unless exchanging secret for b fails with want.
func refused(t *testing.T, s *Store, secret string, b DeviceBinding, want error, when string) {
	t.Helper()
	if _, err := s.DeviceSignIn(context.Background(), secret, b); !errors.Is(err, want) {
		t.Errorf("DeviceSignIn(%s) = %v, want %v", when, err, want)
	}
}

// ended fails the test unless the session of token has ended.
func ended(t *testing.T, s *Store, token, what string) {
	t.Helper()
	if _, err := s.Session(context.Background(), token); !errors.Is(err, ErrNoSession) {
		t.Errorf("Session(%s) = %v, want ErrNoSession", what, err)
	}
}

// TestDeviceSignOnRotates: the secret gives a session of its account in the organization it
// was issued in, and a new secret; the new one works, and so on. The database keeps
// hashes only.
func TestDeviceSignOnRotates(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			s := b.open(t, newClock())
			secret, in := issue(t, s)
			first := signIn(t, s, secret)
			if first.Secret == secret || first.Secret == "" {
				t.Fatalf("DeviceSignIn gave secret %q, want a new one", first.Secret)
			}
			sess, err := s.Session(ctx, first.Token)
			if err != nil || sess.Account == nil || sess.Account.Username != "asa" || sess.Organization == nil || sess.Organization.ID != in.Session.Organization.ID {
				t.Fatalf("Session(device session) = %+v, %v, want asa's in her organization", sess, err)
			}
			second := signIn(t, s, first.Secret)
			signIn(t, s, second.Secret)
			var n int
			queryRow(t, s, `SELECT COUNT(*) FROM device_secrets WHERE secret_hash IN (?, ?, ?)`, []any{secret, first.Secret, second.Secret}, &n)
			if n != 0 {
				t.Errorf("%d secrets stored in clear, want none", n)
			}
			queryRow(t, s, `SELECT COUNT(*) FROM device_secrets WHERE secret_hash IN (?, ?, ?)`,
				[]any{hashSecret(secret), hashSecret(first.Secret), hashSecret(second.Secret)}, &n)
			if n != 3 {
				t.Errorf("%d of the three used secrets' hashes kept, want 3 (for the reuse check)", n)
			}
		})
	}
}

// TestDeviceSignOnReuse: presenting a secret that was exchanged already ends the whole
// family: the thief's and the desktop's next secrets are worth nothing, and the sessions
// the family started end.
func TestDeviceSignOnReuse(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			s := b.open(t, newClock())
			secret, _ := issue(t, s)
			first := signIn(t, s, secret)
			refused(t, s, secret, desk, ErrDeviceReused, "rotated secret")
			refused(t, s, first.Secret, desk, ErrDeviceUnknown, "the family's current secret after reuse")
			ended(t, s, first.Token, "the family's session after reuse")
			if n := count(t, s, "device_signons"); n != 0 {
				t.Errorf("%d device sign-ons after reuse, want 0", n)
			}
		})
	}
}

// TestDeviceSignOnConcurrentUse: one secret exchanged twice at once gives at most one
// session, and the second exchange ends the family as a later one would.
func TestDeviceSignOnConcurrentUse(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			s := b.open(t, newClock())
			secret, _ := issue(t, s)
			var wg sync.WaitGroup
			errs := make([]error, 2)
			for i := range errs {
				wg.Go(func() { _, errs[i] = s.DeviceSignIn(ctx, secret, desk) })
			}
			wg.Wait()
			ok := 0
			for _, err := range errs {
				switch {
				case err == nil:
					ok++
				case !errors.Is(err, ErrDeviceReused):
					t.Errorf("DeviceSignIn at once = %v, want nil or ErrDeviceReused", err)
				}
			}
			if ok > 1 {
				t.Errorf("%d exchanges of one secret succeeded, want at most 1", ok)
			}
			if ok == 1 && count(t, s, "device_signons") != 0 {
				t.Errorf("the family outlived a secret exchanged twice")
			}
		})
	}
}

// TestDeviceSignOnBinding: the secret works only for the installation and the external
// user it was issued for (the user in any case); presented by another, it ends.
func TestDeviceSignOnBinding(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			s := b.open(t, newClock())
			secret, _ := issue(t, s)
			other := desk
			other.ExternalUser = `clinic\ASA`
			out, err := s.DeviceSignIn(ctx, secret, other)
			if err != nil {
				t.Fatalf("DeviceSignIn(external user in another case) = %v, want a session", err)
			}
			in := instructorSignIn(t, s)
			for _, bad := range []DeviceBinding{
				{ExternalUser: desk.ExternalUser, Installation: "inst-2"},
				{ExternalUser: `CLINIC\bo`, Installation: desk.Installation},
			} {
				secret, _, err := s.IssueDeviceSignOn(ctx, in.Token, desk)
				if err != nil {
					t.Fatal(err)
				}
				refused(t, s, secret, bad, ErrDeviceUnknown, "another installation or external user")
				refused(t, s, secret, desk, ErrDeviceUnknown, "its own binding after another's")
			}
			// issuing anew for the same desk and user ended the first family
			refused(t, s, out.Secret, desk, ErrDeviceUnknown, "family replaced by a new issue")
		})
	}
}

// TestDeviceSignOnIssueRules: only a fresh instructor's sign-in gets one; not a session
// older than DeviceIssueWindow, not a session a device sign-on started, not a member's.
func TestDeviceSignOnIssueRules(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			c := newClock()
			s := b.open(t, c)
			in := instructorSignIn(t, s)
			c.Add(DeviceIssueWindow - time.Second)
			secret, _, err := s.IssueDeviceSignOn(ctx, in.Token, desk)
			if err != nil {
				t.Fatalf("IssueDeviceSignOn at 9:59 after sign-in = %v, want a secret", err)
			}
			c.Add(2 * time.Second)
			if _, _, err := s.IssueDeviceSignOn(ctx, in.Token, desk); !errors.Is(err, ErrDeviceRefused) {
				t.Errorf("IssueDeviceSignOn at 10:01 = %v, want ErrDeviceRefused", err)
			}
			dev := signIn(t, s, secret)
			if _, _, err := s.IssueDeviceSignOn(ctx, dev.Token, desk); !errors.Is(err, ErrDeviceRefused) {
				t.Errorf("IssueDeviceSignOn(a device sign-on's session) = %v, want ErrDeviceRefused", err)
			}
			goEx, err := s.ExchangeCode(ctx, mustResolve(t, s, goLink("org-1", "c-1", "k@example.com")).Code)
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := s.IssueDeviceSignOn(ctx, goEx.Token, desk); !errors.Is(err, ErrDeviceRefused) {
				t.Errorf("IssueDeviceSignOn(a member's session) = %v, want ErrDeviceRefused", err)
			}
			if _, _, err := s.IssueDeviceSignOn(ctx, "no-such-session", desk); !errors.Is(err, ErrNoSession) {
				t.Errorf("IssueDeviceSignOn(no session) = %v, want ErrNoSession", err)
			}
		})
	}
}

// TestDeviceSignOnExpiry: unused for the idle period (30 days) it ends; used every day it
// still ends at its lifetime (180 days). The list shows neither.
func TestDeviceSignOnExpiry(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			c := newClock()
			s := b.open(t, c)
			secret, _ := issue(t, s)
			c.Add(DefaultDeviceIdle - time.Minute)
			secret = signIn(t, s, secret).Secret
			c.Add(DefaultDeviceIdle)
			refused(t, s, secret, desk, ErrDeviceExpired, "after 30 idle days")

			c.Add(time.Hour)
			in := instructorSignIn(t, s)
			secret, _, err := s.IssueDeviceSignOn(ctx, in.Token, desk)
			if err != nil {
				t.Fatal(err)
			}
			for day := 1; day < 180; day++ {
				c.Add(24 * time.Hour)
				secret = signIn(t, s, secret).Secret
			}
			if ds, err := s.Devices(ctx, in.Session.Account.ID); err != nil || len(ds) != 1 {
				t.Fatalf("Devices on day 179 = %+v, %v, want the desk", ds, err)
			}
			c.Add(24 * time.Hour)
			if ds, err := s.Devices(ctx, in.Session.Account.ID); err != nil || len(ds) != 0 {
				t.Errorf("Devices on day 180 = %+v, %v, want none", ds, err)
			}
			refused(t, s, secret, desk, ErrDeviceExpired, "on day 180")
		})
	}
}

// TestDeviceSignOnSweep: DeleteExpired removes a device sign-on past its idle period with
// its secrets, and leaves a live one.
func TestDeviceSignOnSweep(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			c := newClock()
			s := b.open(t, c)
			issue(t, s)
			c.Add(DefaultDeviceIdle + time.Minute)
			issue(t, s)
			if err := s.DeleteExpired(ctx); err != nil {
				t.Fatal(err)
			}
			if n := count(t, s, "device_signons"); n != 1 {
				t.Errorf("%d device sign-ons after the sweep, want 1 (the live one)", n)
			}
			if n := count(t, s, "device_secrets"); n != 1 {
				t.Errorf("%d device secrets after the sweep, want 1", n)
			}
		})
	}
}

// TestDeviceSignOnPasswordChange: changing the password ends every device sign-on of the
// account and its other sessions, keeps the session that changed it; a password changed
// behind the store's back (an operator's UPDATE) ends them too, at their next use.
func TestDeviceSignOnPasswordChange(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			s := b.open(t, newClock())
			secret, in := issue(t, s)
			dev := signIn(t, s, secret)
			if err := s.ChangePassword(ctx, in.Token, "wrong-password", "second-password"); !errors.Is(err, ErrBadCredentials) {
				t.Fatalf("ChangePassword(wrong current) = %v, want ErrBadCredentials", err)
			}
			if err := s.ChangePassword(ctx, in.Token, "first-password", "second-password"); err != nil {
				t.Fatalf("ChangePassword = %v", err)
			}
			refused(t, s, dev.Secret, desk, ErrDeviceUnknown, "after a password change")
			ended(t, s, dev.Token, "the device's, after a password change")
			if _, err := s.Session(ctx, in.Token); err != nil {
				t.Errorf("Session(the one that changed it) = %v, want it kept", err)
			}
			if _, err := s.SignIn(ctx, "asa", "second-password", ""); err != nil {
				t.Errorf("SignIn(new password) = %v", err)
			}

			in2, err := s.SignIn(ctx, "asa", "second-password", "")
			if err != nil {
				t.Fatal(err)
			}
			secret, _, err = s.IssueDeviceSignOn(ctx, in2.Token, desk)
			if err != nil {
				t.Fatal(err)
			}
			hash, err := hashPassword("third-password")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.db.ExecContext(ctx, s.q(`UPDATE accounts SET password_hash = ? WHERE username = 'asa'`), hash); err != nil {
				t.Fatal(err)
			}
			refused(t, s, secret, desk, ErrDeviceExpired, "after the operator reset the password")
		})
	}
}

// TestDeviceSignOnRevoke: the account's list shows each desktop (external user, computer,
// last use); revoking one ends it and its session, and the wrapper's sign-out
// (DeviceSignOut) does the same with the secret; another account cannot revoke it.
func TestDeviceSignOnRevoke(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			c := newClock()
			s := b.open(t, c)
			secret, in := issue(t, s)
			c.Add(time.Hour)
			dev := signIn(t, s, secret)
			account := in.Session.Account.ID
			ds, err := s.Devices(ctx, account)
			if err != nil || len(ds) != 1 {
				t.Fatalf("Devices = %+v, %v, want one", ds, err)
			}
			d := ds[0]
			if d.ExternalUser != desk.ExternalUser || d.Computer != desk.Computer || !d.LastUsedAt.Equal(c.Now().Truncate(time.Millisecond)) {
				t.Errorf("Devices[0] = %+v, want %s on %s last used now", d, desk.ExternalUser, desk.Computer)
			}
			if want := d.LastUsedAt.Add(DefaultDeviceIdle); !d.ExpiresAt.Equal(want) {
				t.Errorf("Devices[0].ExpiresAt = %v, want %v", d.ExpiresAt, want)
			}

			if _, err := s.EnsureInstructor(ctx, "bo", "bo@service.example", "Bo", "bo-password-1"); err != nil {
				t.Fatal(err)
			}
			bo, err := s.SignIn(ctx, "bo", "bo-password-1", "")
			if err != nil {
				t.Fatal(err)
			}
			if err := s.RevokeDevice(ctx, bo.Session.Account.ID, d.ID); !errors.Is(err, ErrNotFound) {
				t.Errorf("RevokeDevice(another account's) = %v, want ErrNotFound", err)
			}
			if err := s.RevokeDevice(ctx, account, d.ID); err != nil {
				t.Fatalf("RevokeDevice = %v", err)
			}
			refused(t, s, dev.Secret, desk, ErrDeviceUnknown, "after revoke")
			ended(t, s, dev.Token, "revoked desktop's")
			if _, err := s.Session(ctx, in.Token); err != nil {
				t.Errorf("Session(the password sign-in) after revoke = %v, want it kept", err)
			}

			secret, _ = issue(t, s)
			if err := s.DeviceSignOut(ctx, secret); err != nil {
				t.Fatalf("DeviceSignOut = %v", err)
			}
			refused(t, s, secret, desk, ErrDeviceUnknown, "after DeviceSignOut")
			if err := s.DeviceSignOut(ctx, secret); err != nil {
				t.Errorf("DeviceSignOut again = %v, want nil", err)
			}
		})
	}
}
