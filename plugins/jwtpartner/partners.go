package jwtpartner

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/partnergate/partnergate/linkspec"
	"github.com/partnergate/partnergate/linktoken"
)

// partnerState is a provisioned partner: its verifier and its key source.
type partnerState struct {
	name     string
	verifier *linktoken.Verifier
	keys     linktoken.KeySource
}

// provisionPartner builds the partner's rules (the handler's defaults under the partner's
// overrides) and starts its key source with ctx.
func (h *Handler) provisionPartner(ctx caddy.Context, name string, p *Partner) (*partnerState, error) {
	rules, err := h.rules(p)
	if err != nil {
		return nil, err
	}
	v, err := linktoken.NewVerifier(rules, linktoken.WithClock(h.now))
	if err != nil {
		return nil, err
	}
	keys, err := h.keySource(ctx, name, p)
	if err != nil {
		return nil, err
	}
	return &partnerState{name: name, verifier: v, keys: keys}, nil
}

// rules turns a partner's configuration into linktoken.Rules. Zero values are left for
// NewVerifier to fill with linktoken's defaults, so the defaults live in one place; a
// negative leeway (none) passes through, since linktoken reads it the same way.
func (h *Handler) rules(p *Partner) (linktoken.Rules, error) {
	if p.Issuer == "" {
		return linktoken.Rules{}, errors.New("issuer is required")
	}
	if p.Audience == "" {
		return linktoken.Rules{}, errors.New("audience is required")
	}
	r := linktoken.Rules{
		Issuer:         p.Issuer,
		Audience:       p.Audience,
		Algorithms:     p.Algorithms,
		MaxLifetime:    firstDuration(p.MaxLifetime, h.MaxLifetime),
		Leeway:         firstDuration(p.Leeway, h.Leeway),
		NonceMinLength: p.NonceMinLength,
		NonceMaxLength: p.NonceMaxLength,
	}
	for _, a := range p.Algorithms {
		switch a {
		case linktoken.RS256, linktoken.PS256, linktoken.ES256:
		default:
			// docs/interface.md A-AUTH-2, A-AUTH-3; checked here as well as in linktoken so
			// that the message names the option.
			return linktoken.Rules{}, fmt.Errorf("algorithms: %q is not allowed (want RS256, PS256 or ES256; symmetric algorithms and none are never accepted)", a)
		}
	}
	if r.MaxLifetime > linktoken.DefaultMaxLifetime {
		return linktoken.Rules{}, fmt.Errorf("max_lifetime %s: the interface allows at most %s", r.MaxLifetime, linktoken.DefaultMaxLifetime)
	}
	if r.MaxLifetime < 0 {
		return linktoken.Rules{}, errors.New("max_lifetime must not be negative")
	}
	for _, k := range p.Kinds {
		kind, ok := linkspec.ParseKind(k)
		if !ok {
			return linktoken.Rules{}, fmt.Errorf("kinds: %q is not a link kind (want main or go)", k)
		}
		r.Kinds = append(r.Kinds, kind)
	}
	return r, nil
}

// sharedIssuerAudience returns the first partner, by name, other than name whose issuer
// and audience are p's, or "". Two such partners would accept each other's tokens, each
// once (the nonce is claimed per partner), whenever they share keys too (probe finding 7);
// a configuration that asks for it is refused rather than left to the partners' keys.
func sharedIssuerAudience(partners map[string]*Partner, name string, p *Partner) string {
	var names []string
	for other, q := range partners {
		if other != name && q != nil && q.Issuer == p.Issuer && q.Audience == p.Audience {
			names = append(names, other)
		}
	}
	if len(names) == 0 {
		return ""
	}
	return slices.Min(names)
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
