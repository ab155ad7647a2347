package pipe

import (
	"context"
	"encoding/json"
	"errors"
	"io"

	"github.com/partnergate/partnergate/webwrapper/localsock"
)

// Call sends one request to the pipe at path and returns the reply, nil when the server
// closed without one (show, hide, close, openworkout, selectperson). An {"error": …}
// reply is returned as a reply; ReplyError tells it.
func Call(ctx context.Context, path, method string, args map[string]any) ([]byte, error) {
	req, err := json.Marshal(struct {
		Method string         `json:"Method"`
		Args   map[string]any `json:"Args"`
	}{method, args})
	if err != nil {
		return nil, err
	}
	conn, err := localsock.Dial(ctx, path)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if d, ok := ctx.Deadline(); ok {
		conn.SetDeadline(d)
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	if err := WriteMessage(conn, req); err != nil {
		return nil, err
	}
	reply, err := ReadMessage(conn)
	if errors.Is(err, io.EOF) {
		return nil, nil
	}
	if err != nil && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return reply, err
}
