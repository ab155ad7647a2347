package partnerkit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/partnergate/partnergate/linkspec"
)

// maxResponse bounds what the client reads from the gateway: a URL or a problem document
// is far smaller, and a misbehaving server must not exhaust the partner's memory.
const maxResponse = 64 << 10

// Client sends link tokens to the gateway's two endpoints for one partner.
type Client struct {
	// Gateway is the base URL of the link endpoints ({sso_url} in docs/interface.md), for
	// example "https://sso.example.com".
	Gateway string
	// Partner is the partner's path segment agreed with the service.
	Partner string
	// Signer signs every token.
	Signer *Signer
	// HTTPClient sends the requests; nil means a client with a 30 second timeout.
	HTTPClient *http.Client
}

// Endpoint returns the address of one of the partner's endpoints: "url", "payload", or
// "check", the dry run's.
func (c *Client) Endpoint(name string) (string, error) {
	base, err := url.Parse(c.Gateway)
	if err != nil || base.Scheme == "" || base.Host == "" {
		return "", fmt.Errorf("gateway %q is not an absolute URL", c.Gateway)
	}
	if c.Partner == "" || strings.ContainsAny(c.Partner, "/?#") {
		return "", fmt.Errorf("partner name %q is not one path segment", c.Partner)
	}
	return strings.TrimSuffix(base.String(), "/") + "/partner/" + url.PathEscape(c.Partner) + "/" + name, nil
}

// Rejection is the gateway's refusal of a link (an RFC 9457 problem document): Code is the
// stable machine code to match on, Detail a sentence for a person, Fields the failing
// payload fields of a payload_invalid.
type Rejection struct {
	Status    int
	Code      string
	Title     string
	Detail    string
	Fields    []linkspec.FieldError
	RequestID string
	// RetryAfter is the gateway's Retry-After on a 503 (keys or nonce store unavailable):
	// try again, with a new token, after it. Zero when the answer had none.
	RetryAfter time.Duration
}

func (r *Rejection) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "gateway rejected the link: %s", r.Code)
	if r.Detail != "" {
		b.WriteString(": " + r.Detail)
	}
	for _, f := range r.Fields {
		fmt.Fprintf(&b, "; %s: %s", f.Field, f.Reason)
	}
	return b.String()
}

// problemDoc is the wire form of Rejection. The request id is read under both spellings Caddy
// configurations use.
type problemDoc struct {
	Type       string                `json:"type"`
	Title      string                `json:"title"`
	Status     int                   `json:"status"`
	Detail     string                `json:"detail"`
	Code       string                `json:"code"`
	Fields     []linkspec.FieldError `json:"fields"`
	RequestID  string                `json:"request_id"`
	RequestID2 string                `json:"requestId"`
}

// URL signs p and posts the token to the /url endpoint, the preferred way: the answer is the
// address to open. A refusal is a *Rejection; a network failure or an answer that is
// neither a URL nor a problem document is an ordinary error.
func (c *Client) URL(ctx context.Context, p *Payload, opts ...SignOption) (string, error) {
	if c.Signer == nil {
		return "", errors.New("client has no signer")
	}
	endpoint, err := c.Endpoint("url")
	if err != nil {
		return "", err
	}
	token, err := c.Signer.Sign(p, opts...)
	if err != nil {
		return "", err
	}
	return c.PostToken(ctx, endpoint, token)
}

// PostToken posts an already signed token to endpoint (the partner's /url address) and
// reads the answer as URL does.
func (c *Client) PostToken(ctx context.Context, endpoint, token string) (string, error) {
	resp, body, err := c.postToken(ctx, endpoint, token, "text/plain, application/json, application/problem+json")
	if err != nil {
		return "", err
	}
	mediaType, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mediaType == "application/problem+json" {
		return "", readRejection(resp, body)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return "", fmt.Errorf("gateway answered %s", resp.Status)
	}
	return readURL(mediaType, body)
}

// postToken posts token to endpoint as text/plain, as the /url endpoint and the dry run
// take it, and returns the answer with its body, at most maxResponse bytes.
func (c *Client) postToken(ctx context.Context, endpoint, token, accept string) (*http.Response, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(token))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Type", "text/plain")
	req.Header.Set("Accept", accept)
	hc := c.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("posting to the gateway: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse+1))
	if err != nil {
		return nil, nil, fmt.Errorf("reading the gateway's answer: %w", err)
	}
	if len(body) > maxResponse {
		return nil, nil, fmt.Errorf("gateway answer over %d bytes", maxResponse)
	}
	return resp, body, nil
}

// readRejection reads a problem+json answer as a *Rejection, or an error saying it is
// unreadable.
func readRejection(resp *http.Response, body []byte) error {
	var pr problemDoc
	if err := json.Unmarshal(body, &pr); err != nil {
		return fmt.Errorf("gateway answered %s with an unreadable problem document", resp.Status)
	}
	rej := &Rejection{Status: resp.StatusCode, Code: pr.Code, Title: pr.Title, Detail: pr.Detail, Fields: pr.Fields, RequestID: pr.RequestID}
	if rej.RequestID == "" {
		rej.RequestID = pr.RequestID2
	}
	if rej.Status == 0 {
		rej.Status = pr.Status
	}
	if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && secs > 0 {
		rej.RetryAfter = time.Duration(secs) * time.Second
	}
	return rej
}

// DryRun asks the gateway's dry run (POST /partner/{name}/check, on for the partner in a
// test environment) why it would accept or reject token, with its own rules, keys and
// clock, and returns its report: the report Check makes offline, with the gateway's
// request id. The token is not used up: the dry run never claims its nonce. A gateway
// that refuses the request answers a *Rejection: not_found where the partner's dry run is
// off, dry_run_rate_limited (with RetryAfter) over its rate.
func (c *Client) DryRun(ctx context.Context, token string) (*Report, error) {
	endpoint, err := c.Endpoint("check")
	if err != nil {
		return nil, err
	}
	resp, body, err := c.postToken(ctx, endpoint, token, "application/json, application/problem+json")
	if err != nil {
		return nil, err
	}
	mediaType, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch {
	case mediaType == "application/problem+json":
		return nil, readRejection(resp, body)
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("gateway answered %s", resp.Status)
	case mediaType != "application/json":
		return nil, fmt.Errorf("gateway answered the dry run with %q, not a JSON report", mediaType)
	}
	var r Report
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("reading the dry run's report: %w", err)
	}
	return &r, nil
}

// readURL takes the address from a /url answer. The interface leaves the body's shape open
// beyond "a URL": the reference app service answers text/plain; a JSON object with a "url"
// member is read too, for services customised that way (docs/interface.md SVC-6).
func readURL(mediaType string, body []byte) (string, error) {
	s := strings.TrimSpace(string(body))
	if mediaType == "application/json" || strings.HasPrefix(s, "{") {
		var v struct {
			URL string `json:"url"`
		}
		if err := json.Unmarshal(body, &v); err != nil {
			return "", errors.New("gateway answer is JSON without a url member")
		}
		s = v.URL
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return "", errors.New("gateway answer is not an absolute http(s) URL")
	}
	return s, nil
}

// formPage's referrer policy, strict-origin, lets the browser name the partner's site in
// the Origin header of the post (no-referrer would make it "null"), which the gateway
// checks against the partner's origins, and sends no path of the partner's page.
var formPage = template.Must(template.New("form").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="referrer" content="strict-origin">
<title>Opening the link</title>
</head>
<body>
<form id="link" method="post" action="{{.Action}}">
<input type="hidden" name="payload" value="{{.Token}}">
<noscript><p>This link works once and expires at {{.Expires}}.</p><button type="submit">Continue</button></noscript>
</form>
<script>document.getElementById("link").submit();</script>
</body>
</html>
`))

// FormPage signs p and returns an HTML page that POSTs the token to the /payload endpoint as
// the hidden form field "payload" as soon as it loads (docs/interface.md A-EP-1, A-EP-2),
// with a button for browsers without scripts. Serve it in the tab, iframe or web control
// that should show the result; the token is short-lived and single-use, so make the page per
// click and do not cache it.
func (c *Client) FormPage(p *Payload, opts ...SignOption) ([]byte, error) {
	if c.Signer == nil {
		return nil, errors.New("client has no signer")
	}
	endpoint, err := c.Endpoint("payload")
	if err != nil {
		return nil, err
	}
	cfg := signConfig{lifetime: DefaultLifetime}
	for _, o := range opts {
		o(&cfg)
	}
	expires := c.Signer.now().Add(cfg.lifetime).UTC().Format(time.RFC3339)
	token, err := c.Signer.Sign(p, opts...)
	if err != nil {
		return nil, err
	}
	return FormPageFor(endpoint, token, expires)
}

// FormPageFor returns the auto-submitting page for an already signed token; expires is
// shown to a browser without scripts.
func FormPageFor(action, token, expires string) ([]byte, error) {
	var b bytes.Buffer
	if err := formPage.Execute(&b, map[string]string{"Action": action, "Token": token, "Expires": expires}); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
