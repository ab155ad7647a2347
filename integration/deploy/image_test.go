package deploy

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// instruction is one Dockerfile instruction, its continuation lines joined.
type instruction struct {
	line int
	cmd  string // upper case: FROM, COPY, RUN, …
	args string
}

// parseDockerfile reads the instructions of a Dockerfile: comments and blank lines
// dropped, lines ending in a backslash joined with the next. It is not BuildKit's parser
// (kept out of go.mod for a test), only enough to check what the file says.
func parseDockerfile(t *testing.T, path string) []instruction {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []instruction
	var cur strings.Builder
	start, n := 0, 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if cur.Len() == 0 && (line == "" || strings.HasPrefix(line, "#")) {
			continue
		}
		if cur.Len() == 0 {
			start = n
		}
		if body, more := strings.CutSuffix(line, "\\"); more {
			cur.WriteString(body + " ")
			continue
		}
		cur.WriteString(line)
		cmd, args, _ := strings.Cut(cur.String(), " ")
		out = append(out, instruction{line: start, cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args)})
		cur.Reset()
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// stage is a build stage: its FROM and the instructions up to the next one.
type stage struct {
	name, base string
	body       []instruction
}

func stages(ins []instruction) map[string]*stage {
	all := map[string]*stage{}
	var cur *stage
	for _, in := range ins {
		if in.cmd == "FROM" {
			f := strings.Fields(in.args)
			cur = &stage{base: f[0]}
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				cur.name = f[2]
			}
			all[cur.name] = cur
			continue
		}
		if cur != nil {
			cur.body = append(cur.body, in)
		}
	}
	return all
}

func (s *stage) last(cmd string) string {
	v := ""
	for _, in := range s.body {
		if in.cmd == cmd {
			v = in.args
		}
	}
	return v
}

// TestDockerfile checks deploy/Dockerfile without a container engine: the three stages,
// the gateway built by xcaddy.sh (which stamps the module's version) and the app service
// from cmd/appservice, the Go version of go.mod, unprivileged distroless final images,
// and that every file it copies from the build context exists and is not ignored.
func TestDockerfile(t *testing.T) {
	dir := root(t)
	ins := parseDockerfile(t, filepath.Join(dir, "deploy", "Dockerfile"))
	st := stages(ins)
	for _, name := range []string{"build", "gateway", "app"} {
		if st[name] == nil {
			t.Fatalf("deploy/Dockerfile has no stage %q (stages: %v)", name, slices.Collect(mapKeys(st)))
		}
	}

	var runs strings.Builder
	for _, in := range st["build"].body {
		if in.cmd == "RUN" {
			runs.WriteString(in.args + "\n")
		}
	}
	for _, want := range []string{"./xcaddy.sh /out/caddy", "go build -o /out/partnergate-app ./cmd/appservice"} {
		if !strings.Contains(runs.String(), want) {
			t.Errorf("the build stage does not run %q", want)
		}
	}
	if !strings.Contains(st["build"].last("ENV"), "CGO_ENABLED=0") {
		t.Errorf("the build stage does not set CGO_ENABLED=0: the distroless static base has no libc")
	}

	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	goVersion := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(gomod)
	var argGo string
	for _, in := range ins {
		if in.cmd == "ARG" && strings.HasPrefix(in.args, "GO_VERSION=") {
			argGo = strings.TrimPrefix(in.args, "GO_VERSION=")
		}
	}
	if goVersion == nil || argGo != string(goVersion[1]) {
		t.Errorf("deploy/Dockerfile builds with Go %q, go.mod says %q", argGo, goVersion)
	}

	for _, name := range []string{"gateway", "app"} {
		s := st[name]
		if !strings.HasPrefix(s.base, "gcr.io/distroless/static") {
			t.Errorf("stage %s is FROM %s, want a distroless static image", name, s.base)
		}
		if u := s.last("USER"); u == "" || strings.HasPrefix(u, "root") || strings.HasPrefix(u, "0") {
			t.Errorf("stage %s runs as %q, want an unprivileged user", name, u)
		}
		if s.last("ENTRYPOINT") == "" {
			t.Errorf("stage %s has no ENTRYPOINT", name)
		}
	}
	if ep := st["gateway"].last("ENTRYPOINT"); !strings.Contains(ep, "/usr/bin/caddy") {
		t.Errorf("the gateway's ENTRYPOINT is %s, want caddy", ep)
	}

	ignored := dockerignore(t, filepath.Join(dir, "deploy", "Dockerfile.dockerignore"))
	for _, in := range ins {
		if in.cmd != "COPY" || strings.Contains(in.args, "--from=") {
			continue
		}
		f := strings.Fields(in.args)
		for _, src := range f[:len(f)-1] {
			if strings.HasPrefix(src, "--") || src == "." {
				continue
			}
			if _, err := os.Stat(filepath.Join(dir, src)); err != nil {
				t.Errorf("deploy/Dockerfile:%d copies %s, which is not in the repository: %v", in.line, src, err)
			}
			if ignored(src) {
				t.Errorf("deploy/Dockerfile:%d copies %s, which Dockerfile.dockerignore leaves out", in.line, src)
			}
		}
	}
	for _, needed := range []string{"go.mod", "go.sum", "xcaddy.sh", "cmd/caddy/main.go", "cmd/appservice/main.go", "plugins/jwtpartner/jwtpartner.go"} {
		if ignored(needed) {
			t.Errorf("Dockerfile.dockerignore leaves out %s, which the build needs", needed)
		}
	}
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// dockerignore returns a matcher for the patterns of an ignore file: each pattern matches
// a path or a folder above it (filepath.Match, "**/" at the start matching any depth).
func dockerignore(t *testing.T, path string) func(string) bool {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var patterns []string
	for line := range strings.SplitSeq(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(line, "#") {
			patterns = append(patterns, strings.TrimPrefix(line, "/"))
		}
	}
	return func(p string) bool {
		parts := strings.Split(filepath.ToSlash(p), "/")
		for i := 1; i <= len(parts); i++ {
			prefix := strings.Join(parts[:i], "/")
			for _, pat := range patterns {
				any, deep := strings.CutPrefix(pat, "**/")
				if ok, _ := filepath.Match(pat, prefix); ok {
					return true
				}
				if deep {
					if ok, _ := filepath.Match(any, parts[i-1]); ok {
						return true
					}
				}
			}
		}
		return false
	}
}

// containerEngine returns docker or podman when one answers (its daemon or service up),
// else "" and why not.
func containerEngine() (string, string) {
	why := "neither docker nor podman is on PATH"
	for _, name := range []string{"docker", "podman"} {
		if _, err := exec.LookPath(name); err != nil {
			continue
		}
		out, err := exec.Command(name, "info").CombinedOutput()
		if err == nil {
			return name, ""
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		why = name + " info: " + lines[len(lines)-1]
	}
	return "", why
}

// TestImage builds both images of deploy/Dockerfile and starts them, where a container
// engine answers: the gateway lists partnergate's modules with the version given at build
// time, and the app service starts far enough to print its options. Without an engine it
// is skipped, saying why: TestDockerfile is then the check that ran.
func TestImage(t *testing.T) {
	engine, why := containerEngine()
	if engine == "" {
		t.Skipf("no container engine: %s (TestDockerfile checked deploy/Dockerfile instead)", why)
	}
	dir := root(t)
	tag := "partnergate-test-" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))
	for _, target := range []string{"gateway", "app"} {
		if out, stderr, err := run(t, dir, nil, engine, "build", "-f", "deploy/Dockerfile", "--target", target,
			"--build-arg", "PARTNERGATE_VERSION=v1.9.7", "-t", tag+"-"+target, "."); err != nil {
			t.Fatalf("%s build --target %s: %v\n%s%s", engine, target, err, out, stderr)
		}
		t.Cleanup(func() { _ = exec.Command(engine, "rmi", "-f", tag+"-"+target).Run() })
	}
	out, stderr, err := run(t, dir, nil, engine, "run", "--rm", tag+"-gateway", "list-modules", "--versions", "--skip-standard")
	if err != nil || !strings.Contains(out, "http.handlers.jwt_partner v1.9.7") {
		t.Errorf("%s run gateway list-modules --versions = %v\n%s%s\nwant http.handlers.jwt_partner v1.9.7", engine, err, out, stderr)
	}
	out, stderr, err = run(t, dir, nil, engine, "run", "--rm", tag+"-gateway", "validate", "--config", "/etc/partnergate/Caddyfile", "--adapter", "caddyfile")
	if err == nil || !strings.Contains(stderr, "is the environment variable") {
		t.Errorf("%s run gateway validate without secrets = %v\n%s%s\nwant a failure naming the missing variable", engine, err, out, stderr)
	}
	out, stderr, _ = run(t, dir, nil, engine, "run", "--rm", tag+"-app", "-h")
	if !strings.Contains(out+stderr, "-listen") {
		t.Errorf("%s run app -h:\n%s%s\nwant the app service's options", engine, out, stderr)
	}
}

// TestSystemdUnits: the units of deploy/ run their service as its own user with its
// secrets from an EnvironmentFile and the hardening options, do not print the environment
// (caddy run --environ would put the secrets in the journal), and pass
// `systemd-analyze verify` where it is installed (with the binaries' paths pointed at one
// that exists here).
func TestSystemdUnits(t *testing.T) {
	dir := root(t)
	units := map[string][]string{
		"partnergate-gateway.service": {"User=partnergate-gateway", "EnvironmentFile=/etc/partnergate/gateway.env", "AmbientCapabilities=CAP_NET_BIND_SERVICE", "ExecReload="},
		"partnergate-app.service":     {"User=partnergate-app", "EnvironmentFile=/etc/partnergate/app.env", "CapabilityBoundingSet=\n"},
	}
	hardening := []string{"NoNewPrivileges=true", "ProtectSystem=strict", "ProtectHome=true", "PrivateTmp=true", "RestrictAddressFamilies=", "SystemCallFilter=@system-service"}
	verify, lookErr := exec.LookPath("systemd-analyze")
	truePath, _ := exec.LookPath("true")
	tmp := t.TempDir()
	for name, wants := range units {
		data, err := os.ReadFile(filepath.Join(dir, "deploy", name))
		if err != nil {
			t.Fatal(err)
		}
		text := string(data)
		for _, want := range append(wants, hardening...) {
			if !strings.Contains(text, want) {
				t.Errorf("deploy/%s lacks %q", name, strings.TrimSpace(want))
			}
		}
		if strings.Contains(text, "--environ") {
			t.Errorf("deploy/%s runs with --environ, which prints the secrets to the journal", name)
		}
		if lookErr == nil && truePath != "" {
			local := regexp.MustCompile(`/usr/local/bin/[a-z-]+`).ReplaceAllString(text, truePath)
			if err := os.WriteFile(filepath.Join(tmp, name), []byte(local), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if lookErr != nil {
		t.Skipf("systemd-analyze is not installed; the units' contents were checked, not their syntax")
	}
	out, stderr, err := run(t, tmp, nil, verify, "verify", "./partnergate-gateway.service", "./partnergate-app.service")
	if err != nil || strings.TrimSpace(out+stderr) != "" {
		t.Errorf("systemd-analyze verify = %v:\n%s%s", err, out, stderr)
	}
}
