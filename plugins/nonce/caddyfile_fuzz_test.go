package nonce

import (
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// FuzzUnmarshalCaddyfile feeds arbitrary store blocks to both stores' parsers: they must
// return an error or a config, never panic, and a parsed config must pass or fail
// Validate without panicking.
func FuzzUnmarshalCaddyfile(f *testing.F) {
	for _, seed := range []string{
		"memory",
		"memory {\n max_entries 5\n sweep_interval 1s\n}",
		"redis 127.0.0.1:6379",
		"redis {\n addresses a:1 b:2\n master_name m\n db 1\n tls {\n ca_file x\n }\n require_clean_start\n}",
		"redis {\n tls {\n insecure_skip_verify\n }\n}",
		"redis {\n pool_size -1\n}",
		"redis {{\n}}",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, input string) {
		tokens, err := caddyfile.Tokenize([]byte(input), "Fuzzfile")
		if err != nil {
			return
		}
		var m Memory
		if m.UnmarshalCaddyfile(caddyfile.NewDispenser(tokens)) == nil {
			_ = m.Validate()
		}
		var r Redis
		if r.UnmarshalCaddyfile(caddyfile.NewDispenser(tokens)) == nil {
			_ = r.Validate()
		}
	})
}
