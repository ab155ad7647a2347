package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/partnergate/partnergate/partnerkit"
)

// cmdKeygen makes a key pair: DIR/private.pem (PKCS#8, 0600) to keep, DIR/jwks.json (0644)
// to publish.
func cmdKeygen(args []string, e env) error {
	fs := newFlags("keygen", e)
	alg := fs.String("alg", "ES256", "signature algorithm: RS256, PS256 or ES256")
	kid := fs.String("kid", "", "key id to publish the key under (default: the key's RFC 7638 thumbprint)")
	out := fs.String("out", "", "folder to write private.pem and jwks.json to (created 0700 if missing)")
	bits := fs.Int("bits", partnerkit.DefaultRSABits, "RSA modulus size in bits, 2048..8192 (RS256, PS256)")
	force := fs.Bool("force", false, "overwrite an existing private.pem and jwks.json")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) > 0:
		return usagef("unexpected argument %q", pos[0])
	case *out == "":
		return usagef("--out DIR is required")
	case !slices.Contains(partnerkit.Algorithms, *alg):
		return usagef("--alg %q: use RS256, PS256 or ES256", *alg)
	case *bits < partnerkit.MinRSABits || *bits > partnerkit.MaxRSABits:
		return usagef("--bits %d: use %d..%d", *bits, partnerkit.MinRSABits, partnerkit.MaxRSABits)
	}
	keyPath := filepath.Join(*out, "private.pem")
	jwksPath := filepath.Join(*out, "jwks.json")
	if !*force {
		// Both files are checked before either is written, so a refusal leaves nothing half done.
		for _, p := range []string{keyPath, jwksPath} {
			if _, err := os.Lstat(p); err == nil {
				return fmt.Errorf("%s exists: refusing to overwrite it (use --force, and keep the old key until its successor is published)", p)
			} else if !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
	}
	if err := os.MkdirAll(*out, 0o700); err != nil {
		return err
	}
	key, err := partnerkit.GenerateKey(*alg, *bits)
	if err != nil {
		return err
	}
	if *kid == "" {
		if *kid, err = partnerkit.Thumbprint(key.Public()); err != nil {
			return err
		}
	}
	jwks, err := partnerkit.MarshalJWKS(partnerkit.PublicKey{KeyID: *kid, Algorithm: *alg, Key: key.Public()})
	if err != nil {
		return err
	}
	if err := partnerkit.WritePrivateKey(keyPath, key, *force); err != nil {
		return err
	}
	if err := partnerkit.WriteJWKS(jwksPath, jwks); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "wrote %s (keep it secret) and %s (publish it)\nkid %s, alg %s\n", keyPath, jwksPath, *kid, *alg)
	return nil
}
