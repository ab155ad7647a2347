package gateway

import (
	"testing"

	"github.com/partnergate/partnergate/internal/harness"
)

// TestMain removes the caddy the harness builds for these tests once they have run.
func TestMain(m *testing.M) { harness.Main(m) }
