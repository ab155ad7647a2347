package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/partnergate/partnergate/linkspec"
	"github.com/partnergate/partnergate/partnerkit"
)

// tokenFlags are the flags of every command that signs: the key, its kid and alg, the
// agreed iss and aud, the lifetime and the payload.
type tokenFlags struct {
	key      *string
	jwks     *string
	kid      *string
	alg      *string
	iss      *string
	aud      *string
	lifetime *time.Duration
	payload  *string
	fields   map[string]*fieldFlag // by flag name
}

// fieldFlag is one payload field given on the command line.
type fieldFlag struct {
	header string // linkspec.Field.Header
	value  string
	set    bool
}

func (f *fieldFlag) String() string { return f.value }

func (f *fieldFlag) Set(s string) error { f.value, f.set = s, true; return nil }

func addTokenFlags(fs *flag.FlagSet) *tokenFlags {
	t := &tokenFlags{
		key:      fs.String("key", "", "the private key PEM (PKCS#8, PKCS#1 or SEC 1)"),
		jwks:     fs.String("jwks", "", "a jwks.json holding the key, to take --kid and --alg from (default: jwks.json beside --key, when there)"),
		kid:      fs.String("kid", "", "the key's kid in the published jwks.json"),
		alg:      fs.String("alg", "", "RS256, PS256 or ES256: the key's alg in the published jwks.json"),
		iss:      fs.String("iss", "", "the issuer agreed with the service"),
		aud:      fs.String("aud", "", "the audience agreed with the service"),
		lifetime: fs.Duration("lifetime", partnerkit.DefaultLifetime, "time from nbf to exp, at most 5m"),
		payload:  fs.String("payload", "", "a payload JSON file (main client or Go), - for standard input; field flags override its fields"),
		fields:   map[string]*fieldFlag{},
	}
	for _, f := range linkspec.Fields {
		ff := &fieldFlag{header: f.Header}
		name := strings.ToLower(f.Header)
		t.fields[name] = ff
		fs.Var(ff, name, "payload field "+f.Path+", a `string`")
	}
	return t
}

// signer loads the key and fills kid and alg from the key set that publishes it when they
// are not given: the published alg is the one the gateway enforces, so taking it from there
// avoids the commonest mismatch (an RSA key published for PS256, signed with RS256).
func (t *tokenFlags) signer(e env) (*partnerkit.Signer, error) {
	if *t.key == "" {
		return nil, usagef("--key PRIVATE.pem is required")
	}
	if *t.iss == "" || *t.aud == "" {
		return nil, usagef("--iss and --aud are required: use the values agreed with the service")
	}
	if *t.lifetime > partnerkit.MaxLifetime || *t.lifetime < time.Second {
		return nil, usagef("--lifetime %v: use 1s..%v (docs/interface.md A-AUTH-6)", *t.lifetime, partnerkit.MaxLifetime)
	}
	data, err := os.ReadFile(*t.key)
	if err != nil {
		return nil, err
	}
	key, err := partnerkit.ParsePrivateKey(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", *t.key, err)
	}
	kid, alg := *t.kid, *t.alg
	if kid == "" || alg == "" {
		jwksPath, explicit := *t.jwks, *t.jwks != ""
		if !explicit {
			jwksPath = filepath.Join(filepath.Dir(*t.key), "jwks.json")
		}
		if doc, err := os.ReadFile(jwksPath); err == nil {
			keys, err := partnerkit.ParseJWKS(doc)
			if err != nil {
				return nil, fmt.Errorf("%s: %v", jwksPath, err)
			}
			if k, ok := partnerkit.FindKey(keys, key.Public()); ok {
				if kid == "" {
					kid = k.KeyID
				}
				if alg == "" {
					alg = k.Algorithm
				} else if k.Algorithm != "" && k.Algorithm != alg {
					return nil, fmt.Errorf("--alg %s, but %s publishes the key for %s: the gateway would reject the token", alg, jwksPath, k.Algorithm)
				}
			} else if explicit {
				return nil, fmt.Errorf("%s does not hold the public half of %s", jwksPath, *t.key)
			}
		} else if explicit {
			return nil, err
		}
	}
	if kid == "" {
		return nil, usagef("--kid is required (or --jwks with the published key set)")
	}
	return partnerkit.NewSigner(key, kid, alg, *t.iss, *t.aud, partnerkit.WithClock(e.now))
}

// readPayload builds the payload from --payload and the field flags, which win.
func (t *tokenFlags) readPayload(fs *flag.FlagSet, e env) (*partnerkit.Payload, error) {
	p := &partnerkit.Payload{}
	if *t.payload != "" {
		var data []byte
		var err error
		if *t.payload == "-" {
			data, err = io.ReadAll(io.LimitReader(e.stdin, 1<<20))
		} else {
			data, err = os.ReadFile(*t.payload)
		}
		if err != nil {
			return nil, err
		}
		if p, err = partnerkit.ParsePayload(data); err != nil {
			return nil, fmt.Errorf("%s: %v", *t.payload, err)
		}
	}
	given := *t.payload != ""
	fs.Visit(func(f *flag.Flag) {
		if ff, ok := t.fields[f.Name]; ok {
			p.SetField(ff.header, ff.value)
			given = true
		}
	})
	if !given {
		return nil, usagef("no payload: give --payload FILE.json or field flags (--employee-id, --contact-firstname, ...)")
	}
	return p, nil
}

// mint signs the payload the flags describe; payload errors are printed field by field.
func (t *tokenFlags) mint(fs *flag.FlagSet, e env) (*partnerkit.Signer, *partnerkit.Payload, string, error) {
	s, err := t.signer(e)
	if err != nil {
		return nil, nil, "", err
	}
	p, err := t.readPayload(fs, e)
	if err != nil {
		return nil, nil, "", err
	}
	token, err := s.Sign(p, partnerkit.WithLifetime(*t.lifetime))
	var pe *linkspec.Error
	if errors.As(err, &pe) {
		fmt.Fprintln(e.stderr, "the payload does not match its table in docs/interface.md (A-PAY-MAIN, A-PAY-GO):")
		for _, f := range pe.Fields {
			fmt.Fprintf(e.stderr, "  %s: %s\n", f.Field, f.Reason)
		}
		return nil, nil, "", exitError(exitFailed)
	}
	return s, p, token, err
}

// cmdMint prints a token for the payload.
func cmdMint(args []string, e env) error {
	fs := newFlags("mint", e)
	t := addTokenFlags(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	_, _, token, err := t.mint(fs, e)
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, token)
	return nil
}
