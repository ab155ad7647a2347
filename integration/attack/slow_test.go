package attack

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/partnergate/partnergate/internal/harness"
)

// TestSlowBodyEnded sends a valid token one byte every 200 ms (slowloris on the body): the
// gateway must end the request when its read timeout passes, answer 400 body_unreadable and
// close the connection, never holding it for as long as the client likes, and never
// forwarding. Two gateways: the shared one, whose server sets read_body (what SECURITY.md
// advises in any case), and one with no server timeouts at all, where the handler's own
// read_timeout must do it (Caddy's defaults bound no body's total time).
func TestSlowBodyEnded(t *testing.T) {
	t.Run("server read_body", func(t *testing.T) {
		e := newEnv(t)
		slowBody(t, e.caddy, e.upstream, e.token(t, "acme-rs", nil), readBodyTimeout)
	})
	t.Run("handler read_timeout only", func(t *testing.T) {
		e := newEnv(t)
		up := harness.NewUpstream(t)
		c := harness.StartCaddy(t, harness.Config{
			Caddyfile: `{
	admin off
}

http://127.0.0.1:{{.Port}} {
	route /partner/* {
		jwt_partner {
			partner acme {
				jwks_file {{.Vars.jwks}}
				issuer    https://acme.example
				audience  svc-link
			}
			read_timeout 2s
		}
		reverse_proxy {{.Vars.upstream}}
	}
}
`,
			Vars: map[string]string{"jwks": e.jwksPaths["acme"], "upstream": up.Addr()},
		})
		slowBody(t, c, up, e.token(t, "acme-rs", nil), "2s")
	})
}

// slowBody trickles tok to c's acme /url and checks that the gateway cut it off.
func slowBody(t *testing.T, c *harness.Caddy, up *harness.Upstream, tok, limit string) {
	t.Helper()
	before := len(up.Requests())
	// A gateway that holds the connection 90 s has failed.
	a := harness.PostSlowly(t, c.URL, "/partner/acme/url", tok, 200*time.Millisecond, 90*time.Second)
	if a.Sent >= len(tok) {
		t.Fatalf("the gateway waited for the whole slow body (%d bytes at 5 bytes/s); want it cut off by the %s read timeout", a.Sent, limit)
	}
	res := &response{status: a.Status, header: a.Header, body: string(a.Body)}
	if got, want := outcome(res.status, problemCode(t, res)), outcome(http.StatusBadRequest, codeBodyUnreadable); got != want {
		t.Errorf("answer to a slow body = %s, want %s; body: %s", got, want, clipBody(res.body))
	}
	if !a.Closed {
		t.Errorf("after the answer the connection is still open, want it closed")
	}
	if n := len(up.Requests()) - before; n != 0 {
		t.Errorf("the upstream received %d requests for a slow body, want 0", n)
	}
	t.Logf("slow body: cut off after %d of %d bytes with %d", a.Sent, len(tok), a.Status)
}

// TestDeclaredHugeBodyRefused declares a 1 GiB body and sends none of it: the gateway must
// answer 413 body_too_large from the Content-Length alone, without asking for the body (no
// 100 Continue), on the shared gateway and on one with Caddy's default timeouts.
func TestDeclaredHugeBodyRefused(t *testing.T) {
	e := newEnv(t)
	up := harness.NewUpstream(t)
	defaults := harness.StartCaddy(t, harness.Config{
		Caddyfile: `{
	admin off
}

http://127.0.0.1:{{.Port}} {
	route /partner/* {
		jwt_partner {
			partner acme {
				jwks_file {{.Vars.jwks}}
				issuer    https://acme.example
				audience  svc-link
			}
		}
		reverse_proxy {{.Vars.upstream}}
	}
}
`,
		Vars: map[string]string{"jwks": e.jwksPaths["acme"], "upstream": up.Addr()},
	})
	for _, gw := range []struct {
		name string
		c    *harness.Caddy
		up   *harness.Upstream
	}{{"server read_body", e.caddy, e.upstream}, {"default timeouts", defaults, up}} {
		for _, expect := range []bool{false, true} {
			name := gw.name + "/plain"
			if expect {
				name = gw.name + "/expect 100-continue"
			}
			t.Run(name, func(t *testing.T) { hugeBody(t, gw.c, gw.up, expect) })
		}
	}
}

func hugeBody(t *testing.T, c *harness.Caddy, up *harness.Upstream, expect bool) {
	t.Helper()
	before := len(up.Requests())
	host := strings.TrimPrefix(c.URL, "http://")
	conn, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// A liveness bound for the test itself, beyond any of the gateway's timeouts.
	if err := conn.SetDeadline(time.Now().Add(90 * time.Second)); err != nil {
		t.Fatal(err)
	}
	hdr := fmt.Sprintf("POST /partner/acme/url HTTP/1.1\r\nHost: %s\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n", host, 1<<30)
	if expect {
		hdr += "Expect: 100-continue\r\n"
	}
	if _, err := io.WriteString(conn, hdr+"\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("reading the answer to a declared 1 GiB body: %v (want 413 %s)", err, codeBodyTooLarge)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	res := &response{status: resp.StatusCode, header: resp.Header, body: string(body)}
	if got, want := outcome(res.status, problemCode(t, res)), outcome(http.StatusRequestEntityTooLarge, codeBodyTooLarge); got != want {
		t.Errorf("answer = %s, want %s; body: %s", got, want, clipBody(res.body))
	}
	if n := len(up.Requests()) - before; n != 0 {
		t.Errorf("the upstream received %d requests, want 0", n)
	}
}
