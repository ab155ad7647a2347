package main

import (
	"bytes"
	"strings"
	"text/template"
)

// caddyConfig fills the Caddyfile of one phase. Every phase has the same shape (one
// site, the admin API on a free port for readiness and pprof, the same route and the same
// upstream) so that the only difference between the baseline and the gateway is
// jwt_partner itself.
type caddyConfig struct {
	Admin    string
	Listen   string
	Upstream string
	Gateway  bool   // add jwt_partner in front of reverse_proxy
	JWKSURL  string // the partner's key set: jwks_url when set,
	JWKSFile string // else jwks_file
	Cooldown string // refresh_cooldown: at most one refetch on an unknown kid per cooldown
	Redis    string // nonce_store redis at this address; "" for the memory store
	// RedisCluster, when set, is the seed nodes of a Redis Cluster (-redis-cluster): the
	// store's addresses, in place of Redis.
	RedisCluster []string
	// Floor adds floorPath, where Caddy answers every request with floorBody, a fixed
	// 401 with the gateway's headers and no verification: the cheapest refusal Caddy
	// can give, the floor that the unknown-kid flood's refusals are measured against.
	Floor    bool
	Partner  string
	Issuer   string
	Audience string
	// Algorithm is the partner's one algorithm (-alg): RS256, PS256 or ES256.
	Algorithm string
	// Partners are the other partners of -partners, after the first (Partner), each with
	// its own key set in a jwks_file.
	Partners []benchPartnerConfig
}

// The baseline reads and forwards the request body; the gateway reads it as the token and
// forwards the request without it (docs/architecture.md: the token is not forwarded), which is
// a small advantage to the gateway and stated with the numbers.
var caddyfileTemplate = template.Must(template.New("Caddyfile").Parse(`{
	admin {{.Admin}}
	persist_config off
	auto_https off
	skip_install_trust
	grace_period 1s
{{- if .Gateway}}
	order jwt_partner before reverse_proxy
{{- end}}
}

http://{{.Listen}} {
{{- if .Floor}}
	route /floor/* {
		header {
			Cache-Control no-store
			Content-Type application/problem+json
			Www-Authenticate "PartnerLink realm=\"partnergate\""
			X-Content-Type-Options nosniff
		}
		respond ` + "`" + `{{.FloorBody}}` + "`" + ` 401
	}
{{- end}}
	route /partner/* {
{{- if .Gateway}}
		jwt_partner {
{{- if .RedisCluster}}
			nonce_store redis {
				addresses {{.ClusterAddresses}}
			}
{{- else if .Redis}}
			nonce_store redis {
				address {{.Redis}}
			}
{{- else}}
			nonce_store memory
{{- end}}
			partner {{.Partner}} {
				issuer     {{.Issuer}}
				audience   {{.Audience}}
				algorithms {{.Algorithm}}
{{- if .JWKSURL}}
				jwks_url   {{.JWKSURL}}
{{- if .Cooldown}}
				refresh_cooldown {{.Cooldown}}
{{- end}}
{{- else}}
				jwks_file  {{.JWKSFile}}
{{- end}}
			}
{{- range .Partners}}
			partner {{.Name}} {
				issuer     {{.Issuer}}
				audience   {{$.Audience}}
				algorithms RS256
				jwks_file  {{.JWKSFile}}
			}
{{- end}}
		}
{{- end}}
		reverse_proxy {{.Upstream}}
	}
}
`))

// floorPath is where phases f and g send the flood, and floorBody the fixed answer: byte
// for byte the size of jwt_partner's problem document for an unknown kid.
const (
	floorPath = "/floor/acme/url"
	floorBody = `{"type":"urn:partnergate:problem:key_unknown","title":"Unknown key","status":401,"detail":"no key with the token's kid in the partner's key set","code":"key_unknown","request_id":"2e5e9a8a-8635-4305-946d-bbc951b80700"}`
)

// ClusterAddresses is RedisCluster for the template: the addresses subdirective's arguments.
func (c caddyConfig) ClusterAddresses() string { return strings.Join(c.RedisCluster, " ") }

// FloorBody is floorBody for the template.
func (caddyConfig) FloorBody() string { return floorBody }

func (c caddyConfig) render() ([]byte, error) {
	var b bytes.Buffer
	if err := caddyfileTemplate.Execute(&b, c); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
