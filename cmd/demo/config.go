package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// gatewayConfig returns the Caddyfile the gateway runs: Caddyfile.example as it is, its
// placeholders filled from the run's environment and a mark of the run that its gateway
// sets on every answer (so that an answer from another gateway on the port is told
// apart), or the operator's own file, checked for what run.sh needs.
func (d *demo) gatewayConfig(ctx context.Context) (string, error) {
	if d.caddyfile == "" {
		d.runID = randomHex(16)
		return "Caddyfile.example", nil
	}
	file := d.caddyfile
	fmt.Fprintf(d.stderr, "== using the Caddyfile %s as it is (PARTNERGATE_CADDYFILE)\n", file)
	adaptLog := filepath.Join(d.logs, "adapt.log")
	log, err := os.Create(adaptLog)
	if err != nil {
		return "", err
	}
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, "./caddy", "adapt", "--config", file, "--adapter", "caddyfile")
	cmd.Env, cmd.Stdout, cmd.Stderr = d.env, &out, log
	err = cmd.Run()
	log.Close()
	var adapted map[string]any
	if err == nil {
		err = json.Unmarshal(out.Bytes(), &adapted)
	}
	if err != nil {
		fmt.Fprintf(d.stderr, "run.sh: caddy cannot load %s (PARTNERGATE_CADDYFILE):\n", file)
		data, _ := os.ReadFile(adaptLog)
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		if len(lines) > 5 {
			lines = lines[len(lines)-5:]
		}
		fmt.Fprintln(d.stderr, strings.Join(lines, "\n"))
		return "", exit(1)
	}

	gw, app := ":"+strconv.Itoa(d.gwPort), ":"+strconv.Itoa(d.appPort)
	listens, dials := false, false
	walk(adapted, func(key string, v any) {
		switch s, _ := v.(string); {
		case key == "dial" && strings.HasSuffix(s, app):
			dials = true
		case key == "listen" && strings.HasSuffix(s, gw):
			listens = true
		}
	})
	if !listens {
		fmt.Fprintf(d.stderr, "run.sh: %s serves nothing on port %d, where run.sh sends its requests: serve http://localhost:%d in it, or set PARTNERGATE_DEMO_PORT to its port\n", file, d.gwPort, d.gwPort)
		return "", exit(1)
	}
	if !dials {
		fmt.Fprintf(d.stderr, "run.sh: note: %s proxies to nothing on port %d, where this run's app service listens (PARTNERGATE_DEMO_APP_PORT)\n", file, d.appPort)
	}

	// Caddy's default admin address, unless the file sets one or turns it off.
	admin := "localhost:2019"
	if a, ok := adapted["admin"].(map[string]any); ok {
		if a["disabled"] == true {
			admin = ""
		} else if l, ok := a["listen"].(string); ok && l != "" {
			admin = l
		}
	}
	if i := strings.LastIndex(admin, ":"); i >= 0 {
		if port, err := strconv.Atoi(admin[i+1:]); err == nil {
			if err := d.checkPorts(portUse{port, "Caddy's admin API", "the admin option in " + file}); err != nil {
				return "", err
			}
		}
	}

	if !hasDemoPartner(adapted) {
		if d.check {
			fmt.Fprintf(d.stderr, "run.sh --check: cannot check: %s has no jwt_partner route for the partner demo, which --check sends its links as (issuer %s, audience %s, keys %s): add one as Caddyfile.example does\n",
				file, issuer, audience, filepath.Join(d.dir, "jwks.json"))
			return "", exit(1)
		}
		fmt.Fprintf(d.stderr, "run.sh: note: %s has no jwt_partner route for the partner demo: the demo links below will be refused\n", file)
	}
	return file, nil
}

// walk calls f with every key and value of the JSON value v, and every element of an
// array under its array's key.
func walk(v any, f func(key string, v any)) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			f(k, e)
			if arr, ok := e.([]any); ok {
				for _, x := range arr {
					f(k, x)
				}
			}
			walk(e, f)
		}
	case []any:
		for _, e := range v {
			walk(e, f)
		}
	}
}

// hasDemoPartner reports whether a jwt_partner handler of the adapted config has the
// partner demo.
func hasDemoPartner(v any) bool {
	found := false
	var look func(any)
	look = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if v["handler"] == "jwt_partner" {
				if partners, ok := v["partners"].(map[string]any); ok && partners[partnerName] != nil {
					found = true
				}
			}
			for _, e := range v {
				look(e)
			}
		case []any:
			for _, e := range v {
				look(e)
			}
		}
	}
	look(v)
	return found
}
