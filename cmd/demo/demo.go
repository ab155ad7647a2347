package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gofrs/flock"

	"github.com/partnergate/partnergate/internal/linkflow"
	"github.com/partnergate/partnergate/partnerkit"
)

// The demo partner, as Caddyfile.example's jwt_partner route names it.
const (
	partnerName = "demo"
	issuer      = "https://partner.example"
	audience    = "partnergate-demo"
	keyID       = "demo-1"
)

// demo is one run: its settings from the environment and what it started.
type demo struct {
	check          bool
	stdout, stderr io.Writer

	data, dir, logs            string // the data folder, its demo/ and demo/logs/
	gwPort, appPort, adminPort int
	gateway                    string // http://localhost:<gateway port>
	caddyfile                  string // an operator's Caddyfile; "" runs Caddyfile.example
	runID                      string // the mark of this run's gateway (X-Partnergate-Run)
	lock                       *flock.Flock
	env                        []string // the environment of both processes
	procs                      []*proc
}

// proc is a process the run started.
type proc struct {
	what string
	cmd  *exec.Cmd
	done chan struct{}
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// configure reads the environment and checks it, the data folder's lock and the ports,
// before anything is built or started.
func configure(check bool, stdout, stderr io.Writer) (*demo, error) {
	if _, err := exec.LookPath("go"); err != nil {
		return nil, errors.New("no go command: install Go, see https://go.dev/doc/install")
	}
	for _, f := range []string{"xcaddy.sh", "Caddyfile.example", "cmd/demo"} {
		if _, err := os.Stat(f); err != nil {
			return nil, errors.New("run it from the repository's root (./run.sh, or go run ./cmd/demo there)")
		}
	}
	d := &demo{check: check, stdout: stdout, stderr: stderr, data: env("PARTNERGATE_DEMO_DATA", "./data")}
	for _, p := range []struct {
		name string
		def  string
		to   *int
	}{{"PARTNERGATE_DEMO_PORT", "8080", &d.gwPort}, {"PARTNERGATE_DEMO_APP_PORT", "9080", &d.appPort}, {"PARTNERGATE_DEMO_ADMIN_PORT", "2019", &d.adminPort}} {
		v := env(p.name, p.def)
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 65535 || strings.TrimLeft(v, "0123456789") != "" {
			fmt.Fprintf(stderr, "run.sh: port '%s' is not a number (PARTNERGATE_DEMO_PORT, PARTNERGATE_DEMO_APP_PORT, PARTNERGATE_DEMO_ADMIN_PORT)\n", v)
			return nil, exit(2)
		}
		*p.to = n
	}
	// Caddyfile.example takes the data folder inside quotes.
	if strings.ContainsAny(d.data, "\"\n{}") {
		fmt.Fprintf(stderr, "run.sh: the data folder %q has a quote, a brace or a line break, which a Caddyfile cannot carry: choose another with PARTNERGATE_DEMO_DATA=<folder>\n", d.data)
		return nil, exit(2)
	}
	d.gateway = "http://localhost:" + strconv.Itoa(d.gwPort)
	d.dir = filepath.Join(d.data, "demo")
	d.logs = filepath.Join(d.dir, "logs")

	if f := os.Getenv("PARTNERGATE_CADDYFILE"); f != "" {
		// run.sh made a relative path absolute from the folder it was started in.
		fh, err := os.Open(f)
		if err == nil {
			var st os.FileInfo
			if st, err = fh.Stat(); err == nil && !st.Mode().IsRegular() {
				err = errors.New("not a file")
			}
			fh.Close()
		}
		if err != nil {
			fmt.Fprintf(stderr, "run.sh: PARTNERGATE_CADDYFILE=%s: no readable file there (%v)\n", f, err)
			return nil, exit(1)
		}
		d.caddyfile = f
	}

	if pid, held := d.lockHolder(); held {
		return nil, d.refuseSharedData(pid)
	}
	uses := []portUse{
		{d.gwPort, "the gateway", "PARTNERGATE_DEMO_PORT=<port>"},
		{d.appPort, "the app service", "PARTNERGATE_DEMO_APP_PORT=<port>"},
	}
	// An operator's file's admin address is known once caddy can read the file (after
	// the build).
	if d.caddyfile == "" {
		uses = append(uses, portUse{d.adminPort, "Caddy's admin API", "PARTNERGATE_DEMO_ADMIN_PORT=<port>"})
	}
	if err := d.checkPorts(uses...); err != nil {
		return nil, err
	}
	return d, nil
}

func env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// The data folder holds the SQLite database, the keys and the logs: two runs on one folder
// would answer for each other. run.pid is locked by the run that uses it (a lock the
// system drops when that process ends, however it ends) and names its pid.

func (d *demo) pidFile() string { return filepath.Join(d.data, "run.pid") }

// lockHolder returns the pid of the run that holds the data folder, if one does.
func (d *demo) lockHolder() (string, bool) {
	if _, err := os.Stat(d.pidFile()); err != nil {
		return "", false
	}
	l := flock.New(d.pidFile(), flock.SetFlag(os.O_RDONLY))
	if ok, err := l.TryLock(); err != nil || ok {
		if ok {
			l.Unlock()
		}
		return "", false
	}
	pid, _ := os.ReadFile(d.pidFile())
	return strings.TrimSpace(string(pid)), true
}

func (d *demo) refuseSharedData(pid string) error {
	fmt.Fprintf(d.stderr, "run.sh: the data folder %s is in use by another run.sh (pid %s): stop it, or give this run its own folder with PARTNERGATE_DEMO_DATA=<folder>\n", d.data, pid)
	fmt.Fprintln(d.stderr, "run.sh: nothing was started")
	return exit(1)
}

// takeData creates the data folder and takes its lock.
func (d *demo) takeData() error {
	if err := os.MkdirAll(d.logs, 0o700); err != nil {
		return err
	}
	for _, dir := range []string{d.data, d.dir} {
		if err := os.Chmod(dir, 0o700); err != nil {
			return err
		}
	}
	l := flock.New(d.pidFile(), flock.SetFlag(os.O_CREATE|os.O_RDWR), flock.SetPermissions(0o600))
	ok, err := l.TryLock()
	if err != nil {
		return fmt.Errorf("locking %s: %v", d.pidFile(), err)
	}
	if !ok {
		pid, _ := os.ReadFile(d.pidFile())
		return d.refuseSharedData(strings.TrimSpace(string(pid)))
	}
	d.lock = l
	return os.WriteFile(d.pidFile(), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600)
}

// stop stops what the run started and gives the data folder back.
func (d *demo) stop() {
	for _, p := range d.procs {
		if !p.exited() {
			p.cmd.Process.Signal(syscall.SIGTERM)
		}
	}
	for _, p := range d.procs {
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			p.cmd.Process.Kill()
			<-p.done
		}
	}
	if d.lock != nil {
		os.Remove(d.pidFile())
		d.lock.Unlock()
	}
}

// run builds, starts, and then checks the flow or waits for Ctrl-C.
func (d *demo) run(ctx context.Context) error {
	if err := d.takeData(); err != nil {
		return err
	}
	fmt.Fprintln(d.stderr, "== building ./caddy, bin/appservice, bin/partnerlink")
	for _, build := range [][]string{
		{"./xcaddy.sh", "./caddy"},
		{"go", "build", "-o", "bin/appservice", "./cmd/appservice"},
		{"go", "build", "-o", "bin/partnerlink", "./cmd/partnerlink"},
	} {
		cmd := exec.CommandContext(ctx, build[0], build[1:]...)
		cmd.Stderr = d.stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("%s: %v", strings.Join(build, " "), err)
		}
	}
	if err := d.prepare(); err != nil {
		return err
	}
	config, err := d.gatewayConfig(ctx)
	if err != nil {
		return err
	}
	if err := d.start(config); err != nil {
		return err
	}
	if err := d.waitReady(ctx); err != nil {
		return err
	}
	if d.check {
		return d.runCheck(ctx)
	}
	d.printNext(config)
	select {
	case <-ctx.Done():
	case <-d.anyExited():
		fmt.Fprintf(d.stderr, "run.sh: stopped; logs in %s\n", d.logs)
	}
	return nil
}

// prepare makes what the run needs once: the demo partner's keys, the first instructor's
// password, the demo payloads; and this run's upstream secret.
func (d *demo) prepare() error {
	if _, err := os.Stat(filepath.Join(d.dir, "private.pem")); os.IsNotExist(err) {
		fmt.Fprintf(d.stderr, "== creating the demo partner's ES256 key in %s\n", d.dir)
		cmd := exec.Command("bin/partnerlink", "keygen", "--alg", "ES256", "--kid", keyID, "--out", d.dir)
		cmd.Stdout, cmd.Stderr = d.stderr, d.stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("making the demo partner's key: %v", err)
		}
	}
	// Made once, kept beside the keys, so that every start can print it; the app service
	// creates the account only when it does not exist.
	if err := writeOnce(filepath.Join(d.dir, "instructor.password"), []byte(randomHex(12)), 0o600); err != nil {
		return err
	}
	if err := writeOnce(filepath.Join(d.dir, "main-link.json"), []byte(mainLink), 0o644); err != nil {
		return err
	}
	if err := writeOnce(filepath.Join(d.dir, "go-link.json"), []byte(goLink), 0o644); err != nil {
		return err
	}
	password, err := os.ReadFile(filepath.Join(d.dir, "instructor.password"))
	if err != nil {
		return err
	}
	secret := os.Getenv("PARTNERGATE_UPSTREAM_SECRET")
	if secret == "" {
		secret = randomHex(32)
	}
	d.env = append(os.Environ(),
		"PARTNERGATE_APP_INSTRUCTOR_PASSWORD="+strings.TrimSpace(string(password)),
		"PARTNERGATE_UPSTREAM_SECRET="+secret,
		// Caddyfile.example's placeholders.
		"PARTNERGATE_DEMO_PORT="+strconv.Itoa(d.gwPort),
		"PARTNERGATE_DEMO_APP_PORT="+strconv.Itoa(d.appPort),
		"PARTNERGATE_DEMO_ADMIN_PORT="+strconv.Itoa(d.adminPort),
		"PARTNERGATE_DEMO_DATA="+d.data,
	)
	return nil
}

func (d *demo) password() string {
	b, _ := os.ReadFile(filepath.Join(d.dir, "instructor.password"))
	return strings.TrimSpace(string(b))
}

// writeOnce writes a file that does not exist yet.
func writeOnce(path string, data []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if errors.Is(err, os.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// The demo payloads: a main-client link (instructor Ida Berg, contact Ola Nordmann) and a
// Go link for the same contact.
const mainLink = `{
  "employeeId": "emp-1001",
  "employeeUsername": "ida.berg",
  "employeeFirstname": "Ida",
  "employeeLastname": "Berg",
  "employeeEmail": "ida@partner.example",
  "organizationName": "North Clinic",
  "organizationId": "org-1",
  "contact": {
    "id": "contact-1",
    "firstname": "Ola",
    "lastname": "Nordmann",
    "birthdate": "1985-04-17",
    "ssn": "17043550098",
    "email": "ola@example.org"
  },
  "caseId": "case-1"
}
`

const goLink = `{
  "organizationName": "North Clinic",
  "organizationId": "org-1",
  "contact": {
    "id": "contact-1",
    "firstname": "Ola",
    "lastname": "Nordmann",
    "birthdate": "1985-04-17",
    "email": "ola@example.org"
  }
}
`

// start starts the app service and the gateway, their output appended to their logs.
func (d *demo) start(config string) error {
	appArgs := []string{"-listen", "127.0.0.1:" + strconv.Itoa(d.appPort), "-db", filepath.Join(d.data, "appservice.db"),
		"-secret-file", filepath.Join(d.data, "app.secret"), "-public-url", d.gateway,
		"-frame-ancestors", "'self' http://localhost:* http://127.0.0.1:*",
		"-instructor", "instructor", "-instructor-email", "ida@partner.example", "-instructor-name", "Ida Berg",
		"-demo-data", "-demo-org", "demo:org-1:North Clinic"}
	// Ola, the demo links' contact, has a plan when a newcomer opens the Go link; --check
	// leaves him without one, since it makes his plan through the JSON API.
	if !d.check {
		appArgs = append(appArgs, "-demo-member", filepath.Join(d.dir, "go-link.json"))
	}
	caddyEnv := d.env
	if d.runID != "" {
		caddyEnv = append(append([]string(nil), d.env...), "PARTNERGATE_DEMO_RUN="+d.runID)
	}
	for _, s := range []struct {
		what, log string
		env       []string
		argv      []string
	}{
		{"app service", "appservice.log", d.env, append([]string{"bin/appservice"}, appArgs...)},
		{"gateway", "caddy.log", caddyEnv, []string{"./caddy", "run", "--config", config, "--adapter", "caddyfile"}},
	} {
		log, err := os.OpenFile(filepath.Join(d.logs, s.log), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return err
		}
		cmd := exec.Command(s.argv[0], s.argv[1:]...)
		cmd.Env, cmd.Stderr = s.env, log
		if err := cmd.Start(); err != nil {
			log.Close()
			return fmt.Errorf("starting the %s: %v", s.what, err)
		}
		p := &proc{what: s.what, cmd: cmd, done: make(chan struct{})}
		go func() { cmd.Wait(); log.Close(); close(p.done) }()
		d.procs = append(d.procs, p)
	}
	return nil
}

// anyExited is closed when one of the started processes exits.
func (d *demo) anyExited() <-chan struct{} {
	ch := make(chan struct{})
	var once sync.Once
	for _, p := range d.procs {
		go func() { <-p.done; once.Do(func() { close(ch) }) }()
	}
	return ch
}

// oursAlive checks that both processes the run started are running; otherwise it stops
// with their logs (a port taken after the check ends here: the process cannot bind it).
func (d *demo) oursAlive() error {
	for _, p := range d.procs {
		if p.exited() {
			fmt.Fprintf(d.stderr, "run.sh: a process it started exited (pid %d); its log:\n", p.cmd.Process.Pid)
			d.logsTail()
			return exit(1)
		}
	}
	return nil
}

// logsTail prints the end of both logs.
func (d *demo) logsTail() {
	for _, name := range []string{"appservice.log", "caddy.log"} {
		path := filepath.Join(d.logs, name)
		data, _ := os.ReadFile(path)
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		if len(lines) > 20 {
			lines = lines[len(lines)-20:]
		}
		fmt.Fprintf(d.stderr, "==> %s <==\n%s\n", path, strings.Join(lines, "\n"))
	}
}

// loopback dials every address of the demo on 127.0.0.1, where the gateway binds: a
// listener on localhost's other address (::1) is not this run's.
var loopback = &http.Transport{
	DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		_, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		var dialer net.Dialer
		return dialer.DialContext(ctx, "tcp4", net.JoinHostPort("127.0.0.1", port))
	},
	DisableKeepAlives: true,
}

// waitReady waits for this run's processes, not for any listener: an answer counts when
// both are alive and it carries this run's mark (with an operator's Caddyfile, which
// need not carry it, when the listeners are this run's processes).
func (d *demo) waitReady(ctx context.Context) error {
	client := &http.Client{Transport: loopback, Timeout: 5 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if err := d.oursAlive(); err != nil {
			return err
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, d.gateway+"/healthz", nil)
		if res, err := client.Do(req); err == nil {
			res.Body.Close()
			got := res.Header.Get("X-Partnergate-Run")
			if d.runID != "" && got != "" && got != d.runID {
				fmt.Fprintf(d.stderr, "run.sh: the gateway on port %d is another run's (identifier %s), held by %s: stop it, or choose another port with PARTNERGATE_DEMO_PORT=<port>\n", d.gwPort, got, portHolder(d.gwPort))
				return exit(1)
			}
			if res.StatusCode == http.StatusOK {
				if d.runID != "" && got != d.runID {
					fmt.Fprintf(d.stderr, "run.sh: port %d answers without this run's identifier: it is not this run's gateway but %s; stop it, or choose another port with PARTNERGATE_DEMO_PORT=<port>\n", d.gwPort, portHolder(d.gwPort))
					return exit(1)
				}
				break
			}
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(d.stderr, "run.sh: the gateway did not answer on %s within 30s; logs in %s\n", d.gateway, d.logs)
			return exit(1)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	if err := d.oursAlive(); err != nil {
		return err
	}
	if err := d.owns(d.gwPort, d.procs[1].cmd.Process.Pid, "gateway"); err != nil {
		return err
	}
	return d.owns(d.appPort, d.procs[0].cmd.Process.Pid, "app service")
}

// runCheck walks the link flow through this run's gateway (internal/linkflow).
func (d *demo) runCheck(ctx context.Context) error {
	fail := func(err error) error {
		fmt.Fprintf(d.stderr, "run.sh --check: FAILED: %v\n", err)
		d.logsTail()
		return exit(1)
	}
	key, err := os.ReadFile(filepath.Join(d.dir, "private.pem"))
	if err != nil {
		return fail(err)
	}
	signer, err := partnerkit.NewSignerPEM(key, keyID, "ES256", issuer, audience)
	if err != nil {
		return fail(fmt.Errorf("the demo partner's key: %v", err))
	}
	var payloads [2]*partnerkit.Payload
	for i, name := range []string{"main-link.json", "go-link.json"} {
		data, err := os.ReadFile(filepath.Join(d.dir, name))
		if err == nil {
			payloads[i], err = partnerkit.ParsePayload(data)
		}
		if err != nil {
			return fail(fmt.Errorf("%s: %v", name, err))
		}
	}
	check := &linkflow.Check{
		Partner: &partnerkit.Client{Gateway: d.gateway, Partner: partnerName, Signer: signer,
			HTTPClient: &http.Client{Transport: loopback, Timeout: 30 * time.Second}},
		Main: payloads[0], Go: payloads[1],
		Login: "instructor", Password: d.password(),
		Transport: loopback,
		Report:    func(step string) { fmt.Fprintf(d.stdout, "run.sh --check: %s\n", step) },
	}
	if _, err := check.Run(ctx); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fail(err)
	}
	if err := d.oursAlive(); err != nil {
		return err
	}
	fmt.Fprintln(d.stdout, "run.sh --check: passed")
	return nil
}

// printNext prints what a person does next.
func (d *demo) printNext(config string) {
	send := fmt.Sprintf("bin/partnerlink send --gateway %s --partner %s --key %s --iss %s --aud %s",
		d.gateway, partnerName, filepath.Join(d.dir, "private.pem"), issuer, audience)
	caddyfile := config
	if d.caddyfile == "" {
		caddyfile = config + " with this run's ports"
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, `
partnergate is running.
  gateway      %[1]s  (Caddy, pid %[2]d, %[3]s; log %[4]s)
  app service  http://127.0.0.1:%[5]d  (pid %[6]d, SQLite %[7]s; log %[8]s)

1. Send a main-client link as the demo partner and open the URL it prints:

   %[9]s --payload %[10]s --open

   (without a desktop browser, drop --open and paste the URL into a browser within a minute)

2. The first link for employee emp-1001 asks for a service account. Sign in with
     username  instructor   (or ida@partner.example)
     password  %[11]s
   The application shows Ola Nordmann in focus and the link's case, case-1, with his plan
   "Knee rehabilitation, week 1": change it, save it and export it to the case, or give
   him another (New plan, from a template); the exercise catalogue and the template
   library are under Exercises and Templates. Send the link again: it signs in directly.

3. The form variant (/payload), as a partner page that posts the hidden field:

   %[9]s --payload %[10]s --form %[12]s

   then open %[12]s in a browser.

4. A Go link for Ola (creates the member account and signs it in): it shows the plans
   made for him, "Knee rehabilitation, week 1" from the start, each exercise with its
   instructions. A browser where Ola has never signed in asks "Continue as Ola Nordmann,
   North Clinic?" once first (one signed in as the instructor asks to switch accounts).

   %[9]s --payload %[13]s --open

Demo persons and plans (Åse Ødegård, Jonas Lindqvist, Mia Virtanen) are seeded at start
into North Clinic, where the demo links land, and into the organization where the
instructor's password sign-in lands (%[1]s/app/signin): "Demo clinic" at first.

The desktop wrapper's download and update site, %[1]s/webwrapper/, serves
%[14]s: empty until a build is published there (docs/operations.md,
"Publishing the desktop wrapper").

Ctrl-C stops the gateway and the app service.
`, d.gateway, d.procs[1].cmd.Process.Pid, caddyfile, filepath.Join(d.logs, "caddy.log"),
		d.appPort, d.procs[0].cmd.Process.Pid, filepath.Join(d.data, "appservice.db"), filepath.Join(d.logs, "appservice.log"),
		send, filepath.Join(d.dir, "main-link.json"), d.password(), filepath.Join(d.dir, "partner-page.html"),
		filepath.Join(d.dir, "go-link.json"), filepath.Join(d.data, "webwrapper"))
	d.stdout.Write(b.Bytes())
}
