package linktoken

// The verification path against the floor it stands on (issue 7, goal 1): BenchmarkVerify
// runs the whole Verify (framing, header, key lookup, signature, claims, payload rules) on
// a realistic main-client token; BenchmarkRawSignature runs only crypto/rsa or
// crypto/ecdsa on the same signing input, SHA-256 included. Compare them with
//
//	go test -run '^$' -bench . -benchmem -cpu 1 -count 6 ./linktoken/ > /tmp/bench.txt
//	benchstat -col .name -row /alg -filter '.name:(Verify OR RawSignature)' /tmp/bench.txt
//
// docs/performance.md ("Verification path") has the figures.

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"math/big"
	"strings"
	"testing"

	"github.com/partnergate/partnergate/internal/benchcpu"
)

var benchAlgs = []string{RS256, PS256, ES256}

// benchToken is a main-client link with every field of the payload filled in.
func benchToken(b *testing.B, alg string) (token []byte, set *KeySet) {
	b.Helper()
	return []byte(tokenOf(b, alg, kidFor(alg), mainClaims())), standardSet(b)
}

func BenchmarkVerify(b *testing.B) {
	for _, alg := range benchAlgs {
		b.Run("alg="+alg, func(b *testing.B) {
			token, set := benchToken(b, alg)
			v := newTestVerifier(b, Rules{})
			ctx := context.Background()
			if _, err := v.Verify(ctx, token, set); err != nil {
				b.Fatalf("Verify() = %v", err)
			}
			b.ReportAllocs()
			cpu := benchcpu.Start(b)
			for b.Loop() {
				if _, err := v.Verify(ctx, token, set); err != nil {
					b.Fatal(err)
				}
			}
			cpu.Report(b)
		})
	}
}

// BenchmarkRawSignature is the floor: the signature check alone, on the same signing
// input and signature as BenchmarkVerify, with the SHA-256 of the input in the loop.
func BenchmarkRawSignature(b *testing.B) {
	for _, alg := range benchAlgs {
		b.Run("alg="+alg, func(b *testing.B) {
			token, _ := benchToken(b, alg)
			dot := strings.LastIndexByte(string(token), '.')
			input := token[:dot]
			sig, err := base64.RawURLEncoding.DecodeString(string(token[dot+1:]))
			if err != nil {
				b.Fatal(err)
			}
			k := keys(b)
			var verify func() bool
			switch alg {
			case RS256:
				verify = func() bool {
					h := sha256.Sum256(input)
					return rsa.VerifyPKCS1v15(&k.RSA.PublicKey, crypto.SHA256, h[:], sig) == nil
				}
			case PS256:
				verify = func() bool {
					h := sha256.Sum256(input)
					return rsa.VerifyPSS(&k.RSA.PublicKey, crypto.SHA256, h[:], sig, nil) == nil
				}
			case ES256:
				r, s := new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])
				pub := &k.EC.PublicKey
				verify = func() bool {
					h := sha256.Sum256(input)
					return ecdsa.Verify(pub, h[:], r, s)
				}
			}
			if !verify() {
				b.Fatal("the raw check refuses the token's signature")
			}
			b.ReportAllocs()
			cpu := benchcpu.Start(b)
			for b.Loop() {
				if !verify() {
					b.Fatal("refused")
				}
			}
			cpu.Report(b)
		})
	}
}

// BenchmarkVerifyRejects measures the cheap refusals, which an attacker can send at full
// rate: they must cost far less than a signature check.
func BenchmarkVerifyRejects(b *testing.B) {
	token, set := benchToken(b, RS256)
	parts := strings.Split(string(token), ".")
	for _, tc := range []struct{ name, token string }{
		{"malformed", "not-a-token"},
		{"alg none", b64u([]byte(`{"alg":"none","typ":"JWT","kid":"rsa-1"}`)) + "." + parts[1] + ".AAAA"},
		{"unknown kid", b64u([]byte(`{"alg":"RS256","typ":"JWT","kid":"nope"}`)) + "." + parts[1] + "." + parts[2]},
	} {
		b.Run(tc.name, func(b *testing.B) {
			v := newTestVerifier(b, Rules{})
			tok := []byte(tc.token)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := v.Verify(context.Background(), tok, set); err == nil {
					b.Fatal("accepted")
				}
			}
		})
	}
}
