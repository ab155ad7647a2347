package linktoken

import (
	"strings"
	"time"
)

// The interface's hard bounds on Rules (docs/interface.md A-AUTH-1 to A-AUTH-3, A-AUTH-6,
// LIM-1). NewVerifier enforces them as the last line of defence; a configuration layer
// (the gateway's Caddyfile and JSON checks) uses these values rather than its own copies,
// so that both refuse the same configurations. A partner may be held to less, never to
// more.
const (
	// MaxLifetime bounds exp - nbf of every token.
	MaxLifetime = 5 * time.Minute
	// MaxLeeway bounds the clock-skew leeway: a leeway beyond the lifetime bound would
	// accept tokens the lifetime rule was meant to have expired.
	MaxLeeway = MaxLifetime
)

// maxNonceMaxLength bounds Rules.NonceMaxLength.
const maxNonceMaxLength = 4096

// algNames are the algorithms the interface accepts, in the order of Verifier.verifiers:
// the one list of them. Symmetric algorithms and "none" are never accepted.
var algNames = [numAlgs]string{RS256, PS256, ES256}

// Algorithms returns the algorithms the interface accepts: RS256, PS256 and ES256.
func Algorithms() []string { return append([]string(nil), algNames[:]...) }

// AlgorithmAllowed reports whether alg is one of Algorithms.
func AlgorithmAllowed(alg string) bool { return algIndex(alg) >= 0 }

// algIndex returns the index of an accepted algorithm, or -1: a comparison with the
// accepted names, so that an attacker's alg string ("none", "HS256", "rs256") never
// reaches a registry.
func algIndex(alg string) int {
	for i, name := range algNames {
		if alg == name {
			return i
		}
	}
	return -1
}

// AlgorithmList names Algorithms for a message: "RS256, PS256 or ES256" with conj "or".
func AlgorithmList(conj string) string {
	return strings.Join(algNames[:numAlgs-1], ", ") + " " + conj + " " + algNames[numAlgs-1]
}
