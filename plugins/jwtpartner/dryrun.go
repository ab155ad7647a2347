package jwtpartner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"golang.org/x/time/rate"

	"github.com/partnergate/partnergate/linktoken"
	"github.com/partnergate/partnergate/problem"
)

// endpointCheck is the dry run's endpoint. It exists only for a partner with dry_run: for
// every other partner /check is an unknown endpoint, answered not_found as any other.
const endpointCheck = "check"

// outcomeDryRun is the outcome of an answered dry run in logs and metrics: a dry run is
// neither an accepted nor a rejected link, whatever its verdict.
const outcomeDryRun = "dry_run"

// Defaults of DryRun.
const (
	DefaultDryRunMaxEvents = 10
	DefaultDryRunWindow    = time.Minute
)

// dryRunNonceDetail is the nonce rule's detail in a dry run's report.
const dryRunNonceDetail = "not checked by a dry run, which neither looks up nor claims the nonce: the link endpoints accept each nonce once"

// DryRun turns on a partner's dry run: POST /partner/{name}/check takes a token as /url
// does (Content-Type text/plain, the compact token) and answers, as JSON, the rule-by-rule
// report that `partnerlink check --json` prints (linktoken.Report), from this gateway's
// rules, keys and clock. It never forwards, never sets the forwarding headers and never
// reads or claims the nonce, so the token still works once afterwards.
//
// It is for test environments: anyone who knows the partner's name can ask it why a
// forged token fails, it costs a signature check per request, and it is outside the nonce
// rule. Hence it is off unless configured, and rate-limited per partner by a token bucket
// that holds MaxEvents and refills MaxEvents per Window; a request over the limit is
// answered 429 dry_run_rate_limited with Retry-After. The bucket starts full on every
// configuration load.
type DryRun struct {
	// MaxEvents is the bucket's size: the most dry runs answered at once, and how many
	// are refilled per Window. Default 10.
	MaxEvents int `json:"max_events,omitempty"`

	// Window is the time in which MaxEvents dry runs are refilled. Default 1m.
	Window caddy.Duration `json:"window,omitempty"`
}

// check checks the dry run's options; zero values take the defaults.
func (d *DryRun) check() error {
	switch {
	case d.MaxEvents < 0:
		return fmt.Errorf("max_events %d: must not be negative", d.MaxEvents)
	case d.Window < 0:
		return fmt.Errorf("window %s: must not be negative", time.Duration(d.Window))
	}
	return nil
}

// limiter returns the dry run's token bucket.
func (d *DryRun) limiter() *rate.Limiter {
	n, window := d.MaxEvents, time.Duration(d.Window)
	if n == 0 {
		n = DefaultDryRunMaxEvents
	}
	if window == 0 {
		window = DefaultDryRunWindow
	}
	return rate.NewLimiter(rate.Limit(float64(n)/window.Seconds()), n)
}

// wantDryRunRate says what dry_run takes.
const wantDryRunRate = "want <events>/<window>, such as 10/1m (10 dry runs at once, refilled at 10 a minute)"

// unmarshalDryRun reads partner's "dry_run [<events>/<window>]"; the dispenser is on
// dry_run.
func unmarshalDryRun(d *caddyfile.Dispenser, partner string) (*DryRun, error) {
	args := d.RemainingArgs()
	switch len(args) {
	case 0:
		return &DryRun{}, nil
	case 1:
	default:
		return nil, d.ArgErr()
	}
	events, window, ok := strings.Cut(args[0], "/")
	n, err := strconv.Atoi(events)
	if !ok || err != nil || n <= 0 {
		return nil, d.Errf("partner %s: dry_run %q: %s", partner, args[0], wantDryRunRate)
	}
	dur, err := caddy.ParseDuration(window)
	if err != nil || dur <= 0 {
		return nil, d.Errf("partner %s: dry_run %q: %s", partner, args[0], wantDryRunRate)
	}
	return &DryRun{MaxEvents: n, Window: caddy.Duration(dur)}, nil
}

// warnDryRun says at every load that a partner's dry run is on: it must not reach
// production by mistake.
func (h *Handler) warnDryRun(name string) {
	h.logger.Warn("dry run is on: POST /partner/"+name+"/check explains any token's verification to anyone; turn it off in production",
		zap.String("partner", name))
}

// dryRunPartner returns the partner of a /partner/{name}/check request when that partner
// has its dry run on, and nil otherwise: the request is then handled as any other, so
// /check is not_found wherever the dry run is off.
func (h *Handler) dryRunPartner(r *http.Request) *partnerState {
	name, endpoint, ok := splitPartnerPath(r.URL.EscapedPath())
	if !ok || endpoint != endpointCheck {
		return nil
	}
	if ps := h.partners[name]; ps != nil && ps.dryRun != nil {
		return ps
	}
	return nil
}

// dryRun checks the token of a dry run request and returns its report, or the request's
// rejection (method, rate, body). The token is traced with the partner's own verifier and
// keys, as /url would verify it; nothing is claimed, forwarded or set for the upstream.
func (h *Handler) dryRun(r *http.Request, rq *request, ps *partnerState) (*linktoken.Report, *rejection) {
	rq.partner, rq.endpoint = ps.name, endpointCheck
	if r.Method != http.MethodPost {
		return nil, reject(problem.CodeMethodNotAllowed, "the dry run is sent with POST")
	}
	// The limit comes before the body is read: a request over it costs nothing more.
	now := h.now()
	res := ps.dryRun.ReserveN(now, 1)
	if wait := res.DelayFrom(now); wait > 0 {
		res.CancelAt(now)
		return nil, &rejection{
			code:       problem.CodeDryRunRateLimited,
			detail:     "too many dry runs for this partner; try again after Retry-After seconds",
			retryAfter: wait,
		}
	}

	var body *bytes.Buffer
	defer func() { releaseBody(body) }()
	token, rej := h.readToken(r, endpointCheck, &rq.bodyRead, &body)
	if rej != nil {
		return nil, rej
	}
	rep := ps.verifier.Trace(r.Context(), token, ps.keys).Report(dryRunNonceDetail)
	rep.RequestID = rq.requestID
	return rep, nil
}

// writeDryRun answers a dry run's report, 200 whatever its verdict (the dry run worked),
// logs it and counts it as its own outcome.
func (h *Handler) writeDryRun(w http.ResponseWriter, rq *request, rep *linktoken.Report) error {
	h.logDryRun(rq, rep)
	h.metrics.request(rq.partnerLabel(), rq.endpointLabel(), outcomeDryRun)
	body, err := json.Marshal(rep)
	if err != nil {
		return err
	}
	hdr := w.Header()
	hdr.Set("Content-Type", "application/json")
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	_, err = w.Write(body)
	return err
}

// logDryRun writes a dry run's one log line, at info: a dry run is rare, and an operator
// should see that one is being used. It names the verdict and the code, never the token,
// its nonce or a payload value.
func (h *Handler) logDryRun(rq *request, rep *linktoken.Report) {
	c := h.logger.Check(zapcore.InfoLevel, "partner link dry run")
	if c == nil {
		return
	}
	c.Write(
		zap.String("partner", rq.partner),
		zap.String("endpoint", rq.endpoint),
		zap.String("outcome", outcomeDryRun),
		zap.String("verdict", rep.Verdict()),
		zap.String("code", string(rep.Code)),
		zap.String("kind", string(rep.Kind)),
		zap.Duration("duration", time.Since(rq.start)),
		zap.String("request_id", rq.requestID),
	)
}

// retryAfter is a Retry-After value in whole seconds, rounded up, at least 1.
func retryAfter(d time.Duration) string {
	return strconv.Itoa(max(1, int(math.Ceil(d.Seconds()))))
}
