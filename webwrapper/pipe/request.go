package pipe

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

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
