package appservice

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/partnergate/partnergate/appservice/store"
	"github.com/partnergate/partnergate/appservice/web"
	"github.com/partnergate/partnergate/linkspec"
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
		Instructor:     Instructor{Username: "instructor", Password: "a long demo password"},
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

// TestStartRefusesDirectoryWithoutRule: a directories file whose directory names no claim
// entitling a user to its organization, and does not say allow_any_user, stops the start,
// naming the directory and the setting; with the rule it starts.
func TestStartRefusesDirectoryWithoutRule(t *testing.T) {
	dir := t.TempDir()
	start := func(rule string) (*Server, error) {
		file := filepath.Join(dir, "directories.json")
		if err := os.WriteFile(file, []byte(`[{"name": "south", "label": "South ID", "partner": "demo", "organization": "org-2",
	"issuer": "https://login.example/tenant/v2.0", "client_id": "south-app", "client_secret_env": "SOUTH_SECRET"`+rule+`}]`), 0o600); err != nil {
			t.Fatal(err)
		}
		ds, err := ReadDirectories(file)
		if err != nil {
			t.Fatal(err)
		}
		return Start(context.Background(), Config{Listen: "127.0.0.1:0", Database: filepath.Join(dir, "app.db"), SecretFile: filepath.Join(dir, "app.secret"),
			UpstreamSecret: "0123456789abcdef0123456789abcdef", Instructor: Instructor{Username: "instructor"}, Directories: ds, Stdout: io.Discard})
	}
	s, err := start("")
	if err == nil {
		s.Shutdown(context.Background())
		t.Fatal("Start with a directory without require_claims or allow_any_user succeeded, want it refused")
	}
	for _, want := range []string{`directory "south"`, "require_claims", "allow_any_user"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Start = %v, want the error to name %s", err, want)
		}
	}
	s, err = start(`, "require_claims": {"tid": ["tenant"], "groups": ["south-staff"]}`)
	if err != nil {
		t.Fatalf("Start with require_claims = %v", err)
	}
	s.Shutdown(context.Background())
}

// TestReadEIDProviders: an eID providers file is read with its secret from the environment
// variable it names; a field the configuration does not know (a misspelt min_acr) and a
// provider without a lowest level of assurance stop the start.
func TestReadEIDProviders(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("EID_TEST_SECRET", "from-the-environment")
	read := func(extra string) ([]web.EIDProvider, error) {
		file := filepath.Join(dir, "eid.json")
		if err := os.WriteFile(file, []byte(`[{"name": "idporten", "label": "ID-porten", "issuer": "https://idporten.no",
	"client_id": "c", "client_secret_env": "EID_TEST_SECRET", "country": "NO", "number_claim": "pid"`+extra+`}]`), 0o600); err != nil {
			t.Fatal(err)
		}
		return ReadEIDProviders(file)
	}
	ps, err := read(`, "min_acr": "idporten-loa-substantial"`)
	if err != nil || len(ps) != 1 || ps[0].MinACR != "idporten-loa-substantial" || ps[0].ClientSecret != "" {
		t.Fatalf("ReadEIDProviders = %+v, %v, want one provider, its secret not from the file", ps, err)
	}
	if got := eidSecrets(ps); got[0].ClientSecret != "from-the-environment" || ps[0].ClientSecret != "" {
		t.Errorf("eidSecrets = %q, want the environment's secret in a copy", got[0].ClientSecret)
	}
	if _, err := read(`, "min_acr": "idporten-loa-substantial", "minacr": "x"`); err == nil {
		t.Error("ReadEIDProviders with an unknown field = nil, want an error")
	}
	ps, err = read(``)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Start(context.Background(), Config{Listen: "127.0.0.1:0", Database: filepath.Join(dir, "app.db"), SecretFile: filepath.Join(dir, "app.secret"),
		UpstreamSecret: "0123456789abcdef0123456789abcdef", Instructor: Instructor{Username: "instructor"}, EIDProviders: ps, Stdout: io.Discard})
	if err == nil {
		s.Shutdown(context.Background())
		t.Fatal("Start with an eID provider without min_acr succeeded, want it refused")
	}
	if !strings.Contains(err.Error(), "min_acr") {
		t.Errorf("Start = %v, want the error to name min_acr", err)
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

// TestStartDemoMember: with DemoMember, the contact of the Go link payload in the file has a
// plan, which that Go link's member sees; a file that is missing or holds no Go link
// payload, or a demo member without a demo organization, stops the start.
func TestStartDemoMember(t *testing.T) {
	dir := t.TempDir()
	goLink := filepath.Join(dir, "go-link.json")
	payload := `{"organizationName": "North Clinic", "organizationId": "org-1",
  "contact": {"id": "contact-1", "firstname": "Ola", "lastname": "Nordmann", "birthdate": "1985-04-17", "email": "ola@example.org"}}`
	mainLink := filepath.Join(dir, "main-link.json")
	for path, data := range map[string]string{goLink: payload,
		mainLink: `{"employeeId": "emp-1", "organizationName": "North Clinic", "organizationId": "org-1", "contact": {"id": "contact-1", "firstname": "Ola", "lastname": "Nordmann"}}`} {
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg := func(db, org, member string) Config {
		return Config{Listen: "127.0.0.1:0", Database: filepath.Join(dir, db), SecretFile: filepath.Join(dir, "app.secret"),
			UpstreamSecret: "0123456789abcdef0123456789abcdef", Instructor: Instructor{Username: "instructor", Password: "a long demo password"},
			DemoData: true, DemoOrganization: org, DemoMember: member, Stdout: io.Discard}
	}
	ctx := context.Background()
	for start := 1; start <= 2; start++ {
		s, err := Start(ctx, cfg("app.db", "demo:org-1:North Clinic", goLink))
		if err != nil {
			t.Fatalf("Start #%d = %v", start, err)
		}
		p, err := linkspec.DecodePayload([]byte(payload))
		if err != nil {
			t.Fatal(err)
		}
		r, err := s.store.ResolveLink(ctx, store.Link{Partner: "demo", Endpoint: "url", RequestID: "r", Kind: linkspec.KindGo, Payload: p})
		if err != nil {
			t.Fatal(err)
		}
		ex, err := s.store.ExchangeCode(ctx, r.Code)
		if err != nil {
			t.Fatal(err)
		}
		plans, err := s.store.MemberWorkouts(ctx, ex.Session)
		if err != nil || len(plans) != 1 || plans[0].Title != store.DemoMemberPlan {
			t.Errorf("after start #%d the Go link's member has plans %+v, %v, want one %q", start, plans, err, store.DemoMemberPlan)
		}
		s.Shutdown(ctx)
	}
	for _, tt := range []struct{ name, org, member string }{
		{"missing file", "demo:org-1:North Clinic", filepath.Join(dir, "none.json")},
		{"main-client payload", "demo:org-1:North Clinic", mainLink},
		{"no demo organization", "", goLink},
	} {
		if s, err := Start(ctx, cfg("other.db", tt.org, tt.member)); err == nil {
			s.Shutdown(ctx)
			t.Errorf("Start with a demo member (%s) succeeded, want an error", tt.name)
		}
	}
}

// TestStartInstructorPasswordRules: a configured first instructor's password that breaks
// the sign-up form's rules stops the start, saying which rule, while the account does not
// exist; once it exists the setting does not change its password, so a start goes on.
func TestStartInstructorPasswordRules(t *testing.T) {
	dir := t.TempDir()
	cfg := func(password string) Config {
		return Config{Listen: "127.0.0.1:0", Database: filepath.Join(dir, "app.db"), SecretFile: filepath.Join(dir, "app.secret"),
			UpstreamSecret: "0123456789abcdef0123456789abcdef", Instructor: Instructor{Username: "instructor", Password: password}, Stdout: io.Discard}
	}
	ctx := context.Background()
	for _, weak := range []string{"pw", "password1234", "instructor-2026!"} {
		if s, err := Start(ctx, cfg(weak)); err == nil {
			s.Shutdown(ctx)
			t.Errorf("Start with the first instructor's password %q and no account = nil, want the broken rule", weak)
		} else if !strings.Contains(err.Error(), "PARTNERGATE_APP_INSTRUCTOR_PASSWORD") || !strings.Contains(err.Error(), "The password must") && !strings.Contains(err.Error(), "commonest") {
			t.Errorf("Start with the first instructor's password %q = %v, want the setting and the broken rule named", weak, err)
		}
	}
	s, err := Start(ctx, cfg("a long demo password"))
	if err != nil {
		t.Fatalf("Start with a good password = %v", err)
	}
	s.Shutdown(ctx)
	s, err = Start(ctx, cfg("pw"))
	if err != nil {
		t.Fatalf("Start with a weak password once the account exists = %v, want it started (the setting changes nothing)", err)
	}
	if _, err := s.store.SignIn(ctx, "instructor", "pw", ""); err == nil {
		t.Errorf("SignIn with the later, weak setting succeeded: the setting changed the password")
	}
	if _, err := s.store.SignIn(ctx, "instructor", "a long demo password", ""); err != nil {
		t.Errorf("SignIn with the first password = %v, want signed in", err)
	}
	s.Shutdown(ctx)
}

// TestStartDatabaseTimeout: the configured database timeout reaches the handler (the start
// line says which is in use), the default when none is set, and one above
// MaxDatabaseTimeout, which the write timeout would cut off, stops the start.
func TestStartDatabaseTimeout(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		set  time.Duration
		want string
	}{{0, "10s"}, {750 * time.Millisecond, "750ms"}, {MaxDatabaseTimeout, "25s"}, {MaxDatabaseTimeout + time.Millisecond, ""}, {MinDatabaseTimeout - time.Millisecond, ""}, {-time.Second, ""}} {
		dir := t.TempDir()
		var logs strings.Builder
		s, err := Start(ctx, Config{Listen: "127.0.0.1:0", Database: filepath.Join(dir, "app.db"), SecretFile: filepath.Join(dir, "app.secret"),
			UpstreamSecret: "0123456789abcdef0123456789abcdef", DatabaseTimeout: tc.set, Stdout: io.Discard,
			Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
		if tc.want == "" {
			if err == nil {
				s.Shutdown(ctx)
				t.Errorf("Start with database timeout %v = nil, want an error", tc.set)
			}
			continue
		}
		if err != nil {
			t.Fatalf("Start with database timeout %v = %v", tc.set, err)
		}
		s.Shutdown(ctx)
		if want := `"database_timeout":"` + tc.want + `"`; !strings.Contains(logs.String(), want) {
			t.Errorf("Start with database timeout %v logged %s, want %s", tc.set, logs.String(), want)
		}
	}
}
