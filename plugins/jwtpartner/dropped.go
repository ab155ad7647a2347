package jwtpartner

import (
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

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
