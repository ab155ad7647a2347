package gateway

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/partnergate/partnergate/internal/harness"
	"github.com/partnergate/partnergate/internal/testpayload"
)

// TestReadTimeoutEndsSlowBody sends a token one byte every 200 ms to a gateway whose
// Caddyfile sets no server timeouts: the handler's read_timeout alone must end the request
// with 400 body_unreadable, close the connection and leave the upstream untouched.
func TestReadTimeoutEndsSlowBody(t *testing.T) {
	k := harness.NewKey(t, "RS256", "slow-1")
	g := startGateway(t, fileKeys(t, k), "", "read_timeout 2s")
	tok := mint(t, k, harness.Token{Payload: testpayload.Main()})

	// A gateway that waits 60 s has failed.
	a := harness.PostSlowly(t, g.URL, "/partner/demo/url", tok, 200*time.Millisecond, 60*time.Second)
	if a.Sent >= len(tok) {
		t.Fatalf("the gateway waited for the whole slow body (%d bytes); want it cut off by read_timeout", a.Sent)
	}
	if !a.Closed {
		t.Errorf("after the answer the connection is still open, want it closed")
	}
	var p problemDoc
	if err := json.Unmarshal(a.Body, &p); err != nil {
		t.Fatalf("decoding %s: %v", a.Body, err)
	}
	if a.Status != http.StatusBadRequest || p.Code != "body_unreadable" {
		t.Errorf("answer to a slow body = %d %q, want 400 body_unreadable", a.Status, p.Code)
	}
	if got := len(g.up.Requests()); got != 0 {
		t.Errorf("upstream received %d requests, want 0", got)
	}
}

// TestReadTimeoutSparesSlowUpstream checks that the deadline is lifted once the token is
// read: an upstream slower than read_timeout still answers through the gateway.
func TestReadTimeoutSparesSlowUpstream(t *testing.T) {
	k := harness.NewKey(t, "ES256", "slowup-1")
	slow := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(2500 * time.Millisecond)
		io.WriteString(w, "http://app.example/after-a-while")
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go slow.Serve(ln)
	t.Cleanup(func() { slow.Close() })

	c := harness.StartCaddy(t, harness.Config{
		Caddyfile: gatewayCaddyfile,
		Vars: map[string]string{"keys": fileKeys(t, k), "partner": "", "handler": "read_timeout 1s",
			"site": "", "upstream": ln.Addr().String()},
		Env: []string{"TEST_UPSTREAM_SECRET=" + secret},
	})
	res := c.PostURL(t, "demo", mint(t, k, harness.Token{Payload: testpayload.Main()}))
	if res.StatusCode != http.StatusOK || string(res.Body) != "http://app.example/after-a-while" {
		t.Errorf("answer through a slow upstream = %d %q, want 200 and the upstream's body", res.StatusCode, res.Body)
	}
}
