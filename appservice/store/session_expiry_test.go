package store

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestPendingSessionExpiry: a first-sight employee's pending session lasts 15 minutes:
// still there at 14:59, gone at 15:01.
func TestPendingSessionExpiry(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			c := newClock()
			s := b.open(t, c)
			ex, err := s.ExchangeCode(ctx, mustResolve(t, s, mainLink("emp-1", "org-1", "c-1")).Code)
			if err != nil {
				t.Fatal(err)
			}
			if !ex.Session.Pending {
				t.Fatalf("first-sight session = %+v, want pending", ex.Session)
			}
			c.Add(14*time.Minute + 59*time.Second)
			if sess, err := s.Session(ctx, ex.Token); err != nil || !sess.Pending {
				t.Errorf("Session at 14:59 = %+v, %v, want the pending session", sess, err)
			}
			c.Add(2 * time.Second)
			if _, err := s.Session(ctx, ex.Token); !errors.Is(err, ErrNoSession) {
				t.Errorf("Session at 15:01 = %v, want ErrNoSession", err)
			}
		})
	}
}

// TestPeekCode: peeking tells whom a code signs in and why it cannot, and never spends it.
func TestPeekCode(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			c := newClock()
			s := b.open(t, c)

			code := mustResolve(t, s, mainLink("emp-1", "org-1", "c-1")).Code
			for range 3 {
				tg, err := s.PeekCode(ctx, code)
				if err != nil || tg.Account != nil || tg.Employee == nil || tg.Employee.PartnerID != "emp-1" || tg.Employee.Partner != "demo" {
					t.Fatalf("PeekCode(first sight) = %+v, %v, want no account and employee emp-1 of demo", tg, err)
				}
			}
			if _, err := s.ExchangeCode(ctx, code); err != nil {
				t.Fatalf("ExchangeCode after peeks = %v, want nil (peeking does not spend)", err)
			}
			if _, err := s.PeekCode(ctx, code); !errors.Is(err, ErrCodeUsed) {
				t.Errorf("PeekCode(used) = %v, want ErrCodeUsed", err)
			}

			goCode := mustResolve(t, s, goLink("org-1", "c-2", "k@example.com")).Code
			if tg, err := s.PeekCode(ctx, goCode); err != nil || tg.Account == nil || tg.Account.Role != RoleMember || tg.Employee != nil {
				t.Errorf("PeekCode(Go link) = %+v, %v, want the member account", tg, err)
			}
			c.Add(60 * time.Second)
			if _, err := s.PeekCode(ctx, goCode); !errors.Is(err, ErrCodeExpired) {
				t.Errorf("PeekCode after 60s = %v, want ErrCodeExpired", err)
			}
			if _, err := s.PeekCode(ctx, "not-a-code"); !errors.Is(err, ErrCodeInvalid) {
				t.Errorf("PeekCode(unknown) = %v, want ErrCodeInvalid", err)
			}
		})
	}
}
