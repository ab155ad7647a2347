package pipe

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/partnergate/partnergate/webwrapper/command"
	"github.com/partnergate/partnergate/webwrapper/localsock"
)

// Handler runs one command. It returns the reply to write, or hasReply false to close
// without one (show, hide, close and openworkout do so: the original's clients do not read
// a reply for them). An error is answered {"error": "<message>"}, so its text must not
// quote a person's data. ctx ends when the server stops, not when the client hangs up:
// the original ran every command whatever its client did next, and its own sample client
// writes show, hide, close, log and openworkout and goes without reading.
type Handler func(ctx context.Context, c command.Command) (reply []byte, hasReply bool, err error)

// Time limits of one connection. The request follows the connect at once in every known
// client; the handler itself may wait longer (for a sign-in), which these do not bound.
const (
	readTimeout  = 10 * time.Second
	writeTimeout = 10 * time.Second
)

// Server is the listening pipe svcpipe.<pid>.
type Server struct {
	// Logger receives what became of a connection's reply when its client had gone; nil
	// discards it. Set it before Serve.
	Logger *slog.Logger

	ln   net.Listener
	path string
}

// Listen opens the pipe for process id pid: the named pipe \\.\pipe\svcpipe.<pid> that
// only the current user may open on Windows, a socket of mode 0600 elsewhere (Path).
func Listen(pid int) (*Server, error) {
	path, err := Path(pid)
	if err != nil {
		return nil, err
	}
	ln, err := localsock.Listen(path)
	if err != nil {
		return nil, fmt.Errorf("opening the pipe: %v", err)
	}
	return &Server{ln: ln, path: path}, nil
}

// Path returns where the server listens.
func (s *Server) Path() string { return s.path }

// Serve answers connections, each in its own goroutine, until ctx ends; it then closes
// the listener (which removes the socket file), waits for the connections, whose handlers
// see ctx cancelled, and returns nil. So a reply a handler returned (close's, say) is
// written before Serve returns. Any other end of accepting is returned as an error.
func (s *Server) Serve(ctx context.Context, h Handler) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	stop := context.AfterFunc(ctx, func() { s.ln.Close() })
	defer stop()
	defer s.ln.Close()
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return err
		}
		wg.Go(func() { s.serveConn(ctx, conn, h) })
	}
}

// serveConn reads one request, runs it and writes the reply, if any. A request that does
// not arrive whole is not answered: the client has gone. One that arrived runs to its end
// even when its client hangs up meanwhile; then only its reply is dropped.
func (s *Server) serveConn(ctx context.Context, conn net.Conn, h Handler) {
	defer conn.Close()
	conn.SetReadDeadline(time.Now().Add(readTimeout))
	msg, err := ReadMessage(conn)
	switch {
	case errors.Is(err, ErrTooLarge):
		reply(conn, errorReply(err))
		return
	case err != nil:
		return
	}
	conn.SetReadDeadline(time.Time{})
	c, err := DecodeRequest(msg)
	if err != nil {
		reply(conn, errorReply(err))
		return
	}
	out, has, err := h(ctx, c)
	switch {
	case err != nil:
		out = errorReply(err)
	case !has:
		return
	case len(out) > MaxMessage:
		out = errorReply(errors.New("reply too large"))
	}
	if err := reply(conn, out); err != nil && s.Logger != nil {
		s.Logger.Info("pipe: the client hung up before its reply; the command ran, its reply is dropped",
			"command", string(c.Name), "error", err)
	}
}

// reply writes one message; a client that has gone or stopped reading is not waited for.
func reply(conn net.Conn, msg []byte) error {
	conn.SetWriteDeadline(time.Now().Add(writeTimeout))
	return WriteMessage(conn, msg)
}
