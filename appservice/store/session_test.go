package store

import (
	"context"
	"errors"
	"sync"
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
			if tg, err := s.PeekCode(ctx, goCode); err != nil || tg.Account == nil || tg.Account.Role != RoleMember || tg.Account.DisplayName != "Kari Hansen" || tg.Employee != nil ||
				tg.Organization == nil || tg.Organization.Name != "North Clinic" || tg.Organization.PartnerID != "org-1" {
				t.Errorf("PeekCode(Go link) = %+v, %v, want the member account Kari Hansen at North Clinic", tg, err)
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

// TestCancelCode: a code the person declined is spent without a session, once; it then
// signs no one in, and cancelling a used, expired or unknown code says which it is.
func TestCancelCode(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			c := newClock()
			s := b.open(t, c)

			code := mustResolve(t, s, goLink("org-1", "c-2", "k@example.com")).Code
			if err := s.CancelCode(ctx, code); err != nil {
				t.Fatalf("CancelCode = %v, want nil", err)
			}
			if _, err := s.ExchangeCode(ctx, code); !errors.Is(err, ErrCodeUsed) {
				t.Errorf("ExchangeCode after CancelCode = %v, want ErrCodeUsed", err)
			}
			if n := count(t, s, "sessions"); n != 0 {
				t.Errorf("sessions after cancelling = %d, want 0", n)
			}
			if err := s.CancelCode(ctx, code); !errors.Is(err, ErrCodeUsed) {
				t.Errorf("CancelCode twice = %v, want ErrCodeUsed", err)
			}
			late := mustResolve(t, s, goLink("org-1", "c-2", "k@example.com")).Code
			c.Add(60 * time.Second)
			if err := s.CancelCode(ctx, late); !errors.Is(err, ErrCodeExpired) {
				t.Errorf("CancelCode after 60s = %v, want ErrCodeExpired", err)
			}
			if err := s.CancelCode(ctx, "not-a-code"); !errors.Is(err, ErrCodeInvalid) {
				t.Errorf("CancelCode(unknown) = %v, want ErrCodeInvalid", err)
			}
		})
	}
}

func TestLoginCode(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			c := newClock()
			s := b.open(t, c)

			t.Run("single use", func(t *testing.T) {
				r := mustResolve(t, s, goLink("org1", "c1", "k@example.com"))
				if len(r.Code) < 43 { // 256 bits, base64url
					t.Errorf("code length = %d, want >= 43", len(r.Code))
				}
				if _, err := s.ExchangeCode(ctx, r.Code); err != nil {
					t.Fatalf("first ExchangeCode = %v", err)
				}
				if _, err := s.ExchangeCode(ctx, r.Code); !errors.Is(err, ErrCodeUsed) {
					t.Errorf("second ExchangeCode = %v, want ErrCodeUsed", err)
				}
			})
			t.Run("concurrent exchanges, one wins", func(t *testing.T) {
				r := mustResolve(t, s, goLink("org1", "c1", "k@example.com"))
				var wg sync.WaitGroup
				var mu sync.Mutex
				wins := 0
				for i := 0; i < 4; i++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						if _, err := s.ExchangeCode(ctx, r.Code); err == nil {
							mu.Lock()
							wins++
							mu.Unlock()
						} else if !errors.Is(err, ErrCodeUsed) {
							t.Errorf("concurrent ExchangeCode = %v, want nil or ErrCodeUsed", err)
						}
					}()
				}
				wg.Wait()
				if wins != 1 {
					t.Errorf("successful exchanges = %d, want 1", wins)
				}
			})
			t.Run("expires after 60 seconds", func(t *testing.T) {
				r := mustResolve(t, s, goLink("org1", "c1", "k@example.com"))
				c.Add(60 * time.Second)
				if _, err := s.ExchangeCode(ctx, r.Code); !errors.Is(err, ErrCodeExpired) {
					t.Errorf("ExchangeCode after 60s = %v, want ErrCodeExpired", err)
				}
				r = mustResolve(t, s, goLink("org1", "c1", "k@example.com"))
				c.Add(59 * time.Second)
				if _, err := s.ExchangeCode(ctx, r.Code); err != nil {
					t.Errorf("ExchangeCode after 59s = %v, want nil", err)
				}
			})
			t.Run("unknown", func(t *testing.T) {
				if _, err := s.ExchangeCode(ctx, "not-a-code"); !errors.Is(err, ErrCodeInvalid) {
					t.Errorf("ExchangeCode(unknown) = %v, want ErrCodeInvalid", err)
				}
			})
			t.Run("stored hashed", func(t *testing.T) {
				r := mustResolve(t, s, goLink("org1", "c1", "k@example.com"))
				var n int
				queryRow(t, s, "SELECT COUNT(*) FROM login_codes WHERE code_hash = ?", []any{r.Code}, &n)
				if n != 0 {
					t.Errorf("login_codes holds the code in clear")
				}
			})
			t.Run("session expires", func(t *testing.T) {
				r := mustResolve(t, s, goLink("org1", "c1", "k@example.com"))
				ex, err := s.ExchangeCode(ctx, r.Code)
				if err != nil {
					t.Fatal(err)
				}
				c.Add(12 * time.Hour)
				if _, err := s.Session(ctx, ex.Token); !errors.Is(err, ErrNoSession) {
					t.Errorf("Session after 12h = %v, want ErrNoSession", err)
				}
			})
		})
	}
}
