// Package appservice is the reference app service behind the partnergate gateway: it
// receives the links the gateway verified, resolves who they are for in its database and
// answers one-time login URLs into a small web application. Subpackages: store (the
// database) and web (the HTTP handlers and pages); this package assembles them.
package appservice

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/partnergate/partnergate/appservice/store"
	"github.com/partnergate/partnergate/appservice/web"
	"github.com/partnergate/partnergate/linkspec"
)

// The defaults of Config, which cmd/appservice's flags show.
const (
	// DefaultListen is loopback, so only the gateway on the same host reaches the service;
	// the assertion is the proof, loopback the second wall.
	DefaultListen = "127.0.0.1:9080"
	// DefaultDatabase is a SQLite file under the working folder's data folder.
	DefaultDatabase = "./data/appservice.db"
	// DefaultSecretFile is where the app secret is kept when none is given.
	DefaultSecretFile = "./data/app.secret"
)

// writeTimeout is the server's: a request must have answered by then.
const writeTimeout = 30 * time.Second

// The bounds of Config.DatabaseTimeout. The shortest still lets a healthy database answer;
// a request that waited the longest still has 5 s to answer 503 before writeTimeout cuts
// the connection.
const (
	MinDatabaseTimeout = 100 * time.Millisecond
	MaxDatabaseTimeout = writeTimeout - 5*time.Second
)

// Config is the app service's configuration; cmd/appservice fills it from flags and
// environment.
type Config struct {
	// Listen is the listen address. Default DefaultListen (127.0.0.1:9080).
	Listen string
	// Database is a SQLite file path or a postgres:// URL. Default DefaultDatabase
	// (./data/appservice.db).
	Database string
	// PublicURL is the address browsers reach the gateway at. Default web.DefaultPublicURL
	// (http://localhost:8080).
	PublicURL string
	// FrameAncestors is the CSP frame-ancestors source list. Default web.DefaultFrameAncestors
	// ('self').
	FrameAncestors string
	// HeaderPrefix is the gateway's header_prefix: the app service reads the forwarded
	// headers and the assertion under it, so both must be the same. Default X-Partner-
	// (linkspec.DefaultHeaderPrefix), the gateway's default.
	HeaderPrefix string
	// UpstreamSecret is the gateway's upstream_secret; required, at least 32 bytes.
	UpstreamSecret string
	// AppSecret keys the ssn hashes, the CSRF tokens and the device cookie. When empty it
	// is read from SecretFile, which is created with a random secret when missing.
	AppSecret string
	// SecretFile holds the app secret when AppSecret is empty. Default DefaultSecretFile
	// (./data/app.secret).
	SecretFile string
	// Instructor is the first service account, created at start when no account has its
	// username. When its password is empty and the account must be created, a random one is
	// made and written to Stdout once.
	Instructor Instructor
	// DemoData seeds demo persons and workout plans into the first instructor's organization
	// at start (store.SeedDemo, once per organization), so that ./run.sh shows a populated
	// application. Off by default.
	DemoData bool
	// DemoOrganization, with DemoData, is a partner's organization seeded too, as
	// "partner:organizationId:name" (./run.sh names its demo link's organization, so that
	// the first link lands on a populated application). Empty: none.
	DemoOrganization string
	// DemoMember, with DemoData and DemoOrganization, is the path of a Go link payload (JSON)
	// of that partner whose contact is seeded with a plan (store.SeedDemoMember), so that
	// the member ./run.sh's Go link signs in sees one. Empty: none.
	DemoMember string
	// DatabaseTimeout bounds how long a request waits on the database before it answers
	// 503 unavailable; web.DefaultDatabaseTimeout (10 s) when 0, else from MinDatabaseTimeout
	// to MaxDatabaseTimeout, so that the answer goes out before the server's write timeout
	// cuts the connection.
	DatabaseTimeout time.Duration
	// DeviceIdle ends a desktop wrapper's device sign-on that has not been used for this
	// long; store.DefaultDeviceIdle (30 days) when 0.
	DeviceIdle time.Duration
	// DeviceLifetime ends a device sign-on this long after it was issued, however often it
	// is used; store.DefaultDeviceLifetime (180 days) when 0. At least DeviceIdle.
	DeviceLifetime time.Duration
	// SignInConcurrency bounds the password checks that run at once, each an argon2id hash
	// of 19 MiB; web.DefaultSignInConcurrency (2) when 0. Raise it on a machine with more
	// cores and memory to spare for sign-in bursts.
	SignInConcurrency int
	// Directories are the OpenID Connect providers staff sign in with (web.Directory);
	// each one's ClientSecret is read from its ClientSecretEnv when empty. None by default.
	Directories []web.Directory
	// EIDProviders are the national electronic IDs members sign in to Go with
	// (web.EIDProvider); each one's ClientSecret is read from its ClientSecretEnv when
	// empty. None by default.
	EIDProviders []web.EIDProvider
	// DirectoryNow is the clock ID tokens are checked against; time.Now when nil. Only
	// tests set it (to see a real token expire); no flag does.
	DirectoryNow func() time.Time
	// Logger is the structured logger; discard when nil.
	Logger *slog.Logger
	// Stdout receives the generated first password; os.Stdout when nil.
	Stdout io.Writer
}

// Instructor describes the first service account.
type Instructor struct {
	Username    string
	Email       string
	DisplayName string
	Password    string
}

// Server is a running app service.
type Server struct {
	Addr    string // the address it listens on, with the port chosen when Listen ended in :0
	store   *store.Store
	handler *web.Handler
	srv     *http.Server
	done    chan error
	stop    chan struct{}
}

// Start opens the database (running migrations), ensures the first instructor and starts
// serving. Stop with Shutdown. A database whose schema a newer release migrated is refused
// (*store.SchemaNewerError): this binary does not know its tables.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.Listen == "" {
		cfg.Listen = DefaultListen
	}
	if cfg.Database == "" {
		cfg.Database = DefaultDatabase
	}
	if cfg.SecretFile == "" {
		cfg.SecretFile = DefaultSecretFile
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Stdout == nil {
		cfg.Stdout = os.Stdout
	}
	if len(cfg.UpstreamSecret) < 32 {
		return nil, errors.New("upstream secret (PARTNERGATE_UPSTREAM_SECRET) missing or shorter than 32 bytes: it must equal the gateway's upstream_secret")
	}
	secret := []byte(cfg.AppSecret)
	if len(secret) == 0 {
		var err error
		if secret, err = loadOrCreateSecret(cfg.SecretFile, cfg.Logger); err != nil {
			return nil, err
		}
	}
	if len(secret) < 32 {
		return nil, errors.New("app secret shorter than 32 bytes")
	}
	if d := cfg.DatabaseTimeout; d != 0 && (d < MinDatabaseTimeout || d > MaxDatabaseTimeout) {
		return nil, fmt.Errorf("database timeout %v: want %v to %v, below the %v write timeout", d, MinDatabaseTimeout, MaxDatabaseTimeout, writeTimeout)
	}
	if cfg.DeviceIdle < 0 || cfg.DeviceLifetime < 0 || (cfg.DeviceLifetime > 0 && cfg.DeviceIdle > cfg.DeviceLifetime) {
		return nil, fmt.Errorf("device sign-on idle period %v and lifetime %v: want positive durations, the idle period at most the lifetime", cfg.DeviceIdle, cfg.DeviceLifetime)
	}
	st, err := store.Open(ctx, cfg.Database, store.Options{SSNKey: derive(secret, "ssn"), DeviceIdle: cfg.DeviceIdle, DeviceLifetime: cfg.DeviceLifetime})
	if err != nil {
		return nil, fmt.Errorf("opening database: %w", err)
	}
	if unicode, lcCtype, err := st.CaseMapping(ctx); err != nil {
		st.Close()
		return nil, fmt.Errorf("reading the database's case mapping: %w", err)
	} else if !unicode {
		cfg.Logger.Warn("the database maps case for ASCII letters only: searches and the e-mail comparisons at sign-in and sign-up miss Å/å and the like; create it with a UTF-8 LC_CTYPE (docs/operations.md)",
			"lc_ctype", lcCtype)
	}
	if err := ensureInstructor(ctx, st, cfg); err != nil {
		st.Close()
		return nil, err
	}
	if cfg.DemoData && cfg.Instructor.Username != "" {
		if err := seedDemo(ctx, st, cfg.Instructor.Username, cfg.DemoOrganization, cfg.DemoMember); err != nil {
			st.Close()
			return nil, fmt.Errorf("seeding demo data: %w", err)
		}
	}
	h, err := web.New(web.Config{
		Store: st, UpstreamSecret: []byte(cfg.UpstreamSecret), AppSecret: derive(secret, "web"),
		PublicURL: cfg.PublicURL, FrameAncestors: cfg.FrameAncestors, HeaderPrefix: cfg.HeaderPrefix, Logger: cfg.Logger,
		SignInConcurrency: cfg.SignInConcurrency, DatabaseTimeout: cfg.DatabaseTimeout, Directories: directorySecrets(cfg.Directories), DirectoryNow: cfg.DirectoryNow,
		EIDProviders: eidSecrets(cfg.EIDProviders),
	})
	if err != nil {
		st.Close()
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		st.Close()
		return nil, err
	}
	if host, _, _ := net.SplitHostPort(ln.Addr().String()); !net.ParseIP(host).IsLoopback() {
		cfg.Logger.Warn("listening beyond loopback: only the gateway assertion protects the link endpoints", "addr", ln.Addr().String())
	}
	s := &Server{
		Addr:    ln.Addr().String(),
		store:   st,
		handler: h,
		srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
			// WriteTimeout stays above MaxDatabaseTimeout: a request that waited on the
			// database answers 503 before the connection is cut.
			WriteTimeout: writeTimeout, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10},
		done: make(chan error, 1),
		stop: make(chan struct{}),
	}
	go func() { s.done <- s.srv.Serve(ln) }()
	go s.sweep(cfg.Logger)
	cfg.Logger.Info("app service started", "addr", s.Addr, "database", st.Dialect(), "database_timeout", h.DatabaseTimeout().String())
	return s, nil
}

// Migrate brings the schema of cfg.Database up to date without starting the service or
// reading its secrets, and returns the schema version before and after. A schema newer
// than this binary's migrations is a *store.SchemaNewerError, as it is for Start.
func Migrate(ctx context.Context, cfg Config) (before, after int64, err error) {
	if cfg.Database == "" {
		cfg.Database = DefaultDatabase
	}
	return store.Migrate(ctx, cfg.Database)
}

// sweep deletes expired sessions, codes and sign-in counts every few minutes until the
// server stops.
func (s *Server) sweep(log *slog.Logger) {
	t := time.NewTicker(5 * time.Minute)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			if err := s.store.DeleteExpired(context.Background()); err != nil {
				log.Error("deleting expired sessions failed", "error", err.Error())
			}
		}
	}
}

// Shutdown stops accepting requests, waits for those in flight, and for routes that
// outlived their database deadline, until ctx ends, and closes the database.
func (s *Server) Shutdown(ctx context.Context) error {
	close(s.stop)
	err := s.srv.Shutdown(ctx)
	if err == nil {
		// A route that outlived its database deadline still uses the store.
		err = s.handler.Drain(ctx)
	}
	if cerr := s.store.Close(); err == nil {
		err = cerr
	}
	return err
}

// Done reports the server's exit.
func (s *Server) Done() <-chan error { return s.done }

// derive makes independent keys for each use from one secret.
func derive(secret []byte, label string) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("partnergate-appservice-" + label))
	return m.Sum(nil)
}

func loadOrCreateSecret(path string, log *slog.Logger) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		return []byte(strings.TrimSpace(string(b))), nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("reading app secret: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("creating data folder: %w", err)
	}
	raw := make([]byte, 32)
	rand.Read(raw)
	secret := hex.EncodeToString(raw)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("creating app secret: %w", err)
	}
	if _, err := f.WriteString(secret + "\n"); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	log.Info("generated the app secret; keep it: the ssn hashes depend on it", "path", path)
	return []byte(secret), nil
}

// seedDemo seeds the demo data into the organization where the instructor's password
// sign-in lands and into demoOrg when given, and demoMember's contact with a plan, owned by
// the instructor.
func seedDemo(ctx context.Context, st *store.Store, username, demoOrg, demoMember string) error {
	account, org, err := st.InstructorHome(ctx, username)
	if err != nil {
		return err
	}
	if err := st.SeedDemo(ctx, org, account); err != nil {
		return err
	}
	if demoOrg == "" {
		if demoMember != "" {
			return errors.New("a demo member needs a demo organization, whose partner it belongs to")
		}
		return nil
	}
	partner, rest, ok1 := strings.Cut(demoOrg, ":")
	id, name, ok2 := strings.Cut(rest, ":")
	if !ok1 || !ok2 || partner == "" || id == "" || name == "" {
		return fmt.Errorf("demo organization %q: want partner:organizationId:name", demoOrg)
	}
	if err := st.SeedDemoOrganization(ctx, partner, id, name, account); err != nil || demoMember == "" {
		return err
	}
	data, err := os.ReadFile(demoMember)
	if err != nil {
		return fmt.Errorf("reading the demo member: %w", err)
	}
	p, err := linkspec.DecodePayload(data)
	if err != nil {
		return fmt.Errorf("demo member %s: %w", demoMember, err)
	}
	if err := st.SeedDemoMember(ctx, partner, p, account); err != nil {
		return fmt.Errorf("demo member %s: %w", demoMember, err)
	}
	return nil
}

func ensureInstructor(ctx context.Context, st *store.Store, cfg Config) error {
	in := cfg.Instructor
	if in.Username == "" {
		return nil
	}
	generated := false
	if in.Password == "" {
		raw := make([]byte, 12)
		rand.Read(raw)
		in.Password = hex.EncodeToString(raw)
		generated = true
	}
	if in.DisplayName == "" {
		in.DisplayName = in.Username
	}
	// A configured password makes the account by the sign-up form's rules; an existing
	// account keeps its password, which this setting does not change.
	if msg := web.PasswordProblem(in.Password, in.Username); !generated && msg != "" {
		switch _, _, err := st.InstructorHome(ctx, in.Username); {
		case errors.Is(err, store.ErrNotFound):
			return fmt.Errorf("the first instructor's password (PARTNERGATE_APP_INSTRUCTOR_PASSWORD) breaks the password rules: %s", msg)
		case err != nil:
			return fmt.Errorf("reading the first instructor: %w", err)
		}
	}
	created, err := st.EnsureInstructor(ctx, in.Username, in.Email, in.DisplayName, in.Password)
	if err != nil {
		return fmt.Errorf("creating the first instructor: %w", err)
	}
	if created {
		cfg.Logger.Info("created the first instructor account", "username", strings.ToLower(in.Username))
		if generated {
			fmt.Fprintf(cfg.Stdout, "First instructor account: username %s, password %s (shown once)\n", strings.ToLower(in.Username), in.Password)
		}
	}
	return nil
}

// directorySecrets returns ds with each empty client secret read from its environment
// variable.
func directorySecrets(ds []web.Directory) []web.Directory {
	return withSecrets(ds, func(d *web.Directory) (*string, string) { return &d.ClientSecret, d.ClientSecretEnv })
}

// eidSecrets is directorySecrets for eID providers.
func eidSecrets(ps []web.EIDProvider) []web.EIDProvider {
	return withSecrets(ps, func(p *web.EIDProvider) (*string, string) { return &p.ClientSecret, p.ClientSecretEnv })
}

// withSecrets returns a copy of list with each empty secret (secret names it and its
// environment variable) read from its environment variable.
func withSecrets[T any](list []T, secret func(*T) (*string, string)) []T {
	out := slices.Clone(list)
	for i := range out {
		if s, env := secret(&out[i]); *s == "" && env != "" {
			*s = os.Getenv(env)
		}
	}
	return out
}

// ReadDirectories reads a directories file: a JSON array of web.Directory, secrets named
// by client_secret_env and never in the file.
func ReadDirectories(path string) ([]web.Directory, error) {
	return readProviders[web.Directory](path, "directories")
}

// ReadEIDProviders reads an eID providers file: a JSON array of web.EIDProvider, secrets
// named by client_secret_env and never in the file.
func ReadEIDProviders(path string) ([]web.EIDProvider, error) {
	return readProviders[web.EIDProvider](path, "eid providers")
}

// readProviders reads a JSON array of T from path, refusing fields T does not know.
func readProviders[T any](path, what string) ([]T, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var list []T
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&list); err != nil {
		return nil, fmt.Errorf("reading %s %s: %v", what, path, err)
	}
	return list, nil
}
