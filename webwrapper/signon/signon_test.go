package signon

import (
	"os"
	"path/filepath"
	"runtime"
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
