// Package signon keeps the wrapper's single sign-on links (B-SSO): which service account
// an external user (the signon argument, or the operating-system user) signed in as on
// this computer. The file is per operating-system user, in the user's config folder, so
// another user of the computer never sees it.
//
// The web application offers no way for a host to sign an account in without the user (a
// password or a partner link is needed), so the link cannot sign in by itself: the
// session the engine keeps for the window's profile (engine.Options.KeepSession) does
// that, and the link makes sure the session is the one the external user signed in with
// before a command runs on it.
package signon

import (
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

// Link is one external user's service account.
type Link struct {
	AccountID int64     `json:"accountId"`
	Username  string    `json:"username"`
	LinkedAt  time.Time `json:"linkedAt"`
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
	links, err := s.read()
	if err != nil {
		return Link{}, false, err
	}
	l, ok := links[key(external)]
	return l, ok, nil
}

// Remember links external to the account, replacing an earlier link.
func (s *Store) Remember(external string, l Link) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	links, err := s.read()
	if err != nil {
		return err
	}
	links[key(external)] = l
	return s.write(links)
}

// Forget removes the link of external.
func (s *Store) Forget(external string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	links, err := s.read()
	if err != nil {
		return err
	}
	if _, ok := links[key(external)]; !ok {
		return nil
	}
	delete(links, key(external))
	return s.write(links)
}

// Clear removes every link (RememberLoggedInUser turned off).
func (s *Store) Clear() error {
	if err := os.Remove(s.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing sign-on links: %w", err)
	}
	return nil
}

func (s *Store) read() (map[string]Link, error) {
	links := map[string]Link{}
	data, err := os.ReadFile(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return links, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading sign-on links: %w", err)
	}
	if err := json.Unmarshal(data, &links); err != nil {
		return nil, fmt.Errorf("reading sign-on links %s: %w", s.path, err)
	}
	return links, nil
}

// write replaces the file through a temporary one, so that a crash never leaves half.
func (s *Store) write(links map[string]Link) error {
	data, err := json.MarshalIndent(links, "", "  ")
	if err != nil {
		return err
	}
	dir := filepath.Dir(s.path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("saving sign-on links: %w", err)
	}
	f, err := os.CreateTemp(dir, ".signon-*")
	if err != nil {
		return fmt.Errorf("saving sign-on links: %w", err)
	}
	_, err = f.Write(append(data, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), s.path)
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return fmt.Errorf("saving sign-on links: %w", err)
	}
	return nil
}
