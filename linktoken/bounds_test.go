package linktoken

import (
	"slices"
	"testing"
	"time"
)

func TestAlgorithms(t *testing.T) {
	if got, want := Algorithms(), []string{RS256, PS256, ES256}; !slices.Equal(got, want) {
		t.Errorf("Algorithms() = %q, want %q", got, want)
	}
	Algorithms()[0] = "HS256" // a caller's copy: the accepted set does not change
	for _, tt := range []struct {
		alg  string
		want bool
	}{{"RS256", true}, {"PS256", true}, {"ES256", true}, {"HS256", false}, {"none", false}, {"rs256", false}, {"", false}} {
		if got := AlgorithmAllowed(tt.alg); got != tt.want {
			t.Errorf("AlgorithmAllowed(%q) = %v, want %v", tt.alg, got, tt.want)
		}
	}
	if got, want := AlgorithmList("or"), "RS256, PS256 or ES256"; got != want {
		t.Errorf("AlgorithmList(%q) = %q, want %q", "or", got, want)
	}
}

// TestBoundsAreNewVerifiers: the exported bounds are the ones NewVerifier enforces, so a
// configuration layer that checks against them refuses exactly what the verifier would.
func TestBoundsAreNewVerifiers(t *testing.T) {
	r := Rules{Issuer: "i", Audience: "a"}
	for _, tt := range []struct {
		name    string
		mod     func(*Rules)
		wantErr bool
	}{
		{"lifetime at the bound", func(r *Rules) { r.MaxLifetime = MaxLifetime }, false},
		{"lifetime over the bound", func(r *Rules) { r.MaxLifetime = MaxLifetime + time.Second }, true},
		{"leeway at the bound", func(r *Rules) { r.Leeway = MaxLeeway }, false},
		{"leeway over the bound", func(r *Rules) { r.Leeway = MaxLeeway + time.Second }, true},
		{"every algorithm", func(r *Rules) { r.Algorithms = Algorithms() }, false},
		{"HS256", func(r *Rules) { r.Algorithms = []string{"HS256"} }, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rr := r
			tt.mod(&rr)
			if _, err := NewVerifier(rr); (err != nil) != tt.wantErr {
				t.Errorf("NewVerifier(%s) error = %v, want error %v", tt.name, err, tt.wantErr)
			}
		})
	}
}
