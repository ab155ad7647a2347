package droptrailers

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

// trailerBody plays net/http's chunked body: when its end is read it merges the trailers
// into the request net/http made (creating the map when the client announced none).
type trailerBody struct {
	io.Reader
	server *http.Request
	set    http.Header
}

func (b *trailerBody) Read(p []byte) (int, error) {
	n, err := b.Reader.Read(p)
	if err == io.EOF {
		if b.server.Trailer == nil {
			b.server.Trailer = http.Header{}
		}
		for k, v := range b.set {
			b.server.Trailer[k] = v
		}
	}
	return n, err
}

func (b *trailerBody) Close() error { return nil }

func TestDropsAnnouncedAndLateTrailers(t *testing.T) {
	for _, tt := range []struct {
		name      string
		announced http.Header
		copied    bool // whether the handler gets a copy of net/http's request, as Caddy's is
	}{
		{"announced, copied request", http.Header{"X-Partner-Id": nil}, true},
		{"announced, same request", http.Header{"X-Partner-Id": nil}, false},
		{"unannounced, copied request", nil, true},
		{"unannounced, same request", nil, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			server := httptest.NewRequest(http.MethodPost, "/app/signin", nil)
			server.Trailer = tt.announced
			server.Body = &trailerBody{Reader: strings.NewReader("username=a"), server: server,
				set: http.Header{"X-Partner-Id": {"forged"}, "X-Partner-Name": {"demo"}}}
			r := server
			if tt.copied {
				r = server.WithContext(context.Background()) // shares the trailer map
			}
			var announced, atEnd http.Header
			next := caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
				announced = r.Trailer.Clone()
				body, err := io.ReadAll(r.Body)
				if err != nil || string(body) != "username=a" {
					t.Errorf("body = %q, %v; want the client's body", body, err)
				}
				atEnd = r.Trailer.Clone()
				return nil
			})
			if err := (Handler{}).ServeHTTP(httptest.NewRecorder(), r, next); err != nil {
				t.Fatal(err)
			}
			if len(announced) != 0 {
				t.Errorf("the next handler saw announced trailers %v, want none", announced)
			}
			if len(atEnd) != 0 {
				t.Errorf("after the body, the next handler saw trailers %v, want none", atEnd)
			}
		})
	}
}

func TestNoBody(t *testing.T) {
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.Trailer = http.Header{"X-Partner-Id": nil}
	called := false
	next := caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		called = true
		if r.Body != http.NoBody || r.Trailer != nil {
			t.Errorf("body %T, trailer %v; want http.NoBody and no trailers", r.Body, r.Trailer)
		}
		return nil
	})
	if err := (Handler{}).ServeHTTP(httptest.NewRecorder(), r, next); err != nil || !called {
		t.Fatalf("ServeHTTP = %v, next called %v", err, called)
	}
}

func TestUnmarshalCaddyfile(t *testing.T) {
	for _, tt := range []struct {
		input   string
		wantErr bool
	}{
		{"drop_trailers", false},
		{"drop_trailers x", true},
		{"drop_trailers {\n x\n}", true},
	} {
		var h Handler
		err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(tt.input))
		if (err != nil) != tt.wantErr {
			t.Errorf("UnmarshalCaddyfile(%q) = %v, want error %v", tt.input, err, tt.wantErr)
		}
	}
}
