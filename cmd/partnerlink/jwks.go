package main

import (
	"crypto"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/partnergate/partnergate/partnerkit"
)

// cmdJWKS edits a published key set for a rotation: add the new key beside the old one,
// switch the signer to it, and remove the old key once no token signed with it is alive.
func cmdJWKS(args []string, e env) error {
	if len(args) == 0 {
		return usagef("jwks needs a subcommand: add or remove")
	}
	switch args[0] {
	case "add":
		return cmdJWKSAdd(args[1:], e)
	case "remove":
		return cmdJWKSRemove(args[1:], e)
	}
	return usagef("jwks: unknown subcommand %q: use add or remove", args[0])
}

func cmdJWKSAdd(args []string, e env) error {
	fs := newFlags("jwks add", e)
	file := fs.String("jwks", "", "the jwks.json to edit (created when missing)")
	keyFile := fs.String("key", "", "a private key PEM: only its public half is added")
	pubFile := fs.String("pub", "", "a public key PEM")
	kid := fs.String("kid", "", "the new key's kid (default: its RFC 7638 thumbprint)")
	alg := fs.String("alg", "", "the algorithm the key signs with (default: RS256 for RSA, ES256 for EC)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) > 0:
		return usagef("unexpected argument %q", pos[0])
	case *file == "":
		return usagef("--jwks FILE is required")
	case (*keyFile == "") == (*pubFile == ""):
		return usagef("give exactly one of --key and --pub")
	}
	var pub crypto.PublicKey
	if *keyFile != "" {
		data, err := os.ReadFile(*keyFile)
		if err != nil {
			return err
		}
		key, err := partnerkit.ParsePrivateKey(data)
		if err != nil {
			return fmt.Errorf("%s: %v", *keyFile, err)
		}
		pub = key.Public()
	} else {
		data, err := os.ReadFile(*pubFile)
		if err != nil {
			return err
		}
		if pub, err = partnerkit.ParsePublicKey(data); err != nil {
			return fmt.Errorf("%s: %v", *pubFile, err)
		}
	}
	if *alg == "" {
		*alg = partnerkit.DefaultAlgorithm(pub)
	}
	if *kid == "" {
		if *kid, err = partnerkit.Thumbprint(pub); err != nil {
			return err
		}
	}
	entry := partnerkit.PublicKey{KeyID: *kid, Algorithm: *alg, Key: pub}
	var out []byte
	old, err := os.ReadFile(*file)
	switch {
	case errors.Is(err, os.ErrNotExist):
		out, err = partnerkit.MarshalJWKS(entry)
	case err != nil:
		return err
	default:
		keys, perr := partnerkit.ParseJWKS(old)
		if perr != nil {
			return fmt.Errorf("%s: %v", *file, perr)
		}
		if k, dup := partnerkit.FindKey(keys, pub); dup {
			return fmt.Errorf("%s already holds this key, as kid %q", *file, k.KeyID)
		}
		out, err = partnerkit.AddKey(old, entry)
	}
	if err != nil {
		return err
	}
	if err := partnerkit.WriteJWKS(*file, out); err != nil {
		return err
	}
	return printKids(e, *file, out, fmt.Sprintf("added kid %s (%s)", *kid, *alg))
}

func cmdJWKSRemove(args []string, e env) error {
	fs := newFlags("jwks remove", e)
	file := fs.String("jwks", "", "the jwks.json to edit")
	kid := fs.String("kid", "", "the kid of the key to remove")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) > 0:
		return usagef("unexpected argument %q", pos[0])
	case *file == "" || *kid == "":
		return usagef("--jwks FILE and --kid K are required")
	}
	old, err := os.ReadFile(*file)
	if err != nil {
		return err
	}
	out, err := partnerkit.RemoveKey(old, *kid)
	if err != nil {
		return fmt.Errorf("%s: %v", *file, err)
	}
	if err := partnerkit.WriteJWKS(*file, out); err != nil {
		return err
	}
	return printKids(e, *file, out, "removed kid "+*kid)
}

func printKids(e env, file string, jwks []byte, what string) error {
	keys, err := partnerkit.ParseJWKS(jwks)
	if err != nil {
		return err
	}
	var kids []string
	for _, k := range keys {
		kids = append(kids, k.KeyID)
	}
	fmt.Fprintf(e.stdout, "%s: %s; keys now: %s\n", file, what, strings.Join(kids, ", "))
	return nil
}
