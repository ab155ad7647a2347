package gateway

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
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

	host := strings.TrimPrefix(g.URL, "http://")
	conn, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// Liveness bound of the test itself: a gateway that waits this long has failed.
	if err := conn.SetDeadline(time.Now().Add(60 * time.Second)); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "POST /partner/demo/url HTTP/1.1\r\nHost: %s\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n", host, len(tok))
	stop := make(chan struct{})
	sent := make(chan int)
	go func() {
		n := 0
		defer func() { sent <- n }()
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for n < len(tok) {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			if _, err := conn.Write([]byte{tok[n]}); err != nil {
				return
			}
			n++
		}
	}()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	close(stop)
	n := <-sent
	if err != nil {
		t.Fatalf("reading the answer to a slow body (%d of %d bytes sent): %v", n, len(tok), err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if n >= len(tok) {
		t.Fatalf("the gateway waited for the whole slow body (%d bytes); want it cut off by read_timeout", n)
	}
	var p problemDoc
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatalf("decoding %s: %v", body, err)
	}
	if resp.StatusCode != http.StatusBadRequest || p.Code != "body_unreadable" {
		t.Errorf("answer to a slow body = %d %q, want 400 body_unreadable", resp.StatusCode, p.Code)
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
