package jwtpartner

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/partnergate/partnergate/linkspec"
)

// placeholderPrefix starts every placeholder the handler sets.
const placeholderPrefix = "http.jwt_partner."

// headerNames are the canonical names of the forwarded headers under the handler's prefix,
// made once at provisioning so that no request canonicalizes or concatenates a name.
type headerNames struct {
	name, endpoint, kind, issuer, keyID, requestID, claims, assertion string
	fields                                                            [len(linkspec.Fields)]string
}

func newHeaderNames(prefix string) headerNames {
	c := func(suffix string) string { return http.CanonicalHeaderKey(prefix + suffix) }
	n := headerNames{
		name:      c(linkspec.HeaderName),
		endpoint:  c(linkspec.HeaderEndpoint),
		kind:      c(linkspec.HeaderKind),
		issuer:    c(linkspec.HeaderIssuer),
		keyID:     c(linkspec.HeaderKeyID),
		requestID: c(linkspec.HeaderRequestID),
		claims:    c(linkspec.HeaderClaims),
		assertion: c(linkspec.HeaderAssertion),
	}
	for i, f := range linkspec.Fields {
		n.fields[i] = c(f.Header)
	}
	return n
}

// fieldHeadersAll is the field_headers entry that forwards every payload field.
const fieldHeadersAll = "all"

// fieldPaths lists the payload fields' JSON paths, for the error that names a path
// field_headers does not know.
var fieldPaths = func() string {
	paths := make([]string, len(linkspec.Fields))
	for i, f := range linkspec.Fields {
		paths[i] = f.Path
	}
	return strings.Join(paths, ", ")
}()

// fieldHeaderMask resolves field_headers into the payload fields forwarded as headers of
// their own, indexed like linkspec.Fields, so that a request looks each field up once in
// an array instead of matching paths. No entry means none: the claims header carries every
// field, and each header more is paid for again in reverse_proxy (docs/performance.md).
// The Caddyfile and Provision both call it, so a bad value meets the same words in both.
func fieldHeaderMask(paths []string) (mask [len(linkspec.Fields)]bool, err error) {
	for _, p := range paths {
		if p == fieldHeadersAll {
			if len(paths) > 1 {
				return mask, fmt.Errorf("field_headers %s: all stands alone; give all, or the paths without it", strings.Join(paths, " "))
			}
			for i := range mask {
				mask[i] = true
			}
			return mask, nil
		}
		i := slices.IndexFunc(linkspec.Fields[:], func(f linkspec.Field) bool { return f.Path == p })
		if i < 0 {
			return mask, fmt.Errorf("field_headers %q: not a payload field; want all, or the JSON paths of payload fields: %s", p, fieldPaths)
		}
		mask[i] = true
	}
	return mask, nil
}

// bodyHeaders describe the client's body, which is not forwarded.
var bodyHeaders = map[string]bool{
	"Content-Type": true, "Content-Length": true, "Content-Encoding": true,
	"Transfer-Encoding": true, "Expect": true, "Trailer": true,
}

// forward makes the verified request the upstream sees: the client's headers in our
// namespace deleted, the verified identity set, the token removed. It is on every accepted
// request's path, so it builds the new header map in one pass, sized once, with every
// percent-encoded value in one allocation.
func (h *Handler) forward(r *http.Request, rq *request) {
	tok := rq.token
	names := &h.names
	h.reportDropped(rq)

	// The verified values, raw, with their header names: the fixed headers, then every
	// non-empty payload field that field_headers asks for.
	const most = 6 + len(linkspec.Fields)
	var keys, vals [most]string
	n := 0
	add := func(k, v string) {
		keys[n], vals[n] = k, v
		n++
	}
	add(names.name, rq.partner)
	add(names.endpoint, rq.endpoint)
	add(names.kind, string(tok.Kind))
	add(names.issuer, tok.Issuer)
	add(names.keyID, tok.KeyID)
	add(names.requestID, rq.requestID)
	for i, v := range tok.Payload.Values() {
		if h.fieldHeaders[i] && v != "" {
			add(names.fields[i], v)
		}
	}

	// Percent-encode the values that need it into one buffer.
	var lens [most]int
	size := 0
	for i, v := range vals[:n] {
		if lens[i] = linkspec.EncodedLen(v); lens[i] != len(v) {
			size += lens[i]
		}
	}
	if size > 0 {
		buf := make([]byte, 0, size)
		for i, v := range vals[:n] {
			if lens[i] != len(v) {
				buf = linkspec.AppendHeaderValue(buf, v)
			}
		}
		all, off := string(buf), 0
		for i, v := range vals[:n] {
			if lens[i] != len(v) {
				vals[i], off = all[off:off+lens[i]], off+lens[i]
			}
		}
	}

	// Delete first, set after: a client-supplied X-Partner-* header must never survive
	// next to (or instead of) a verified one (the lesson of Caddy's forward_auth
	// header-injection fix, GHSA-7r4p-vjf4-gxv4). The headers that described the body go
	// with the body. Every client header in the namespace goes, a field's header included
	// whether field_headers forwards that field or not. n counts only the headers set (the
	// fixed ones and the enabled fields that have a value), so the map and the values below
	// are sized for what field_headers asks, no more.
	hdr := make(http.Header, len(r.Header)+n+2)
	for k, v := range r.Header {
		if !inNamespace(k, h.prefix) && !bodyHeaders[k] {
			hdr[k] = v
		}
	}
	// A client's Connection header names hop-by-hop headers that the proxy deletes before
	// the upstream sees the request; naming ours there would strip the verified identity.
	stripConnectionTokens(hdr, h.prefix)

	one := make([]string, n+2) // backing array of every header's single value
	for i := range n {
		one[i] = vals[i]
		hdr[keys[i]] = one[i : i+1 : i+1]
	}
	// The claims are base64url already: header-safe as they are.
	one[n] = tok.Claims
	hdr[names.claims] = one[n : n+1 : n+1]
	if h.secret != nil {
		one[n+1] = linkspec.SignAssertion(h.secret, h.now(), linkspec.Forwarded{
			Partner:  rq.partner,
			Endpoint: rq.endpoint,
			Kind:     string(tok.Kind),
			Issuer:   tok.Issuer,
			KeyID:    tok.KeyID,
			Claims:   tok.Claims,

			RequestID: rq.requestID,
		})
		hdr[names.assertion] = one[n+1 : n+2 : n+2]
	}
	r.Header = hdr

	// The token must not travel further: the upstream gets a POST to the same path with an
	// empty body and no query string (nothing the client put in the URL reaches the app
	// service unverified).
	r.URL.RawQuery = ""
	r.URL.ForceQuery = false
	r.Body = http.NoBody
	r.ContentLength = 0
	r.TransferEncoding = nil
	r.Trailer = nil
	rq.forwarded = true
}

// placeholder resolves {http.jwt_partner.*} from what the request has learned (a
// caddy.ReplacerFunc). Lazily: a request pays for no placeholder it does not use.
func (rq *request) placeholder(key string) (any, bool) {
	name, ok := strings.CutPrefix(key, placeholderPrefix)
	if !ok {
		return nil, false
	}
	var v string
	switch name {
	case "request_id":
		v = rq.requestID
	case "partner":
		v = rq.partner
	case "endpoint":
		v = rq.endpoint
	case "error_code":
		v = string(rq.errorCode)
	default:
		if !rq.forwarded {
			return nil, false
		}
		v = rq.verified(name)
	}
	if v == "" {
		return nil, false
	}
	return v, true
}

// verified returns the value of a placeholder set on success: the token's values, raw.
func (rq *request) verified(name string) string {
	tok := rq.token
	switch name {
	case "kind":
		return string(tok.Kind)
	case "issuer":
		return tok.Issuer
	case "kid":
		return tok.KeyID
	case "alg":
		return tok.Alg
	case "claims":
		return tok.Claims
	}
	for i, f := range linkspec.Fields {
		if f.Path == name {
			return tok.Payload.Values()[i]
		}
	}
	return ""
}

// inNamespace reports whether the header name starts with prefix, ignoring case and reading
// '_' as '-': many upstream stacks (CGI, WSGI, PHP, some proxies) fold X-Partner_Name into
// the same variable as X-Partner-Name, so an underscore variant must not slip past. Header
// names are ASCII tokens (net/http refuses others), so ASCII folding is complete.
func inNamespace(name, prefix string) bool {
	if len(name) < len(prefix) {
		return false
	}
	for i := 0; i < len(prefix); i++ {
		if foldHeaderByte(name[i]) != foldHeaderByte(prefix[i]) {
			return false
		}
	}
	return true
}

func foldHeaderByte(c byte) byte {
	switch {
	case c == '_':
		return '-'
	case 'A' <= c && c <= 'Z':
		return c + 'a' - 'A'
	}
	return c
}

// stripConnectionTokens removes from the Connection header every field name in the
// prefix's namespace, and the Connection header itself when nothing else is left.
func stripConnectionTokens(hdr http.Header, prefix string) {
	vals := hdr.Values("Connection")
	if len(vals) == 0 {
		return
	}
	var keep []string
	for _, v := range vals {
		for _, tok := range strings.Split(v, ",") {
			tok = strings.TrimSpace(tok)
			if tok == "" || inNamespace(tok, prefix) {
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
