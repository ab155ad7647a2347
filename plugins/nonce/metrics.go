package nonce

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// registerOrExisting registers c in reg and returns it, or returns the collector of the
// same description already there, so that every store (memory and redis) can register its
// metrics again on a reload or from a second instance in the same config.
func registerOrExisting[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
		// a conflicting collector of the same name: keep ours unregistered rather than
		// fail the config; the claims still work
	}
	return c
}
