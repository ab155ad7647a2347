package jwtpartner

import (
	"net/http"
	"strings"

	"github.com/caddyserver/caddy/v2"

	"github.com/partnergate/partnergate/linkspec"
)

// placeholderPrefix starts every placeholder the handler sets.
const placeholderPrefix = "http.jwt_partner."

// fieldPaths maps a header suffix of linkspec.Fields to the field's JSON path, the name of
// its placeholder.
var fieldPaths = func() map[string]string {
	m := make(map[string]string, len(linkspec.Fields))
	for _, f := range linkspec.Fields {
		m[f.Header] = f.Path
	}
	return m
}()

// forward makes the verified request the upstream sees: the client's headers in our
// namespace deleted, the verified identity set, the token removed.
func (h *Handler) forward(r *http.Request, rq *request, repl *caddy.Replacer) {
	tok := rq.token

	// Delete first, set after: a client-supplied X-Partner-* header must never survive
	// next to (or instead of) a verified one (the lesson of Caddy's forward_auth
	// header-injection fix, GHSA-7r4p-vjf4-gxv4).
	stripPrefixed(r.Header, h.prefix)
	// A client's Connection header names hop-by-hop headers that the proxy deletes before
	// the upstream sees the request; naming ours there would strip the verified identity.
	stripConnectionTokens(r.Header, h.prefix)

	set := func(suffix, placeholder, value string) {
		r.Header.Set(h.prefix+suffix, linkspec.EncodeHeaderValue(value))
		repl.Set(placeholderPrefix+placeholder, value)
	}
	set(linkspec.HeaderName, "partner", rq.partner)
	set(linkspec.HeaderEndpoint, "endpoint", rq.endpoint)
	set(linkspec.HeaderKind, "kind", string(tok.Kind))
	set(linkspec.HeaderIssuer, "issuer", tok.Issuer)
	set(linkspec.HeaderKeyID, "kid", tok.KeyID)
	set(linkspec.HeaderRequestID, "request_id", rq.requestID)
	repl.Set(placeholderPrefix+"alg", tok.Alg)
	tok.Payload.EachField(func(header, value string) {
		set(header, fieldPaths[header], value)
	})
	// The claims are base64url already: header-safe as they are.
	r.Header.Set(h.prefix+linkspec.HeaderClaims, tok.Claims)
	repl.Set(placeholderPrefix+"claims", tok.Claims)

	if h.secret != nil {
		r.Header.Set(h.prefix+linkspec.HeaderAssertion, linkspec.SignAssertion(h.secret, h.now(), linkspec.Forwarded{
			Partner:  rq.partner,
			Endpoint: rq.endpoint,
			Kind:     string(tok.Kind),
			Issuer:   tok.Issuer,
			KeyID:    tok.KeyID,
			Claims:   tok.Claims,
		}))
	}

	// The token must not travel further: the upstream gets a POST to the same path with an
	// empty body and no query string (nothing the client put in the URL reaches the app
	// service unverified). The headers that described the body go with it, and so do the
	// client's announced trailers: they would follow a body that is no longer sent.
	r.URL.RawQuery = ""
	r.URL.ForceQuery = false
	r.Body = http.NoBody
	r.ContentLength = 0
	r.TransferEncoding = nil
	r.Trailer = nil
	r.Header.Del("Content-Type")
	r.Header.Del("Content-Length")
	r.Header.Del("Content-Encoding")
	r.Header.Del("Transfer-Encoding")
	r.Header.Del("Expect")
	r.Header.Del("Trailer")
}

// stripPrefixed deletes every header whose name starts with prefix, ignoring case and
// reading '_' as '-': many upstream stacks (CGI, WSGI, PHP, some proxies) fold
// X-Partner_Name into the same variable as X-Partner-Name, so an underscore variant must
// not slip past.
func stripPrefixed(hdr http.Header, prefix string) {
	p := normalizeHeaderName(prefix)
	for k := range hdr {
		if len(k) >= len(p) && normalizeHeaderName(k[:len(p)]) == p {
			delete(hdr, k)
		}
	}
}

// stripConnectionTokens removes from the Connection header every field name in the
// prefix's namespace, and the Connection header itself when nothing else is left.
func stripConnectionTokens(hdr http.Header, prefix string) {
	vals := hdr.Values("Connection")
	if len(vals) == 0 {
		return
	}
	p := normalizeHeaderName(prefix)
	var keep []string
	for _, v := range vals {
		for _, tok := range strings.Split(v, ",") {
			tok = strings.TrimSpace(tok)
			if tok == "" || strings.HasPrefix(normalizeHeaderName(tok), p) {
				continue
			}
			keep = append(keep, tok)
		}
	}
	if len(keep) == 0 {
		hdr.Del("Connection")
		return
	}
	hdr.Set("Connection", strings.Join(keep, ", "))
}

func normalizeHeaderName(s string) string {
	return strings.ReplaceAll(strings.ToLower(s), "_", "-")
}

// validHeaderPrefix reports whether p is usable as a header name prefix: a token of
// letters, digits and '-'.
func validHeaderPrefix(p string) bool {
	if p == "" {
		return false
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}
