package jwtpartner

import (
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/partnergate/partnergate/problem"
)

// outcomeAccepted is the outcome of a forwarded request that the upstream answered with a
// 2xx or 3xx, in logs and metrics; upstream.go has the others.
const outcomeAccepted = "accepted"

// levelOf is the log level of a request's outcome: debug for an accepted link and a
// client's bad token, info for a replay, a token the replay store cannot vouch for and a
// form from a page not on the partner's origins (security signals), warn for an upstream that answered a 4xx or a 5xx of its own (the
// app service logs its side), error for a dependency of the gateway that failed (key set,
// nonce store, the upstream unreachable) or a bug, since only an operator can fix those.
func levelOf(rq *request, rej *rejection) zapcore.Level {
	code := problem.Code(rq.outcome)
	if rej != nil {
		code = rej.code
	}
	switch code {
	case problem.CodeInternal, problem.CodeNonceStoreUnavailable, problem.CodeNonceStoreFull,
		problem.CodeKeysUnavailable, problem.CodeUpstreamUnavailable:
		return zapcore.ErrorLevel
	case outcomeUpstreamError, outcomeUpstreamRejected:
		return zapcore.WarnLevel
	case problem.CodeTokenReplayed, problem.CodeTokenBeforeStoreStart, problem.CodeOriginNotAllowed:
		return zapcore.InfoLevel
	}
	return zapcore.DebugLevel
}

// logOutcome writes the request's one log line, at levelOf. It never carries the token,
// the nonce or a payload value.
func (h *Handler) logOutcome(rq *request, rej *rejection) {
	outcome := rq.outcomeLabel()
	if rej != nil {
		outcome = string(rej.code)
	}
	c := h.logger.Check(levelOf(rq, rej), "partner link")
	if c == nil {
		return
	}
	fields := []zap.Field{
		zap.String("partner", rq.partner),
		zap.String("endpoint", rq.endpoint),
		zap.String("outcome", outcome),
		zap.String("alg", rq.alg),
		zap.String("kid", rq.kid),
		zap.Duration("duration", rq.gatewayDuration()),
		zap.String("request_id", rq.requestID),
	}
	if !rq.forwardedAt.IsZero() {
		fields = append(fields, zap.Duration("upstream_duration", time.Since(rq.forwardedAt)))
	}
	if rq.token != nil {
		// The link kind, main or go: an outcome of the payload's shape, not a value from it.
		fields = append(fields, zap.String("kind", string(rq.token.Kind)))
	}
	if rq.upstreamStatus != 0 {
		fields = append(fields, zap.Int("upstream_status", rq.upstreamStatus))
	}
	if rq.upstreamClass != "" {
		fields = append(fields, zap.String("upstream_error", rq.upstreamClass))
	}
	switch {
	case rej != nil && rej.err != nil:
		// Errors from linktoken and the stores never carry a value (their contract), and
		// reverse_proxy's name the upstream's address and the path, never the token, which
		// is not forwarded.
		fields = append(fields, zap.Error(rej.err))
	case rq.upstreamErr != nil:
		fields = append(fields, zap.Error(rq.upstreamErr))
	}
	c.Write(fields...)
}

// gatewayDuration is the gateway's own time: up to the call of the next handler for a
// forwarded request (the line is written after the upstream answered), to now for a
// rejection.
func (rq *request) gatewayDuration() time.Duration {
	if !rq.forwardedAt.IsZero() {
		return rq.forwardedAt.Sub(rq.start)
	}
	return time.Since(rq.start)
}

// reportDropped counts and logs, one warning line per field, the optional payload fields
// the verifier dropped from an accepted link because their values were malformed or blank
// (linktoken.Token.Dropped): the link works, but the service never sees those values, and
// an operator needs to tell the partner which field to fix. The line names the partner,
// the field and the reason; never the value, which is personal data.
func (h *Handler) reportDropped(rq *request) {
	if rq.token == nil || len(rq.token.Dropped) == 0 {
		return
	}
	partner := rq.partnerLabel()
	for _, f := range rq.token.Dropped {
		h.metrics.optionalFieldDropped(partner, f.Field)
		if c := h.logger.Check(zapcore.WarnLevel, "optional payload field dropped"); c != nil {
			c.Write(
				zap.String("partner", partner),
				zap.String("field", f.Field),
				zap.String("reason", f.Reason),
				zap.String("kind", string(rq.token.Kind)),
				zap.String("request_id", rq.requestID),
			)
		}
	}
}
