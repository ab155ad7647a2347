package jwtpartner

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"time"

	"github.com/caddyserver/caddy/v2"
	"golang.org/x/time/rate"

	"github.com/partnergate/partnergate/linkspec"
	"github.com/partnergate/partnergate/linktoken"
)

// partnerState is a provisioned partner: its verifier and its key source.
type partnerState struct {
	name     string
	verifier *linktoken.Verifier
	keys     linktoken.KeySource
	dryRun   *rate.Limiter // the dry run's bucket; nil when the dry run is off
	origins  originSet     // the pages /payload forms may come from

	// unknownKids and cooldown pace the log line of a burst of key_unknown answers.
	unknownKids *unknownKids
	cooldown    time.Duration

	series partnerSeries // its metrics series on the request path
}

// provisionPartner checks the partner's options, builds its rules (the handler's defaults
// under the partner's overrides) and starts its key source with ctx.
func (h *Handler) provisionPartner(ctx caddy.Context, name string, p *Partner) (*partnerState, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	v, err := linktoken.NewVerifier(h.rules(p), linktoken.WithClock(h.now))
	if err != nil {
		return nil, err
	}
	keys, err := h.keySource(ctx, name, p)
	if err != nil {
		return nil, err
	}
	ps := &partnerState{name: name, verifier: v, keys: keys, unknownKids: new(unknownKids),
		cooldown: firstDuration(p.RefreshCooldown, caddy.Duration(linktoken.DefaultCooldown)),
		origins:  newOriginSet(p.Origins)}
	if p.DryRun != nil {
		ps.dryRun = p.DryRun.limiter()
		h.warnDryRun(name)
	}
	return ps, nil
}

// rules turns a checked partner's configuration into linktoken.Rules. Zero values are left
// for NewVerifier to fill with linktoken's defaults, so the defaults live in one place; a
// negative leeway (none) passes through, since linktoken reads it the same way.
func (h *Handler) rules(p *Partner) linktoken.Rules {
	r := linktoken.Rules{
		Issuer:         p.Issuer,
		Audience:       p.Audience,
		Algorithms:     p.Algorithms,
		MaxLifetime:    firstDuration(p.MaxLifetime, h.MaxLifetime),
		Leeway:         firstDuration(p.Leeway, h.Leeway),
		NonceMinLength: p.NonceMinLength,
		NonceMaxLength: p.NonceMaxLength,
	}
	for _, k := range p.Kinds {
		r.Kinds = append(r.Kinds, linkspec.Kind(k))
	}
	return r
}

// The rule of each partner option lives in one function below. UnmarshalCaddyfile calls it
// as it reads the option, so that the error carries the Caddyfile's file and line;
// Provision calls Partner.check, so that a JSON configuration meets the same rule with the
// same words. The bounds are linktoken's, which NewVerifier enforces again as the last line
// of defence. The duration checks return the reason only: the Caddyfile names the value as
// written, JSON as a duration.

// check checks every option of p.
func (p *Partner) check() error {
	if err := p.checkRequired(); err != nil {
		return err
	}
	if err := checkAlgorithms(p.Algorithms); err != nil {
		return err
	}
	if err := checkKinds(p.Kinds); err != nil {
		return err
	}
	if p.JWKSURL != "" {
		if err := checkJWKSURL(p.JWKSURL); err != nil {
			return err
		}
	}
	if err := checkJWKSCAFile(p); err != nil {
		return err
	}
	if err := checkMaxLifetime(p.MaxLifetime); err != nil {
		return fmt.Errorf("max_lifetime %s: %v", time.Duration(p.MaxLifetime), err)
	}
	if err := checkLeeway(p.Leeway); err != nil {
		return fmt.Errorf("leeway %s: %v", time.Duration(p.Leeway), err)
	}
	if err := checkOrigins(p.Origins); err != nil {
		return err
	}
	if p.DryRun != nil {
		if err := p.DryRun.check(); err != nil {
			return fmt.Errorf("dry_run: %v", err)
		}
	}
	return nil
}

// checkRequired checks the options every partner needs: an issuer and an audience
// (docs/interface.md A-AUTH-8, A-AUTH-9) and exactly one key source.
func (p *Partner) checkRequired() error {
	switch {
	case p.Issuer == "":
		return errors.New("issuer is required")
	case p.Audience == "":
		return errors.New("audience is required")
	case p.JWKSFile == "" && p.JWKSURL == "":
		return errors.New("jwks_file or jwks_url is required")
	case p.JWKSFile != "" && p.JWKSURL != "":
		return errors.New("jwks_file and jwks_url are exclusive: configure one")
	}
	return nil
}

// checkAlgorithms refuses an algorithm outside linktoken's set (docs/interface.md A-AUTH-2,
// A-AUTH-3).
func checkAlgorithms(algs []string) error {
	for _, a := range algs {
		if !linktoken.AlgorithmAllowed(a) {
			return fmt.Errorf("algorithm %q is not allowed (want %s; symmetric algorithms and none are never accepted)", a, linktoken.AlgorithmList("or"))
		}
	}
	return nil
}

// checkKinds refuses a name that is not a link kind.
func checkKinds(kinds []string) error {
	for _, k := range kinds {
		if _, ok := linkspec.ParseKind(k); !ok {
			return fmt.Errorf("kind %q: want %s or %s", k, linkspec.KindMain, linkspec.KindGo)
		}
	}
	return nil
}

// checkJWKSURL refuses a key set URL linktoken would not fetch.
func checkJWKSURL(u string) error {
	if err := linktoken.CheckKeySetURL(u); err != nil {
		return fmt.Errorf("jwks_url: %v", err)
	}
	return nil
}

// checkJWKSCAFile refuses a jwks_ca_file without a jwks_url: it would trust a CA for
// nothing, and most likely the key source is not the one meant.
func checkJWKSCAFile(p *Partner) error {
	if p.JWKSCAFile != "" && p.JWKSURL == "" {
		return errors.New("jwks_ca_file is for a jwks_url: configure jwks_url, or remove jwks_ca_file")
	}
	return nil
}

// checkMaxLifetime checks a max_lifetime, the handler's or a partner's; zero takes the
// default.
func checkMaxLifetime(d caddy.Duration) error {
	switch {
	case d < 0:
		return errors.New("must not be negative")
	case time.Duration(d) > linktoken.MaxLifetime:
		return fmt.Errorf("at most %s", linktoken.MaxLifetime)
	}
	return nil
}

// checkLeeway checks a leeway, the handler's or a partner's; zero takes the default and a
// negative value means none.
func checkLeeway(d caddy.Duration) error {
	if time.Duration(d) > linktoken.MaxLeeway {
		return fmt.Errorf("at most %s", linktoken.MaxLeeway)
	}
	return nil
}

var partnerNameRE = regexp.MustCompile(`^[a-z0-9_-]{1,64}$`)

// checkPartnerName checks a partner's name, which is also its metrics label.
func checkPartnerName(name string) error {
	if !partnerNameRE.MatchString(name) {
		return fmt.Errorf("partner name %q: want 1..64 characters of a-z, 0-9, '-' and '_'", name)
	}
	return nil
}

// issuerAudience is what tells partners' tokens apart. Two partners with the same one
// would accept each other's tokens, each once (the nonce is claimed per partner),
// whenever they share keys too (probe finding 7); a configuration that asks for it is
// refused rather than left to the partners' keys.
type issuerAudience struct{ issuer, audience string }

// sharedIssuerAudience returns the first two partners, by name, that share an issuer and
// audience, or "", "". One pass: a thousand partners provision in linear time.
func sharedIssuerAudience(partners map[string]*Partner) (first, second string) {
	seen := make(map[issuerAudience]string, len(partners))
	for _, name := range slices.Sorted(maps.Keys(partners)) {
		p := partners[name]
		if p == nil {
			continue
		}
		k := issuerAudience{p.Issuer, p.Audience}
		if other, ok := seen[k]; ok {
			return other, name
		}
		seen[k] = name
	}
	return "", ""
}

// sharedIssuerAudienceError says which two partners share an issuer and audience.
func sharedIssuerAudienceError(a, b string, p *Partner) string {
	return fmt.Sprintf("partners %s and %s have the same issuer %q and audience %q: a token for one would be accepted by the other; give each partner its own audience", a, b, p.Issuer, p.Audience)
}

func firstDuration(ds ...caddy.Duration) time.Duration {
	for _, d := range ds {
		if d != 0 {
			return time.Duration(d)
		}
	}
	return 0
}
