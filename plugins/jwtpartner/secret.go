package jwtpartner

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/caddyserver/caddy/v2"
)

// envPlaceholder matches the {env.NAME} placeholders of a configured secret: Caddy expands
// them only at provisioning (the Caddyfile adapter leaves them as written), so a variable
// missing from the service's environment shows first there, and the error must name it
// for the operator to see which one (`caddy validate` prints nothing else about it).
var envPlaceholder = regexp.MustCompile(`\{env\.([^{}]+)\}`)

// expandSecret returns the configured secret with its placeholders replaced and the names
// of the environment variables it reads.
func expandSecret(configured string) (secret []byte, vars []string) {
	for _, m := range envPlaceholder.FindAllStringSubmatch(configured, -1) {
		vars = append(vars, m[1])
	}
	return []byte(caddy.NewReplacer().ReplaceKnown(configured, "")), vars
}

// checkUpstreamSecret says why an expanded upstream secret cannot sign assertions, naming
// the environment variables it came from; never the secret or its length, which would
// tell an onlooker how much of it is missing.
func checkUpstreamSecret(secret []byte, vars []string) error {
	from := ""
	if len(vars) > 0 {
		from = fmt.Sprintf(": is the environment variable %s set?", strings.Join(vars, ", "))
	}
	switch {
	case len(secret) == 0 && from != "":
		return fmt.Errorf("upstream_secret is empty%s", from)
	case len(secret) == 0:
		return fmt.Errorf("upstream_secret is empty after expansion")
	case len(secret) < 32 && from != "":
		return fmt.Errorf("upstream_secret: shorter than 32 bytes after expansion (is the environment variable %s set to the whole secret?)", strings.Join(vars, ", "))
	case len(secret) < 32:
		return fmt.Errorf("upstream_secret: shorter than 32 bytes after expansion")
	}
	return nil
}
