package pipe

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/partnergate/partnergate/personspec"
	"github.com/partnergate/partnergate/webwrapper/command"
)

// DecodeRequest reads a request {"Method": …, "Args": {…}}. Both member names and the
// method are matched case-insensitively, as the original lower-cased them (clients send
// "GetWorkoutsForClient" and "customId"); Args may be absent or null. Numbers stay
// json.Number for command.New, which also takes ids written as strings.
func DecodeRequest(msg []byte) (command.Command, error) {
	msg = bytes.TrimPrefix(msg, []byte("\xEF\xBB\xBF")) // a .NET writer may put a UTF-8 mark first
	if !utf8.Valid(msg) {
		return command.Command{}, errors.New("request is not valid UTF-8")
	}
	if err := distinctMembers(msg); err != nil {
		return command.Command{}, err
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(msg, &members); err != nil || members == nil {
		return command.Command{}, errors.New("request is not a JSON object")
	}
	var method, args json.RawMessage
	for name, v := range members {
		var into *json.RawMessage
		switch strings.ToLower(name) {
		case "method":
			into = &method
		case "args":
			into = &args
		default:
			continue
		}
		if *into != nil {
			return command.Command{}, fmt.Errorf("request member %q appears twice", strings.ToLower(name))
		}
		*into = v
	}
	var name string
	if err := json.Unmarshal(method, &name); err != nil || name == "" {
		return command.Command{}, errors.New("request needs Method, a string")
	}
	var a map[string]any
	if args != nil {
		dec := json.NewDecoder(bytes.NewReader(args))
		dec.UseNumber()
		if err := dec.Decode(&a); err != nil {
			return command.Command{}, errors.New("request Args must be a JSON object")
		}
	}
	return command.New(name, a, command.FromPipe)
}

// maxDepth bounds the nesting of a request; selectperson's profile data needs four levels.
const maxDepth = 32

// distinctMembers refuses a request with two members of one object whose names are equal
// but for case, at any depth: encoding/json keeps the last of two identical names, and the
// wrapper matches names in any case, so {"Method":"show","Method":"close"} would close the
// wrapper while a log or another reader saw show. The claims decoder of the link tokens
// refuses them the same way (linktoken, RFC 8725 §3.1 on parser disagreement).
func distinctMembers(msg []byte) error {
	dec := json.NewDecoder(bytes.NewReader(msg))
	type frame struct {
		object bool
		names  map[string]bool
		key    bool // the next token of an object is a member name
	}
	var stack []frame
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return errors.New("request is not a JSON object")
		}
		if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].key {
			if name, ok := tok.(string); ok {
				top := &stack[n-1]
				lower := strings.ToLower(name)
				if top.names[lower] {
					return fmt.Errorf("request member %q appears twice", personspec.Shorten(lower))
				}
				top.names[lower] = true
				top.key = false
				continue
			}
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			if len(stack) == maxDepth {
				return fmt.Errorf("request nested deeper than %d levels", maxDepth)
			}
			stack = append(stack, frame{object: tok == json.Delim('{'), names: map[string]bool{}, key: tok == json.Delim('{')})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		// A value ends: in an object the next token is a name again.
		if n := len(stack); n > 0 && stack[n-1].object {
			stack[n-1].key = true
		}
	}
}

// errorReply is the original's failure answer, {"error": "<message>"}.
func errorReply(err error) []byte {
	b, _ := json.Marshal(map[string]string{"error": err.Error()}) // a map of strings always marshals
	return b
}

// ReplyError returns the message of an {"error": …} reply, and false for any other reply.
func ReplyError(reply []byte) (string, bool) {
	var e struct {
		Error *string `json:"error"`
	}
	if json.Unmarshal(reply, &e) != nil || e.Error == nil {
		return "", false
	}
	return *e.Error, true
}
