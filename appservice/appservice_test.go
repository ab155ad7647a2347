package appservice

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/partnergate/partnergate/appservice/store"
)

func TestStartFirstRun(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{
		Listen:         "127.0.0.1:0",
		Database:       filepath.Join(dir, "app.db"),
		SecretFile:     filepath.Join(dir, "app.secret"),
		UpstreamSecret: "0123456789abcdef0123456789abcdef",
		Instructor:     Instructor{Username: "Instructor"},
	}
	var out bytes.Buffer
	cfg.Stdout = &out
	s, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Start = %v", err)
	}
	res, err := http.Get("http://" + s.Addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || string(b) != "ok\n" {
		t.Errorf("GET /healthz = %d %q, want 200 ok", res.StatusCode, b)
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Errorf("Shutdown = %v", err)
	}
	if !regexp.MustCompile(`^First instructor account: username instructor, password [0-9a-f]{24} \(shown once\)\n$`).MatchString(out.String()) {
		t.Errorf("first start printed %q, want the generated credentials", out.String())
	}
	fi, err := os.Stat(cfg.SecretFile)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("secret file: %v, mode %v, want 0600", err, fi.Mode().Perm())
	}

	out.Reset()
	s, err = Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("second Start = %v", err)
	}
	s.Shutdown(context.Background())
	if out.Len() != 0 {
		t.Errorf("second start printed %q, want nothing: the account exists", out.String())
	}
}

// TestStartSeedsDemoData: with DemoData the instructor's organization has demo persons and
// plans after the first start, and a second start adds nothing.
func TestStartSeedsDemoData(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{
		Listen:         "127.0.0.1:0",
		Database:       filepath.Join(dir, "app.db"),
		SecretFile:     filepath.Join(dir, "app.secret"),
		UpstreamSecret: "0123456789abcdef0123456789abcdef",
		Instructor:     Instructor{Username: "instructor", Password: "pw"},
		DemoData:       true,
		Stdout:         io.Discard,
	}
	for start := 1; start <= 2; start++ {
		s, err := Start(context.Background(), cfg)
		if err != nil {
			t.Fatalf("Start #%d = %v", start, err)
		}
		ctx := context.Background()
		_, org, err := s.store.InstructorHome(ctx, "instructor")
		if err != nil {
			t.Fatal(err)
		}
		persons, err1 := s.store.Persons(ctx, org, "", 0)
		plans, err2 := s.store.Workouts(ctx, org, store.WorkoutQuery{})
		if err1 != nil || err2 != nil || len(persons) != 3 || len(plans) != 4 {
			t.Errorf("after start #%d: %d persons (%v), %d plans (%v), want 3 and 4", start, len(persons), err1, len(plans), err2)
		}
		s.Shutdown(ctx)
	}
}

func TestStartRefusesWithoutUpstreamSecret(t *testing.T) {
	dir := t.TempDir()
	_, err := Start(context.Background(), Config{Listen: "127.0.0.1:0", Database: filepath.Join(dir, "app.db"),
		SecretFile: filepath.Join(dir, "s"), UpstreamSecret: "short"})
	if err == nil {
		t.Fatal("Start without a 32-byte upstream secret = nil, want an error")
	}
}

func TestStartDemoOrganization(t *testing.T) {
	for _, tt := range []struct {
		org     string
		wantErr bool
	}{
		{"demo:org-1:North Clinic", false},
		{"demo:org-1", true},
		{"demo::North Clinic", true},
	} {
		t.Run(tt.org, func(t *testing.T) {
			dir := t.TempDir()
			s, err := Start(context.Background(), Config{
				Listen: "127.0.0.1:0", Database: filepath.Join(dir, "app.db"), SecretFile: filepath.Join(dir, "app.secret"),
				UpstreamSecret: "0123456789abcdef0123456789abcdef", Instructor: Instructor{Username: "instructor", Password: "a long demo password"},
				DemoData: true, DemoOrganization: tt.org, Stdout: io.Discard,
			})
			if tt.wantErr {
				if err == nil {
					s.Shutdown(context.Background())
					t.Fatalf("Start with demo organization %q succeeded, want an error", tt.org)
				}
				return
			}
			if err != nil {
				t.Fatalf("Start = %v", err)
			}
			s.Shutdown(context.Background())
		})
	}
}
