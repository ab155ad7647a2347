package signon

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/partnergate/partnergate/internal/wintest"
)

func TestStore(t *testing.T) {
	path := filepath.Join(wintest.TempDir(t), "sub", FileName)
	s := Open(path)
	if _, ok, err := s.Get("DOMAIN\\asa"); ok || err != nil {
		t.Fatalf("Get on no file = %v, %v; want none", ok, err)
	}
	l := Link{AccountID: 7, Username: "asa", LinkedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	if err := s.Remember("DOMAIN\\Asa", l); err != nil {
		t.Fatalf("Remember: %v", err)
	}
	if got, ok, err := Open(path).Get("domain\\asa "); !ok || err != nil || got != l {
		t.Errorf("Get = %+v, %v, %v; want %+v (names match in any case)", got, ok, err, l)
	}
	// Windows has no mode bits (Go reports 0666); the file is private there by being in
	// the user's profile folder.
	if fi, err := os.Stat(path); err != nil || (runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600) {
		t.Errorf("file mode = %v, %v; want 0600", fi.Mode().Perm(), err)
	}
	if err := s.Forget("DOMAIN\\asa"); err != nil {
		t.Fatalf("Forget: %v", err)
	}
	if _, ok, _ := s.Get("DOMAIN\\asa"); ok {
		t.Errorf("Get after Forget found a link")
	}
	_ = s.Remember("b", l)
	if err := s.Clear(); err != nil {
		t.Fatalf("Clear: %v", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("file after Clear: %v, want gone", err)
	}
	if err := os.WriteFile(path, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Get("b"); err == nil {
		t.Errorf("Get on a broken file = nil error")
	}
}

// TestCredential: a device sign-on's secret is kept with its link, sealed: on Windows with
// DPAPI (the file does not hold the secret, and a changed blob does not open), elsewhere in
// the 0600 file. Remembering the link anew, and forgetting it, end the secret.
func TestCredential(t *testing.T) {
	path := filepath.Join(wintest.TempDir(t), FileName)
	s := Open(path)
	const secret = "c2VjcmV0LW9mLXRoZS1kZXNrdG9wLTAxMjM0NTY3ODk"
	asa := Link{AccountID: 7, Username: "instructor", LinkedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	if _, _, ok, err := s.Credential(`CLINIC\asa`); ok || err != nil {
		t.Fatalf("Credential without a file = %v, %v; want none", ok, err)
	}
	if err := s.SetCredential(`CLINIC\asa`, asa, secret); err != nil {
		t.Fatalf("SetCredential: %v", err)
	}
	l, got, ok, err := Open(path).Credential(`clinic\ASA`)
	if err != nil || !ok || got != secret || l.AccountID != 7 || l.Username != "instructor" {
		t.Fatalf("Credential = %+v, %q, %v, %v; want the secret of account 7", l, got, ok, err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || (runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600) {
		t.Errorf("file mode = %v, %v; want 0600", fi.Mode().Perm(), err)
	}
	if runtime.GOOS == "windows" {
		if strings.Contains(string(data), secret) || !strings.Contains(string(data), `"dpapi:`) {
			t.Errorf("signon.json on Windows holds %s; want the secret sealed with DPAPI only", data)
		}
		// A blob changed by one byte does not open: DPAPI checks its integrity.
		var f file
		if err := json.Unmarshal(data, &f); err != nil {
			t.Fatal(err)
		}
		l := f.Links[key(`CLINIC\asa`)]
		raw, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(l.Sealed, "dpapi:"))
		raw[len(raw)/2] ^= 0x55
		l.Sealed = "dpapi:" + base64.StdEncoding.EncodeToString(raw)
		f.Links[key(`CLINIC\asa`)] = l
		changed, _ := json.Marshal(f)
		other := filepath.Join(filepath.Dir(path), "changed.json")
		if err := os.WriteFile(other, changed, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, got, ok, err := Open(other).Credential(`CLINIC\asa`); ok || err == nil || got != "" {
			t.Errorf("Credential of a changed blob = %q, %v, %v; want an error", got, ok, err)
		}
	} else if !strings.Contains(string(data), `"file:`+secret+`"`) {
		t.Errorf("signon.json holds %s; want the secret kept as file:…", data)
	}

	// Another system's secret does not open here.
	foreign := "dpapi:AQAAAA=="
	if runtime.GOOS == "windows" {
		foreign = "file:" + secret
	}
	if err := s.Remember("b", Link{AccountID: 8, Sealed: foreign}); err != nil {
		t.Fatal(err)
	}
	if _, got, ok, err := s.Credential("b"); ok || err == nil || got != "" {
		t.Errorf("Credential of another system's secret = %q, %v, %v; want an error", got, ok, err)
	}

	// Removing the secret keeps the link; another account's secret replaces the link.
	if err := s.SetCredential(`CLINIC\asa`, asa, ""); err != nil {
		t.Fatal(err)
	}
	if l, _, ok, err := s.Credential(`CLINIC\asa`); ok || err != nil || l.AccountID != 7 {
		t.Errorf("after removing the secret: %+v, %v, %v; want the link without a secret", l, ok, err)
	}
	if err := s.SetCredential(`CLINIC\asa`, Link{AccountID: 9, Username: "other"}, secret+"2"); err != nil {
		t.Fatal(err)
	}
	if l, got, ok, _ := s.Credential(`CLINIC\asa`); !ok || got != secret+"2" || l.AccountID != 9 {
		t.Errorf("after another account's secret: %+v, %q, %v; want account 9's", l, got, ok)
	}
	// Remembering the link anew ends its secret; forgetting it ends both.
	if err := s.Remember(`CLINIC\asa`, asa); err != nil {
		t.Fatal(err)
	}
	if _, _, ok, _ := s.Credential(`CLINIC\asa`); ok {
		t.Error("Remember kept the earlier link's secret")
	}
	_ = s.SetCredential(`CLINIC\asa`, asa, secret)
	if err := s.Forget(`CLINIC\asa`); err != nil {
		t.Fatal(err)
	}
	if _, _, ok, _ := s.Credential(`CLINIC\asa`); ok {
		t.Error("Forget kept the secret")
	}
}

// TestInstallation: the installation's id is made once, 128 random bits, and kept.
func TestInstallation(t *testing.T) {
	path := filepath.Join(wintest.TempDir(t), FileName)
	id, err := Open(path).Installation()
	if err != nil || !regexp.MustCompile(`^[A-Za-z0-9_-]{22}$`).MatchString(id) {
		t.Fatalf("Installation = %q, %v; want 22 base64url characters", id, err)
	}
	if again, err := Open(path).Installation(); again != id || err != nil {
		t.Errorf("Installation again = %q, %v; want %q", again, err, id)
	}
	if other, _ := Open(filepath.Join(filepath.Dir(path), "other.json")).Installation(); other == id {
		t.Errorf("two installations have the id %q", id)
	}
}

// TestFirstFormat: a links file of the first format (the links alone) is read.
func TestFirstFormat(t *testing.T) {
	path := filepath.Join(wintest.TempDir(t), FileName)
	if err := os.WriteFile(path, []byte(`{"clinic\\asa": {"accountId": 7, "username": "asa", "linkedAt": "2026-01-02T03:04:05Z"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	s := Open(path)
	if l, ok, err := s.Get(`CLINIC\asa`); !ok || err != nil || l.AccountID != 7 {
		t.Fatalf("Get of the first format = %+v, %v, %v", l, ok, err)
	}
	if _, err := s.Installation(); err != nil {
		t.Fatal(err)
	}
	if l, ok, err := s.Get(`CLINIC\asa`); !ok || err != nil || l.AccountID != 7 {
		t.Errorf("Get after rewriting in the new format = %+v, %v, %v", l, ok, err)
	}
}
