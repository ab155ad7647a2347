package jwtpartner

import (
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"github.com/partnergate/partnergate/problem"
)

// A partner's origins (Partner.Origins) defend /payload against login CSRF: a person who
// holds an unspent token for their own account (lifted from the hidden field of the
// partner's form) puts it in a form on a page of theirs; a victim's browser that posts it
// is signed in as that person, and what the victim enters goes to the person's account. A
// browser names the page that posts a form in the Origin header, which no page can set;
// with the list, a form from any other page is refused before its token is read, so the
// token stays unspent and the victim's browser is not signed in. A form without Origin is
// refused too (issue 34): every browser names the page of a form post, so a request
// without one is no browser's form, and letting it pass would let anyone who holds a
// token turn it into a login page from a server and send that page's link on. /url is
// not checked: its answer is a login URL that the caller must open itself, which a page
// of another site cannot read; the app service asks a browser that has never signed in
// to the link's account before it signs it in (docs/appservice.md).

// nullOrigin is the Origin a browser sends for a page that has no origin to name: a local
// file, a sandboxed frame, a redirect across sites, or a page whose referrer policy is
// no-referrer (or same-origin, for a form to another site).
const nullOrigin = "null"

// checkOrigins checks a partner's origins: each is "null" or an origin written as a browser
// serializes it, so that the request path compares the Origin header byte for byte.
func checkOrigins(origins []string) error {
	for _, o := range origins {
		if o == nullOrigin {
			continue
		}
		canonical, err := serializeOrigin(o)
		if err != nil {
			return fmt.Errorf("origins %q: %v", o, err)
		}
		if canonical != o {
			return fmt.Errorf("origins %q: write the origin as a browser sends it in the Origin header: %s", o, canonical)
		}
	}
	return nil
}

// wantOrigin says what an origin is.
const wantOrigin = "want scheme://host or scheme://host:port with scheme http or https, such as https://ehr.acme.example, or null"

// serializeOrigin returns the origin of o as a browser serializes it in the Origin header
// (RFC 6454 §6.2, the WHATWG URL standard): lower-case scheme and host, the port only when
// it is not the scheme's default, no path. It refuses what no browser sends: another
// scheme, user information, a path, query or fragment, a wildcard, a host that is not in
// its ASCII form.
func serializeOrigin(o string) (string, error) {
	if strings.Contains(o, "*") {
		return "", errors.New("no wildcards: list each origin; a wildcard would trust every subdomain, also one the partner does not control")
	}
	u, err := url.Parse(o)
	if err != nil || u.Opaque != "" || u.Host == "" {
		return "", errors.New(wantOrigin)
	}
	scheme := strings.ToLower(u.Scheme)
	defaultPort := map[string]string{"http": "80", "https": "443"}[scheme]
	if defaultPort == "" {
		return "", errors.New(wantOrigin)
	}
	if u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return "", errors.New("an origin has no user, path, query or fragment: " + wantOrigin)
	}
	host := strings.ToLower(u.Hostname())
	if ip, err := netip.ParseAddr(host); err == nil && ip.Is6() {
		host = "[" + ip.String() + "]"
	} else if !validHostname(host) {
		return "", fmt.Errorf("host %q: want a host name of letters, digits, '-' and '.' (an internationalized name in its ASCII form, xn--…) or an IP address", u.Hostname())
	}
	out := scheme + "://" + host
	if port := u.Port(); port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return "", fmt.Errorf("port %q: want 1 to 65535", port)
		}
		if p := strconv.Itoa(n); p != defaultPort {
			out += ":" + p
		}
	}
	return out, nil
}

// validHostname reports whether h is a lower-case ASCII host name (or IPv4 address) as a
// browser writes it.
func validHostname(h string) bool {
	if h == "" || strings.HasPrefix(h, ".") || strings.HasSuffix(h, ".") || strings.Contains(h, "..") {
		return false
	}
	for _, c := range []byte(h) {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_') {
			return false
		}
	}
	return true
}

// originSet is a partner's origins as the request path looks them up, and the
// frame-ancestors sources of its /payload refusal page.
type originSet struct {
	allowed   map[string]struct{} // nil: any origin (no origins configured)
	ancestors []string            // the origins but null; nil: no page may frame the refusal
}

// newOriginSet makes the set of checked origins.
func newOriginSet(origins []string) originSet {
	if len(origins) == 0 {
		return originSet{}
	}
	s := originSet{allowed: make(map[string]struct{}, len(origins))}
	for _, o := range origins {
		s.allowed[o] = struct{}{}
		if o != nullOrigin {
			s.ancestors = append(s.ancestors, o)
		}
	}
	return s
}

// maxLoggedOrigin bounds the refused Origin in the log line: it is the client's text.
const maxLoggedOrigin = 200

// checkOrigin refuses a /payload request whose Origin headers are not all listed, or that
// has none. Browsers send Origin on every form post (null where they may not name the
// page), so a request without it is a program's, which has /url for its links.
func (s *originSet) checkOrigin(r *http.Request) *rejection {
	if s.allowed == nil {
		return nil
	}
	origins := r.Header.Values("Origin")
	if len(origins) == 0 {
		return &rejection{code: problem.CodeOriginNotAllowed,
			detail: "this partner's link forms are accepted only from the partner's own pages, and this form did not say which page sent it (a browser always does); open the link again from the partner's application",
			err:    errors.New("form without Origin; the partner's origins need one")}
	}
	for _, o := range origins {
		if _, ok := s.allowed[o]; !ok {
			if len(o) > maxLoggedOrigin {
				o = o[:maxLoggedOrigin] + "…"
			}
			return &rejection{code: problem.CodeOriginNotAllowed,
				detail: "this partner's link forms are accepted only from the partner's own pages, and the page that sent this form is not one of them; open the link again from the partner's application",
				err:    fmt.Errorf("form origin %q is not on the partner's origins", o)}
		}
	}
	return nil
}
