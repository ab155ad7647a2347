// Package droptrailers provides the drop_trailers handler, which removes a request's
// trailers before the next handler sees them.
//
// Caddy's reverse_proxy forwards a chunked request's trailers to the upstream, and no
// matcher can see them: net/http moves the Trailer header out of the request's headers and
// fills the trailers in only when the body has been read. So `header_up -X-Partner-*`
// strips the gateway's namespace from the headers while a client's trailer of the same name
// still reaches the app service, whose stack may merge trailers into headers. Nothing a
// browser or a partner sends needs request trailers.
package droptrailers

import (
	"io"
	"net/http"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

func init() {
	caddy.RegisterModule(Handler{})
	httpcaddyfile.RegisterHandlerDirective("drop_trailers", parseCaddyfile)
	// Before reverse_proxy, which publishes the trailers it sees at the body's end.
	httpcaddyfile.RegisterDirectiveOrder("drop_trailers", httpcaddyfile.Before, "reverse_proxy")
}

// Handler drops every request trailer, announced or not: the names a client announced are
// removed before the next handler runs, and whatever net/http reads after the body is
// removed before the end of the body is reported to the reader.
type Handler struct{}

// CaddyModule returns the Caddy module information.
func (Handler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.drop_trailers",
		New: func() caddy.Module { return new(Handler) },
	}
}

// ServeHTTP implements caddyhttp.MiddlewareHandler.
func (Handler) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	r.Trailer = nil
	if r.Body != nil && r.Body != http.NoBody {
		r.Body = &body{ReadCloser: r.Body, r: r}
	}
	return next.ServeHTTP(w, r)
}

// body forgets the request's trailers when its end is read: net/http fills them into the
// request it made, whose map the request passed on may share.
type body struct {
	io.ReadCloser
	r *http.Request
}

func (b *body) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		clear(b.r.Trailer)
		b.r.Trailer = nil
	}
	return n, err
}

// UnmarshalCaddyfile sets up the handler from Caddyfile tokens. Syntax:
//
//	drop_trailers
func (h *Handler) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // the directive's name
	if d.NextArg() || d.NextBlock(0) {
		return d.Err("drop_trailers takes no arguments and no block")
	}
	return nil
}

func parseCaddyfile(h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
	m := new(Handler)
	err := m.UnmarshalCaddyfile(h.Dispenser)
	return m, err
}

// Interface guards
var (
	_ caddyhttp.MiddlewareHandler = (*Handler)(nil)
	_ caddyfile.Unmarshaler       = (*Handler)(nil)
)
