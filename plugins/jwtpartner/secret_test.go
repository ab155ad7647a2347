package jwtpartner

import (
	"strings"
	"testing"
)

func TestCheckUpstreamSecret(t *testing.T) {
	const long = "0123456789abcdef0123456789abcdef"
	tests := []struct {
		name, configured, env, want string // want "" means accepted
	}{
		{"from the environment", "{env.PG_TEST_SECRET}", long, ""},
		{"variable unset", "{env.PG_TEST_SECRET}", "", "upstream_secret is empty: is the environment variable PG_TEST_SECRET set?"},
		{"variable short", "{env.PG_TEST_SECRET}", "s3cr3t", "upstream_secret: shorter than 32 bytes after expansion (is the environment variable PG_TEST_SECRET set to the whole secret?)"},
		{"literal short", "short", "", "upstream_secret: shorter than 32 bytes after expansion"},
		{"two variables", "{env.PG_TEST_SECRET}{env.PG_TEST_UNSET}", "", "upstream_secret is empty: is the environment variable PG_TEST_SECRET, PG_TEST_UNSET set?"},
		{"file missing", "{file./nonexistent/partnergate-secret}", "", "upstream_secret is empty after expansion"},
		{"literal", long, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("PG_TEST_SECRET", tt.env)
			err := checkUpstreamSecret(expandSecret(tt.configured))
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("checkUpstreamSecret(%q) = %v, want nil", tt.configured, err)
			case tt.want != "" && (err == nil || err.Error() != tt.want):
				t.Errorf("checkUpstreamSecret(%q) = %v, want %q", tt.configured, err, tt.want)
			case err != nil && tt.env != "" && strings.Contains(err.Error(), tt.env):
				t.Errorf("checkUpstreamSecret(%q) = %v: the error carries the secret", tt.configured, err)
			}
		})
	}
}
