// Package pipe is the wrapper's pipe svcpipe.<pid> (interface part B, B-PIPE), wire
// compatible with the clients integrators run against the original wrapper: one
// connection per request; each message, both ways, a 4-byte little-endian signed length
// and that many bytes of UTF-8; the request {"Method": …, "Args": {…}} in JSON. On Windows
// it is a named pipe that only the current user may open; elsewhere a Unix domain socket
// of mode 0600 in the user's runtime folder.
package pipe

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// MaxMessage bounds one message either way. A selectperson with its profile data is a few
// KiB; a workout list is the largest reply.
const MaxMessage = 1 << 20

// ErrTooLarge is a length prefix outside 0..MaxMessage.
var ErrTooLarge = fmt.Errorf("message length outside 0 to %d bytes", MaxMessage)

// ReadMessage reads one length-prefixed message. A stream that ends inside a message is
// io.ErrUnexpectedEOF; one that ends before it, io.EOF.
func ReadMessage(r io.Reader) ([]byte, error) {
	var prefix [4]byte
	if _, err := io.ReadFull(r, prefix[:]); err != nil {
		return nil, err
	}
	n := int32(binary.LittleEndian.Uint32(prefix[:]))
	if n < 0 || n > MaxMessage {
		return nil, ErrTooLarge
	}
	msg := make([]byte, n)
	if _, err := io.ReadFull(r, msg); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return msg, nil
}

// WriteMessage writes msg with its length prefix in one write, so that a reader sees the
// message whole as soon as it sees the prefix.
func WriteMessage(w io.Writer, msg []byte) error {
	if len(msg) > MaxMessage {
		return ErrTooLarge
	}
	buf := make([]byte, 4+len(msg))
	binary.LittleEndian.PutUint32(buf, uint32(len(msg)))
	copy(buf[4:], msg)
	_, err := w.Write(buf)
	return err
}
