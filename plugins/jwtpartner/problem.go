package jwtpartner

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/partnergate/partnergate/linkspec"
	"github.com/partnergate/partnergate/linktoken"
	"github.com/partnergate/partnergate/problem"
)

// rejection is a refused request: its code, a detail safe to show and log, the failing
// payload fields, the verifier's members of the problem document (what was expected, the
// link kind read), and the cause for the log.
type rejection struct {
	code   problem.Code
	detail string
	fields []linkspec.FieldError
	token  *linktoken.Error // the verifier's rejection, nil for the endpoint's own
	err    error
	// retryAfter is how long a rate-limited client waits (429 only).
	retryAfter time.Duration
}

func reject(c problem.Code, detail string) *rejection { return &rejection{code: c, detail: detail} }

// rejectToken turns linktoken's error into a rejection. An error without a code is a bug
// in the verifier: fail closed with 500.
func rejectToken(err error) *rejection {
	var e *linktoken.Error
	if errors.As(err, &e) {
		return &rejection{code: e.Code, detail: e.Detail, fields: e.Fields, token: e, err: e.Err}
	}
	return &rejection{code: problem.CodeInternal, detail: "the token could not be checked", err: err}
}

// writeRejection answers a refused request, logs it and counts it. The next handler is not
// called. /url answers problem+json for the partner's server; /payload the problem page,
// for the person in the tab or iframe that posted the form.
func (h *Handler) writeRejection(w http.ResponseWriter, rq *request, rej *rejection) error {
	h.logOutcome(rq, rej)
	h.metrics.request(rq.partnerLabel(), rq.endpointLabel(), string(rej.code))
	rq.errorCode = rej.code

	p := problem.New(rej.code, rej.detail)
	p.Fields, p.RequestID = rej.fields, rq.requestID
	if e := rej.token; e != nil {
		p.Hints = e.Hints
	}
	hdr := w.Header()
	switch p.Status {
	case http.StatusMethodNotAllowed:
		hdr.Set("Allow", http.MethodPost)
	case http.StatusServiceUnavailable, http.StatusBadGateway:
		hdr.Set("Retry-After", retryAfterSeconds)
	case http.StatusTooManyRequests:
		hdr.Set("Retry-After", retryAfter(rej.retryAfter))
	case http.StatusUnauthorized:
		// RFC 9110 §15.5.2: a 401 names the scheme the client must use.
		hdr.Set("WWW-Authenticate", `PartnerLink realm="partnergate"`)
	}
	hdr.Set("Cache-Control", "no-store")

	if h.Errors == ErrorsHandle {
		if rej.code == problem.CodeUpstreamUnavailable {
			return caddyhttp.Error(p.Status, fmt.Errorf("partner link upstream failed: %s", rej.code))
		}
		return caddyhttp.Error(p.Status, fmt.Errorf("partner link rejected: %s", rej.code))
	}
	if rq.endpoint == endpointPayload {
		// Framed only by the pages the partner's forms may come from, if any.
		var ancestors []string
		if rq.ps != nil {
			ancestors = rq.ps.origins.ancestors
		}
		return writePage(w, p, ancestors, rq.header.Get("Accept-Language"))
	}
	return problem.WriteJSON(w, p)
}
