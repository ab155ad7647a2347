// Package signon keeps the wrapper's single sign-on (B-SSO): which service account an
// external user (the signon argument, or the operating-system user) signed in as on this
// computer (a link), and the device sign-on the service issued for the link, with which
// the next start signs in without the password (device.go). The file is per
// operating-system user, in the user's config folder, so another user of the computer
// never sees it; a device sign-on's secret in it is sealed: on Windows with DPAPI in the
// user's scope, elsewhere by the file's mode 0600 alone (protect_*.go).
package signon

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// FileName is the links file's name, next to user.config.
const FileName = "signon.json"

// Link is one external user's service account, and the device sign-on issued for it.
type Link struct {
	AccountID int64     `json:"accountId"`
	Username  string    `json:"username"`
	LinkedAt  time.Time `json:"linkedAt"`
	// Sealed is the device sign-on's secret as seal keeps it ("dpapi:…" on Windows,
	// "file:…" elsewhere); empty without one. Read it with Store.Credential.
	Sealed string `json:"credential,omitempty"`
}

// file is signon.json: the installation's id and the links by external user.
type file struct {
	// Installation names this wrapper installation of this operating-system user to the
	// service, which binds a device sign-on to it: 128 random bits, made at first need.
	Installation string          `json:"installation,omitempty"`
	Links        map[string]Link `json:"links"`
}

// Store is the links file of one operating-system user.
type Store struct {
	path string
	mu   sync.Mutex
}

// Open returns the store at path; the file is made when the first link is remembered.
func Open(path string) *Store { return &Store{path: path} }

// Path is where the links live.
func (s *Store) Path() string { return s.path }

// key matches external users case-insensitively, as Windows matches DOMAIN\user.
func key(external string) string { return strings.ToLower(strings.TrimSpace(external)) }

// Get returns the link of external, if any.
func (s *Store) Get(external string) (Link, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := s.read()
	if err != nil {
		return Link{}, false, err
	}
	l, ok := f.Links[key(external)]
	return l, ok, nil
}

// Remember links external to the account, replacing an earlier link and its device
// sign-on.
func (s *Store) Remember(external string, l Link) error {
	return s.update(func(f *file) bool {
		f.Links[key(external)] = l
		return true
	})
}

// Forget removes the link of external and its device sign-on.
func (s *Store) Forget(external string) error {
	return s.update(func(f *file) bool {
		if _, ok := f.Links[key(external)]; !ok {
			return false
		}
		delete(f.Links, key(external))
		return true
	})
}

// Credential returns the device sign-on's secret of external's link, if it has one. A
// secret this system cannot open (sealed by another Windows user or computer, or the
// file copied from another system) is an error.
func (s *Store) Credential(external string) (Link, string, bool, error) {
	l, ok, err := s.Get(external)
	if err != nil || !ok || l.Sealed == "" {
		return l, "", false, err
	}
	secret, err := unseal(l.Sealed)
	if err != nil {
		return l, "", false, err
	}
	return l, secret, true, nil
}

// SetCredential keeps secret as the device sign-on of external's link to account,
// linking them when they are not; "" removes the device sign-on and keeps the link.
func (s *Store) SetCredential(external string, account Link, secret string) error {
	sealed := ""
	if secret != "" {
		var err error
		if sealed, err = seal(secret); err != nil {
			return err
		}
	}
	return s.update(func(f *file) bool {
		l, ok := f.Links[key(external)]
		if !ok || l.AccountID != account.AccountID {
			if secret == "" {
				return false
			}
			l = account
		}
		l.Sealed = sealed
		f.Links[key(external)] = l
		return true
	})
}

// Installation returns the installation's id, making it at its first need.
func (s *Store) Installation() (string, error) {
	var id string
	err := s.update(func(f *file) bool {
		if f.Installation != "" {
			id = f.Installation
			return false
		}
		f.Installation = base64.RawURLEncoding.EncodeToString(randomBytes(16))
		id = f.Installation
		return true
	})
	return id, err
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return b
}

// credentials returns the secret of every device sign-on kept; one this system cannot
// open is left out, with the error.
func (s *Store) credentials() ([]string, error) {
	s.mu.Lock()
	f, err := s.read()
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	var secrets []string
	var errs []error
	for _, l := range f.Links {
		if l.Sealed == "" {
			continue
		}
		secret, err := unseal(l.Sealed)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		secrets = append(secrets, secret)
	}
	return secrets, errors.Join(errs...)
}

// Clear removes every link (RememberLoggedInUser turned off; Device.ForgetAll ends their
// device sign-ons at the service first).
func (s *Store) Clear() error {
	if err := os.Remove(s.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing sign-on links: %w", err)
	}
	return nil
}

// update reads the file, lets change it, and writes it when change says it changed.
func (s *Store) update(change func(*file) bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := s.read()
	if err != nil {
		return err
	}
	if !change(&f) {
		return nil
	}
	return s.write(f)
}

func (s *Store) read() (file, error) {
	f := file{Links: map[string]Link{}}
	data, err := os.ReadFile(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return f, fmt.Errorf("reading sign-on links: %w", err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return f, fmt.Errorf("reading sign-on links %s: %w", s.path, err)
	}
	_, hasLinks := raw["links"]
	_, hasInstallation := raw["installation"]
	if !hasLinks && !hasInstallation {
		// The first format: the links alone, by external user.
		if err := json.Unmarshal(data, &f.Links); err != nil {
			return f, fmt.Errorf("reading sign-on links %s: %w", s.path, err)
		}
		return f, nil
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return f, fmt.Errorf("reading sign-on links %s: %w", s.path, err)
	}
	if f.Links == nil {
		f.Links = map[string]Link{}
	}
	return f, nil
}

// write replaces the file through a temporary one of mode 0600 (os.CreateTemp's), so that
// a crash never leaves half.
func (s *Store) write(f file) error {
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	dir := filepath.Dir(s.path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("saving sign-on links: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".signon-*")
	if err != nil {
		return fmt.Errorf("saving sign-on links: %w", err)
	}
	_, err = tmp.Write(append(data, '\n'))
	if serr := tmp.Sync(); err == nil {
		err = serr
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), s.path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("saving sign-on links: %w", err)
	}
	return nil
}
