package jwtpartner

import (
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/partnergate/partnergate/problem"
)

// outcomeAccepted is the outcome of a forwarded request in logs and metrics.
const outcomeAccepted = "accepted"

// levelOf is the log level of a request's outcome: debug for an accepted link and a
// client's bad token, info for a replay or a token the replay store cannot vouch for
// (security signals), error for a dependency of the gateway that failed (key set, nonce
// store) or a bug, since only an operator can fix those.
func levelOf(rej *rejection) zapcore.Level {
	switch {
	case rej == nil:
		return zapcore.DebugLevel
	case rej.code == problem.CodeInternal, rej.code == problem.CodeNonceStoreUnavailable,
		rej.code == problem.CodeNonceStoreFull, rej.code == problem.CodeKeysUnavailable:
		return zapcore.ErrorLevel
	case rej.code == problem.CodeTokenReplayed, rej.code == problem.CodeTokenBeforeStoreStart:
		return zapcore.InfoLevel
	}
	return zapcore.DebugLevel
}

// logOutcome writes the request's one log line, at levelOf. It never carries the token,
// the nonce or a payload value.
func (h *Handler) logOutcome(rq *request, rej *rejection) {
	outcome := outcomeAccepted
	if rej != nil {
		outcome = string(rej.code)
	}
	c := h.logger.Check(levelOf(rej), "partner link")
	if c == nil {
		return
	}
	fields := []zap.Field{
		zap.String("partner", rq.partner),
		zap.String("endpoint", rq.endpoint),
		zap.String("outcome", outcome),
		zap.String("alg", rq.alg),
		zap.String("kid", rq.kid),
		zap.Duration("duration", time.Since(rq.start)),
		zap.String("request_id", rq.requestID),
	}
	if rq.token != nil {
		// The link kind, main or go: an outcome of the payload's shape, not a value from it.
		fields = append(fields, zap.String("kind", string(rq.token.Kind)))
	}
	if rej != nil && rej.err != nil {
		// Errors from linktoken and the stores never carry a value (their contract).
		fields = append(fields, zap.Error(rej.err))
	}
	c.Write(fields...)
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
