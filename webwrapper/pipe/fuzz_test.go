package pipe

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/partnergate/partnergate/webwrapper/command"
)

// FuzzRequest feeds arbitrary bytes to the framing and the request decoder, as a stream
// and as one message: no panic, and what is accepted is a valid command with lower-case
// argument names.
func FuzzRequest(f *testing.F) {
	for _, s := range []string{
		`{"Method":"SelectPerson","Args":{"userid":"0","customId":"1","firstname":"A","lastname":"B","profiledata":[{"key":"w","date":"2024-03-05"}]}}`,
		`{"method":"getworkoutsforclient","args":{"userid":42,"from":"2024-03-05T08:00:00Z"}}`,
		`{"Method":"openworkout","Args":{"id":1e3}}`,
		`{"Method":"version","METHOD":"close"}`,
	} {
		f.Add(append(binary.LittleEndian.AppendUint32(nil, uint32(len(s))), s...))
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		check := func(msg []byte) {
			c, err := DecodeRequest(msg)
			if err != nil {
				return
			}
			if err := command.Validate(c); err != nil || c.Source != command.FromPipe {
				t.Fatalf("DecodeRequest(%q) = %+v, invalid: %v", msg, c, err)
			}
			for k := range c.Args {
				if k != strings.ToLower(k) {
					t.Fatalf("DecodeRequest(%q) kept argument name %q", msg, k)
				}
			}
		}
		check(data)
		if msg, err := ReadMessage(bytes.NewReader(data)); err == nil {
			if len(msg) > MaxMessage {
				t.Fatalf("ReadMessage gave %d bytes", len(msg))
			}
			check(msg)
		}
	})
}
