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

func TestStartRefusesWithoutUpstreamSecret(t *testing.T) {
	dir := t.TempDir()
	_, err := Start(context.Background(), Config{Listen: "127.0.0.1:0", Database: filepath.Join(dir, "app.db"),
		SecretFile: filepath.Join(dir, "s"), UpstreamSecret: "short"})
	if err == nil {
		t.Fatal("Start without a 32-byte upstream secret = nil, want an error")
	}
}
