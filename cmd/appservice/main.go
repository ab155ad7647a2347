// Command appservice runs partnergate's reference app service: the upstream the gateway
// forwards verified partner links to, with its small web application.
//
// Every flag has an environment variable; the flag wins. Secrets come only from the
// environment (or the secret file), never from flags, which other users can read in ps.
//
//	PARTNERGATE_UPSTREAM_SECRET   the gateway's upstream_secret (required, >= 32 bytes)
//	PARTNERGATE_APP_SECRET        keys ssn hashes, CSRF tokens and the device cookie (else -secret-file)
//	PARTNERGATE_APP_INSTRUCTOR_PASSWORD  the first instructor's password, by the sign-up rules (else generated and printed once)
//
// With -migrate-only it brings the database's schema up to date, prints its version and
// exits, without the secrets: a release's migrations can run once, before the instances
// are replaced, with a database user that may change the schema.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/partnergate/partnergate/appservice"
	"github.com/partnergate/partnergate/appservice/web"
	"github.com/partnergate/partnergate/linkspec"
)

func env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the command with its arguments and output, returning the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("appservice", flag.ContinueOnError)
	fl.SetOutput(stderr)
	var cfg appservice.Config
	fl.StringVar(&cfg.Listen, "listen", env("PARTNERGATE_APP_LISTEN", appservice.DefaultListen), "listen `address` (env PARTNERGATE_APP_LISTEN); keep it on loopback behind the gateway")
	fl.StringVar(&cfg.Database, "db", env("PARTNERGATE_APP_DB", appservice.DefaultDatabase), "SQLite file `path` or postgres:// URL (env PARTNERGATE_APP_DB)")
	fl.StringVar(&cfg.PublicURL, "public-url", env("PARTNERGATE_APP_PUBLIC_URL", web.DefaultPublicURL), "`URL` browsers reach the gateway at (env PARTNERGATE_APP_PUBLIC_URL)")
	fl.StringVar(&cfg.FrameAncestors, "frame-ancestors", env("PARTNERGATE_APP_FRAME_ANCESTORS", web.DefaultFrameAncestors), "CSP frame-ancestors `sources` allowed to embed the app (env PARTNERGATE_APP_FRAME_ANCESTORS)")
	fl.StringVar(&cfg.HeaderPrefix, "header-prefix", env("PARTNERGATE_APP_HEADER_PREFIX", linkspec.DefaultHeaderPrefix), "`prefix` of the headers the gateway forwards: its header_prefix, which must be the same (env PARTNERGATE_APP_HEADER_PREFIX)")
	fl.StringVar(&cfg.SecretFile, "secret-file", env("PARTNERGATE_APP_SECRET_FILE", appservice.DefaultSecretFile), "`file` holding the app secret when PARTNERGATE_APP_SECRET is unset; created when missing")
	fl.StringVar(&cfg.Instructor.Username, "instructor", env("PARTNERGATE_APP_INSTRUCTOR", "instructor"), "`username` of the first instructor account, created when missing (empty: none)")
	fl.StringVar(&cfg.Instructor.Email, "instructor-email", env("PARTNERGATE_APP_INSTRUCTOR_EMAIL", ""), "e-mail `address` of the first instructor account")
	fl.StringVar(&cfg.Instructor.DisplayName, "instructor-name", env("PARTNERGATE_APP_INSTRUCTOR_NAME", "Demo Instructor"), "display `name` of the first instructor account")
	fl.BoolVar(&cfg.DemoData, "demo-data", env("PARTNERGATE_APP_DEMO_DATA", "") == "1", "seed demo persons and workout plans into the first instructor's organization (env PARTNERGATE_APP_DEMO_DATA=1)")
	fl.StringVar(&cfg.DemoOrganization, "demo-org", env("PARTNERGATE_APP_DEMO_ORG", ""), "with -demo-data, also seed the partner's organization `partner:organizationId:name`, created when missing (env PARTNERGATE_APP_DEMO_ORG)")
	fl.StringVar(&cfg.DemoMember, "demo-member", env("PARTNERGATE_APP_DEMO_MEMBER", ""), "with -demo-org, also seed the contact of the Go link payload in `file` (JSON) with a plan, as that link would resolve it (env PARTNERGATE_APP_DEMO_MEMBER)")
	logLevel := fl.String("log-level", env("PARTNERGATE_APP_LOG_LEVEL", "info"), "`level`: debug, info, warn, error")
	signIns := fl.String("signin-concurrency", env("PARTNERGATE_APP_SIGNIN_CONCURRENCY", strconv.Itoa(web.DefaultSignInConcurrency)), "password checks that run at once, each an argon2id hash of 19 MiB (env PARTNERGATE_APP_SIGNIN_CONCURRENCY)")
	dbTimeout := fl.String("database-timeout", env("PARTNERGATE_APP_DATABASE_TIMEOUT", web.DefaultDatabaseTimeout.String()), "`duration` a request waits on the database before it answers 503 unavailable with Retry-After, 100ms to 25s (env PARTNERGATE_APP_DATABASE_TIMEOUT)")
	deviceIdle := fl.String("device-idle", env("PARTNERGATE_APP_DEVICE_IDLE", "30d"), "`duration` after which a desktop wrapper's unused device sign-on ends, in days (30d) or as 720h, 1 hour to 365 days (env PARTNERGATE_APP_DEVICE_IDLE)")
	deviceLifetime := fl.String("device-lifetime", env("PARTNERGATE_APP_DEVICE_LIFETIME", "180d"), "`duration` after which a device sign-on ends however often it is used, 1 hour to 730 days and at least -device-idle (env PARTNERGATE_APP_DEVICE_LIFETIME)")
	directories := fl.String("directories", env("PARTNERGATE_APP_DIRECTORIES", ""), "JSON `file` of the OpenID Connect providers staff sign in with, each secret named by its client_secret_env (env PARTNERGATE_APP_DIRECTORIES; docs/operations.md)")
	eids := fl.String("eid", env("PARTNERGATE_APP_EID", ""), "JSON `file` of the national electronic IDs members sign in to Go with, each secret named by its client_secret_env (env PARTNERGATE_APP_EID; docs/operations.md)")
	migrateOnly := fl.Bool("migrate-only", false, "bring the database schema up to date, print its version and exit; needs only -db")
	if err := fl.Parse(args); errors.Is(err, flag.ErrHelp) {
		return 0
	} else if err != nil {
		return 2
	}
	if *directories != "" {
		ds, err := appservice.ReadDirectories(*directories)
		if err != nil {
			fmt.Fprintln(stderr, "appservice:", err)
			return 2
		}
		cfg.Directories = ds
	}
	if *eids != "" {
		ps, err := appservice.ReadEIDProviders(*eids)
		if err != nil {
			fmt.Fprintln(stderr, "appservice:", err)
			return 2
		}
		cfg.EIDProviders = ps
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *migrateOnly {
		before, after, err := appservice.Migrate(ctx, cfg)
		if err != nil {
			fmt.Fprintln(stderr, "appservice:", err)
			return 1
		}
		if before == after {
			fmt.Fprintf(stdout, "database schema at version %d, up to date\n", after)
		} else {
			fmt.Fprintf(stdout, "database schema at version %d, migrated from %d\n", after, before)
		}
		return 0
	}
	n, err := strconv.Atoi(*signIns)
	if err != nil || n < 1 || n > 64 {
		fmt.Fprintf(stderr, "appservice: -signin-concurrency %q: want a number from 1 to 64\n", *signIns)
		return 2
	}
	cfg.SignInConcurrency = n
	d, err := time.ParseDuration(*dbTimeout)
	if err != nil || d < appservice.MinDatabaseTimeout || d > appservice.MaxDatabaseTimeout {
		fmt.Fprintf(stderr, "appservice: -database-timeout %q: want a duration from %v to %v\n", *dbTimeout, appservice.MinDatabaseTimeout, appservice.MaxDatabaseTimeout)
		return 2
	}
	cfg.DatabaseTimeout = d
	if cfg.DeviceIdle, err = days(*deviceIdle, 365); err != nil {
		fmt.Fprintf(stderr, "appservice: -device-idle %q: %v\n", *deviceIdle, err)
		return 2
	}
	if cfg.DeviceLifetime, err = days(*deviceLifetime, 730); err != nil || cfg.DeviceLifetime < cfg.DeviceIdle {
		if err == nil {
			err = fmt.Errorf("want at least -device-idle (%s)", *deviceIdle)
		}
		fmt.Fprintf(stderr, "appservice: -device-lifetime %q: %v\n", *deviceLifetime, err)
		return 2
	}
	cfg.UpstreamSecret = os.Getenv("PARTNERGATE_UPSTREAM_SECRET")
	cfg.AppSecret = os.Getenv("PARTNERGATE_APP_SECRET")
	cfg.Instructor.Password = os.Getenv("PARTNERGATE_APP_INSTRUCTOR_PASSWORD")

	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintln(stderr, "appservice: -log-level:", err)
		return 2
	}
	cfg.Logger = slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level}))
	cfg.Stdout = stdout

	srv, err := appservice.Start(ctx, cfg)
	if err != nil {
		fmt.Fprintln(stderr, "appservice:", err)
		return 1
	}
	select {
	case <-ctx.Done():
	case err := <-srv.Done():
		fmt.Fprintln(stderr, "appservice:", err)
		return 1
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		fmt.Fprintln(stderr, "appservice: shutting down:", err)
		return 1
	}
	return 0
}

// days reads a duration of at least an hour and at most maxDays days, written as whole
// days ("30d", an operator's unit for these) or as Go writes durations ("720h").
func days(v string, maxDays int) (time.Duration, error) {
	var d time.Duration
	if n, ok := strings.CutSuffix(v, "d"); ok {
		i, err := strconv.Atoi(n)
		if err != nil {
			return 0, fmt.Errorf("want whole days such as 30d, or a duration such as 720h")
		}
		d = time.Duration(i) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(v); err != nil {
			return 0, fmt.Errorf("want whole days such as 30d, or a duration such as 720h")
		}
	}
	if d < time.Hour || d > time.Duration(maxDays)*24*time.Hour {
		return 0, fmt.Errorf("want 1 hour to %d days", maxDays)
	}
	return d, nil
}
