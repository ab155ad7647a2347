package harness

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// SlowAnswer is what a server answered to a body sent a byte at a time.
type SlowAnswer struct {
	Status int
	Header http.Header
	Body   []byte
	// Sent is how many bytes of the body went out before the answer came.
	Sent int
	// Closed reports whether the server closed the connection after answering.
	Closed bool
}

// PostSlowly posts body to baseURL+path (an http:// URL) one byte every interval, the
// slowloris attack on a body, and returns the answer, which a server with a read timeout
// gives before the body is through. liveness bounds the test itself: a server that holds
// the connection that long has failed, and reading its answer reports it.
func PostSlowly(t *testing.T, baseURL, path, body string, interval, liveness time.Duration) SlowAnswer {
	t.Helper()
	host := strings.TrimPrefix(baseURL, "http://")
	conn, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(liveness)); err != nil {
		t.Fatal(err)
	}
	if _, err := fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n", path, host, len(body)); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	trickled := make(chan int)
	go func() {
		n := 0
		defer func() { trickled <- n }()
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for n < len(body) {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			if _, err := conn.Write([]byte{body[n]}); err != nil {
				return
			}
			n++
		}
	}()

	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	close(stop)
	sent := <-trickled
	if err != nil {
		t.Fatalf("reading the answer to a slow body (%d of %d bytes sent): %v", sent, len(body), err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var ne net.Error
	_, err = conn.Read(make([]byte, 1))
	closed := err != nil && !(errors.As(err, &ne) && ne.Timeout())
	return SlowAnswer{Status: resp.StatusCode, Header: resp.Header, Body: b, Sent: sent, Closed: closed}
}
