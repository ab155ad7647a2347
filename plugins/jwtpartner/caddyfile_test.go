package jwtpartner

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

func TestUnmarshalCaddyfile(t *testing.T) {
	const partner = `partner demo {
		issuer https://partner.example
		audience partnergate-demo
		jwks_file testdata/jwks.json
	}`
	tests := []struct {
		name  string
		input string
		want  string // JSON of the handler, or "" when wantErr is set
		err   string // substring of the error
	}{
		{
			name:  "minimal",
			input: "jwt_partner {\n" + partner + "\n}",
			want:  `{"partners":{"demo":{"issuer":"https://partner.example","audience":"partnergate-demo","jwks_file":"testdata/jwks.json"}}}`,
		},
		{
			name: "every option",
			input: `jwt_partner {
				partner acme {
					issuer https://acme.example
					audience svc-link
					algorithms RS256 ES256
					jwks_url https://acme.example/.well-known/jwks.json
					jwks_ca_file /etc/partnergate/acme-ca.pem
					refresh_min 2m
					refresh_max 2h
					refresh_cooldown 10s
					max_stale 12h
					kinds main
					max_lifetime 2m
					leeway 10s
					nonce_min_length 20
					nonce_max_length 100
					origins https://ehr.acme.example http://localhost:8081 null
				}
				leeway 15s
				max_lifetime 4m
				max_body_size 8KiB
				read_timeout 5s
				header_prefix X-Link-
				field_headers contact.id caseId
				upstream_secret {env.SECRET}
				errors handle_errors
			}`,
			want: `{"partners":{"acme":{"issuer":"https://acme.example","audience":"svc-link","algorithms":["RS256","ES256"],"jwks_url":"https://acme.example/.well-known/jwks.json","jwks_ca_file":"/etc/partnergate/acme-ca.pem","refresh_min":120000000000,"refresh_max":7200000000000,"refresh_cooldown":10000000000,"max_stale":43200000000000,"kinds":["main"],"max_lifetime":120000000000,"leeway":10000000000,"nonce_min_length":20,"nonce_max_length":100,"origins":["https://ehr.acme.example","http://localhost:8081","null"]}},"leeway":15000000000,"max_lifetime":240000000000,"max_body_size":8192,"read_timeout":5000000000,"header_prefix":"X-Link-","field_headers":["contact.id","caseId"],"upstream_secret":"{env.SECRET}","errors":"handle_errors"}`,
		},
		{
			name:  "field_headers all",
			input: "jwt_partner {\n" + partner + "\nfield_headers all\n}",
			want:  `{"partners":{"demo":{"issuer":"https://partner.example","audience":"partnergate-demo","jwks_file":"testdata/jwks.json"}},"field_headers":["all"]}`,
		},
		{
			name:  "field_headers lines add up",
			input: "jwt_partner {\n" + partner + "\nfield_headers contact.id\nfield_headers contact.ssn employeeId\n}",
			want:  `{"partners":{"demo":{"issuer":"https://partner.example","audience":"partnergate-demo","jwks_file":"testdata/jwks.json"}},"field_headers":["contact.id","contact.ssn","employeeId"]}`,
		},
		{
			name:  "leeway 0 is none",
			input: "jwt_partner {\n" + partner + "\npartner zero {\nissuer a\naudience b\njwks_url https://x.example/j\nleeway 0\n}\nleeway 0s\n}",
			want:  `{"partners":{"demo":{"issuer":"https://partner.example","audience":"partnergate-demo","jwks_file":"testdata/jwks.json"},"zero":{"issuer":"a","audience":"b","jwks_url":"https://x.example/j","leeway":-1}},"leeway":-1}`,
		},
		{name: "argument on directive", input: "jwt_partner extra {\n" + partner + "\n}", err: "wrong argument count"},
		{name: "no partner", input: "jwt_partner {\nleeway 1s\n}", err: "at least one partner"},
		{name: "CA file without jwks_url", input: "jwt_partner {\npartner demo {\nissuer i\naudience a\njwks_file j.json\njwks_ca_file ca.pem\n}\n}", err: "partner demo: jwks_ca_file is for a jwks_url"},
		{name: "CA file without value", input: "jwt_partner {\npartner demo {\nissuer i\naudience a\njwks_url https://x.example/j\njwks_ca_file\n}\n}", err: "wrong argument count"},
		{name: "unknown option", input: "jwt_partner {\n" + partner + "\nfoo bar\n}", err: `unrecognized subdirective "foo"`},
		{name: "duplicate option", input: "jwt_partner {\n" + partner + "\nleeway 1s\nleeway 2s\n}", err: "leeway: given more than once"},
		{name: "duplicate partner", input: "jwt_partner {\n" + partner + "\n" + partner + "\n}", err: "partner demo: configured more than once"},
		{name: "shared issuer and audience", input: "jwt_partner {\n" + partner + "\npartner other {\nissuer https://partner.example\naudience partnergate-demo\njwks_url https://x.example/j\n}\n}", err: `partners demo and other have the same issuer "https://partner.example" and audience "partnergate-demo"`},
		{name: "shared issuer and audience names the line", input: "jwt_partner {\n" + partner + "\npartner other {\nissuer https://partner.example\naudience partnergate-demo\njwks_url https://x.example/j\n}\n}", err: "give each partner its own audience, at Testfile:7"},
		{name: "bad partner name", input: "jwt_partner {\npartner Demo! {\n}\n}", err: "partner name"},
		{name: "partner without name", input: "jwt_partner {\npartner\n}", err: "wrong argument count"},
		{name: "partner with two names", input: "jwt_partner {\npartner a b {\n}\n}", err: "wrong argument count"},
		{name: "unknown partner option", input: "jwt_partner {\npartner demo {\nsecret x\n}\n}", err: `partner demo: unrecognized subdirective "secret"`},
		{name: "duplicate partner option", input: "jwt_partner {\npartner demo {\nissuer a\nissuer b\n}\n}", err: "issuer given more than once"},
		{name: "HS256", input: "jwt_partner {\npartner demo {\nalgorithms RS256 HS256\n}\n}", err: `algorithm "HS256" is not allowed`},
		{name: "none", input: "jwt_partner {\npartner demo {\nalgorithms none\n}\n}", err: `algorithm "none" is not allowed`},
		{name: "algorithms without value", input: "jwt_partner {\npartner demo {\nalgorithms\n}\n}", err: "wrong argument count"},
		{name: "bad kind", input: "jwt_partner {\npartner demo {\nkinds web\n}\n}", err: `kind "web"`},
		{name: "kinds without value", input: "jwt_partner {\npartner demo {\nkinds\n}\n}", err: "wrong argument count"},
		{name: "missing issuer", input: "jwt_partner {\npartner demo {\naudience a\njwks_file testdata/jwks.json\n}\n}", err: "partner demo: issuer is required, at Testfile:2"},
		{name: "missing audience", input: "jwt_partner {\npartner demo {\nissuer a\njwks_file testdata/jwks.json\n}\n}", err: "partner demo: audience is required"},
		// An adapter records the path; Provision reads the file (TestProvisionReportsKeyFile).
		{
			name:  "missing key file is left to Provision",
			input: "jwt_partner {\npartner demo {\nissuer a\naudience b\njwks_file testdata/nope.json\n}\n}",
			want:  `{"partners":{"demo":{"issuer":"a","audience":"b","jwks_file":"testdata/nope.json"}}}`,
		},
		{name: "missing keys", input: "jwt_partner {\npartner demo {\nissuer a\naudience b\n}\n}", err: "jwks_file or jwks_url is required"},
		{name: "both key sources", input: "jwt_partner {\npartner demo {\nissuer a\naudience b\njwks_file testdata/jwks.json\njwks_url https://x.example/j\n}\n}", err: "exclusive"},
		{name: "http key url", input: "jwt_partner {\npartner demo {\njwks_url http://partner.example/jwks.json\n}\n}", err: "must use https"},
		{name: "issuer with two values", input: "jwt_partner {\npartner demo {\nissuer a b\n}\n}", err: "wrong argument count"},
		{name: "bad duration", input: "jwt_partner {\n" + partner + "\nleeway soon\n}", err: `leeway "soon"`},
		{name: "negative duration", input: "jwt_partner {\n" + partner + "\nleeway -1s\n}", err: `leeway "-1s": want a duration such as 30s, or 0 for none`},
		{name: "leeway over 5m", input: "jwt_partner {\n" + partner + "\nleeway 6m\n}", err: `leeway "6m": at most 5m0s`},
		{name: "partner leeway over 5m", input: "jwt_partner {\npartner demo {\nleeway 1h\n}\n}", err: `leeway "1h": at most 5m0s`},
		{name: "zero refresh_min", input: "jwt_partner {\npartner demo {\nrefresh_min 0\n}\n}", err: `refresh_min "0": want a positive duration`},
		{name: "lifetime over 5m", input: "jwt_partner {\n" + partner + "\nmax_lifetime 6m\n}", err: "max_lifetime: at most 5m0s"},
		{name: "partner lifetime over 5m", input: "jwt_partner {\npartner demo {\nmax_lifetime 10m\n}\n}", err: "max_lifetime: at most 5m0s"},
		{name: "origins without value", input: "jwt_partner {\npartner demo {\norigins\n}\n}", err: "wrong argument count"},
		{name: "origins twice", input: "jwt_partner {\npartner demo {\norigins https://a.example\norigins https://b.example\n}\n}", err: "partner demo: origins given more than once"},
		{name: "origin with a path", input: "jwt_partner {\npartner demo {\norigins https://ehr.acme.example/links\n}\n}", err: `partner demo: origins "https://ehr.acme.example/links": an origin has no user, path, query or fragment`},
		{name: "origin not as sent", input: "jwt_partner {\npartner demo {\norigins https://EHR.acme.example:443\n}\n}", err: `partner demo: origins "https://EHR.acme.example:443": write the origin as a browser sends it in the Origin header: https://ehr.acme.example, at Testfile:3`},
		{name: "origin wildcard", input: "jwt_partner {\npartner demo {\norigins https://*.acme.example\n}\n}", err: `origins "https://*.acme.example": no wildcards`},
		{name: "origin of another scheme", input: "jwt_partner {\npartner demo {\norigins ftp://acme.example\n}\n}", err: `origins "ftp://acme.example": want scheme://host`},
		{name: "bad nonce length", input: "jwt_partner {\npartner demo {\nnonce_min_length x\n}\n}", err: `nonce_min_length "x"`},
		{name: "bad read timeout", input: "jwt_partner {\n" + partner + "\nread_timeout 0s\n}", err: `read_timeout "0s"`},
		{name: "bad body size", input: "jwt_partner {\n" + partner + "\nmax_body_size lots\n}", err: `max_body_size "lots": want a size above 0 bytes, such as 8KiB or 8192`},
		{name: "zero body size", input: "jwt_partner {\n" + partner + "\nmax_body_size 0\n}", err: `max_body_size "0": want a size above 0 bytes, such as 8KiB or 8192`},
		{name: "body size over the token limit", input: "jwt_partner {\n" + partner + "\nmax_body_size 32KiB\n}", err: `max_body_size "32KiB": at most 16384 bytes (16 KiB), the longest token the verifier reads`},
		{name: "bad header prefix", input: "jwt_partner {\n" + partner + "\nheader_prefix X:Bad\n}", err: `header_prefix "X:Bad": want a header name prefix of letters, digits and '-', such as X-Partner-`},
		{name: "field_headers without value", input: "jwt_partner {\n" + partner + "\nfield_headers\n}", err: "wrong argument count"},
		{name: "field_headers unknown path", input: "jwt_partner {\n" + partner + "\nfield_headers contact.id contact.phone\n}", err: `field_headers "contact.phone": not a payload field; want all, or the JSON paths of payload fields: employeeId, employeeUsername, `},
		{name: "field_headers header name", input: "jwt_partner {\n" + partner + "\nfield_headers Contact-Id\n}", err: `field_headers "Contact-Id": not a payload field`},
		{name: "field_headers all with a path", input: "jwt_partner {\n" + partner + "\nfield_headers all contact.id\n}", err: "field_headers all contact.id: all stands alone; give all, or the paths without it, at Testfile:7"},
		{name: "field_headers all after paths", input: "jwt_partner {\n" + partner + "\nfield_headers contact.id\nfield_headers all\n}", err: "field_headers contact.id all: all stands alone; give all, or the paths without it, at Testfile:8"},
		{name: "bad errors mode", input: "jwt_partner {\n" + partner + "\nerrors silent\n}", err: `errors "silent": want respond or handle_errors`},
		{name: "unknown nonce store", input: "jwt_partner {\n" + partner + "\nnonce_store tape\n}", err: "tape"},
		{name: "nonce store without name", input: "jwt_partner {\n" + partner + "\nnonce_store\n}", err: "wrong argument count"},
		{name: "upstream_secret without value", input: "jwt_partner {\n" + partner + "\nupstream_secret\n}", err: "wrong argument count"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h Handler
			err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(tt.input))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("UnmarshalCaddyfile(%q) error = %v, want one containing %q", tt.name, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("UnmarshalCaddyfile(%q) error = %v", tt.name, err)
			}
			got, _ := json.Marshal(&h)
			if string(got) != tt.want {
				t.Errorf("UnmarshalCaddyfile(%q) =\n%s\nwant\n%s", tt.name, got, tt.want)
			}
		})
	}
}

// TestFieldHeadersRuleAgrees: field_headers is checked by one function, so a Caddyfile and
// the JSON it adapts to are refused in the same words; the Caddyfile adds its file and line.
func TestFieldHeadersRuleAgrees(t *testing.T) {
	for _, paths := range [][]string{{"contact.id", "contact.phone"}, {"all", "caseId"}, {"all", "all"}} {
		var fromFile Handler
		cerr := fromFile.UnmarshalCaddyfile(caddyfile.NewTestDispenser("jwt_partner {\npartner demo {\nissuer i\naudience a\njwks_file testdata/jwks.json\n}\nfield_headers " + strings.Join(paths, " ") + "\n}"))
		_, perr := fieldHeaderMask(paths)
		if cerr == nil || perr == nil {
			t.Fatalf("field_headers %q: UnmarshalCaddyfile = %v, fieldHeaderMask = %v, want both to refuse", paths, cerr, perr)
		}
		if want := perr.Error() + ", at Testfile:7"; !strings.HasPrefix(cerr.Error(), want) {
			t.Errorf("field_headers %q: UnmarshalCaddyfile = %q, want %q", paths, cerr, want)
		}
	}
}

// FuzzUnmarshalCaddyfile feeds arbitrary Caddyfile text to the directive: it must return
// a handler or an error, never panic, and whatever it accepts must marshal to JSON.
func FuzzUnmarshalCaddyfile(f *testing.F) {
	for _, seed := range []string{
		"jwt_partner {\npartner demo {\nissuer a\naudience b\njwks_file testdata/jwks.json\n}\n}",
		"jwt_partner {\npartner demo {\nissuer a\naudience b\njwks_url https://x/j\nalgorithms RS256\nkinds go\n}\nleeway 1s\nmax_body_size 1KiB\n}",
		"jwt_partner {\npartner demo {\n}\n}",
		"jwt_partner {\npartner demo {\nissuer a\naudience b\njwks_file testdata/jwks.json\ndry_run 5/30s\n}\n}",
		"jwt_partner {\npartner demo {\nissuer a\naudience b\njwks_file testdata/jwks.json\norigins https://ehr.a.example http://[::1]:8081 null\n}\n}",
		"jwt_partner {\nnonce_store memory {\nmax_entries 10\n}\n}",
		"jwt_partner {\npartner demo {\nissuer a\naudience b\njwks_file testdata/jwks.json\n}\nfield_headers contact.id caseId\nfield_headers employeeId\n}",
		"jwt_partner",
		"jwt_partner {\npartner {\n{\n}\n}",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, input string) {
		// Tokenize, not NewTestDispenser: the test dispenser calls log.Fatal on a lexer
		// error, which would kill the fuzz worker on input Caddy rightly refuses.
		tokens, err := caddyfile.Tokenize([]byte(input), "Fuzzfile")
		if err != nil {
			return
		}
		var h Handler
		if err := h.UnmarshalCaddyfile(caddyfile.NewDispenser(tokens)); err != nil {
			return
		}
		if _, err := json.Marshal(&h); err != nil {
			t.Fatalf("accepted %q but cannot marshal it: %v", input, err)
		}
		if len(h.Partners) == 0 {
			t.Fatalf("accepted %q without a partner", input)
		}
	})
}
