package web

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/partnergate/partnergate/problem"
)

// failLink answers a rejected partner link in the gateway's shape: problem+json on /url,
// whose caller is the partner's server, the problem page on /payload and elsewhere.
func (h *Handler) failLink(w http.ResponseWriter, endpoint string, p problem.Problem) {
	if endpoint == "url" {
		_ = problem.WriteJSON(w, p) // a failed write is a client gone; nothing is left to tell it
		return
	}
	h.fail(w, p)
}

// retryAfter is the Retry-After, in seconds, of a 503 for a database that does not answer:
// long enough for a restart or a failover to finish, short enough for a person waiting.
const retryAfter = "5"

// failure is the answer to an unexpected error of ours: 503 unavailable with Retry-After
// when the database does not answer, so the gateway, the partner and the page know to try
// again, else 500 internal_error with detail. A ping tells the two apart: the error itself
// is the driver's and differs between SQLite, pgx and a closed pool. The ping outlives a
// client gone away, and is bounded, so a database that hangs cannot hold the answer.
func (h *Handler) failure(w http.ResponseWriter, r *http.Request, detail string) problem.Problem {
	if errors.Is(r.Context().Err(), context.DeadlineExceeded) {
		// The request's database timeout passed (serveWithDeadline): the database hangs,
		// though it may still answer a ping.
		w.Header().Set("Retry-After", retryAfter)
		return problem.New(problem.CodeUnavailable, timedOutDetail)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 2*time.Second)
	defer cancel()
	if err := h.cfg.Store.Ping(ctx); err != nil {
		w.Header().Set("Retry-After", retryAfter)
		return problem.New(problem.CodeUnavailable, "The database is not available. Try again in a few seconds.")
	}
	return problem.New(problem.CodeInternal, detail)
}

// fail answers p as the problem page inside the app's layout.
func (h *Handler) fail(w http.ResponseWriter, p problem.Problem) {
	h.render(w, p.Status, "problem", localProblem(w, p))
}
