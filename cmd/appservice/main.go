// Command appservice runs partnergate's reference app service: the upstream the gateway
// forwards verified partner links to, with its small web application.
//
// Every flag has an environment variable; the flag wins. Secrets come only from the
// environment (or the secret file), never from flags, which other users can read in ps.
//
//	PARTNERGATE_UPSTREAM_SECRET   the gateway's upstream_secret (required, >= 32 bytes)
//	PARTNERGATE_APP_SECRET        keys ssn hashes and CSRF tokens (else -secret-file)
//	PARTNERGATE_APP_INSTRUCTOR_PASSWORD  the first instructor's password (else generated and printed once)
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/partnergate/partnergate/appservice"
)

func env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func main() {
	var cfg appservice.Config
	flag.StringVar(&cfg.Listen, "listen", env("PARTNERGATE_APP_LISTEN", "127.0.0.1:9080"), "listen `address` (env PARTNERGATE_APP_LISTEN); keep it on loopback behind the gateway")
	flag.StringVar(&cfg.Database, "db", env("PARTNERGATE_APP_DB", "./data/appservice.db"), "SQLite file `path` or postgres:// URL (env PARTNERGATE_APP_DB)")
	flag.StringVar(&cfg.PublicURL, "public-url", env("PARTNERGATE_APP_PUBLIC_URL", "http://localhost:8080"), "`URL` browsers reach the gateway at (env PARTNERGATE_APP_PUBLIC_URL)")
	flag.StringVar(&cfg.FrameAncestors, "frame-ancestors", env("PARTNERGATE_APP_FRAME_ANCESTORS", "'self'"), "CSP frame-ancestors `sources` allowed to embed the app (env PARTNERGATE_APP_FRAME_ANCESTORS)")
	flag.StringVar(&cfg.SecretFile, "secret-file", env("PARTNERGATE_APP_SECRET_FILE", "./data/app.secret"), "`file` holding the app secret when PARTNERGATE_APP_SECRET is unset; created when missing")
	flag.StringVar(&cfg.Instructor.Username, "instructor", env("PARTNERGATE_APP_INSTRUCTOR", "instructor"), "`username` of the first instructor account, created when missing (empty: none)")
	flag.StringVar(&cfg.Instructor.Email, "instructor-email", env("PARTNERGATE_APP_INSTRUCTOR_EMAIL", ""), "e-mail `address` of the first instructor account")
	flag.StringVar(&cfg.Instructor.DisplayName, "instructor-name", env("PARTNERGATE_APP_INSTRUCTOR_NAME", "Demo Instructor"), "display `name` of the first instructor account")
	flag.BoolVar(&cfg.DemoData, "demo-data", env("PARTNERGATE_APP_DEMO_DATA", "") == "1", "seed demo persons and workout plans into the first instructor's organization (env PARTNERGATE_APP_DEMO_DATA=1)")
	flag.StringVar(&cfg.DemoOrganization, "demo-org", env("PARTNERGATE_APP_DEMO_ORG", ""), "with -demo-data, also seed the partner's organization `partner:organizationId:name`, created when missing (env PARTNERGATE_APP_DEMO_ORG)")
	logLevel := flag.String("log-level", env("PARTNERGATE_APP_LOG_LEVEL", "info"), "`level`: debug, info, warn, error")
	signIns := flag.String("signin-concurrency", env("PARTNERGATE_APP_SIGNIN_CONCURRENCY", "2"), "password checks that run at once, each an argon2id hash of 19 MiB (env PARTNERGATE_APP_SIGNIN_CONCURRENCY)")
	flag.Parse()
	n, err := strconv.Atoi(*signIns)
	if err != nil || n < 1 || n > 64 {
		fmt.Fprintf(os.Stderr, "appservice: -signin-concurrency %q: want a number from 1 to 64\n", *signIns)
		os.Exit(2)
	}
	cfg.SignInConcurrency = n
	cfg.UpstreamSecret = os.Getenv("PARTNERGATE_UPSTREAM_SECRET")
	cfg.AppSecret = os.Getenv("PARTNERGATE_APP_SECRET")
	cfg.Instructor.Password = os.Getenv("PARTNERGATE_APP_INSTRUCTOR_PASSWORD")

	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintln(os.Stderr, "appservice: -log-level:", err)
		os.Exit(2)
	}
	cfg.Logger = slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv, err := appservice.Start(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "appservice:", err)
		os.Exit(1)
	}
	select {
	case <-ctx.Done():
	case err := <-srv.Done():
		fmt.Fprintln(os.Stderr, "appservice:", err)
		os.Exit(1)
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		fmt.Fprintln(os.Stderr, "appservice: shutting down:", err)
		os.Exit(1)
	}
}
