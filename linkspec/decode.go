package linkspec

import (
	"errors"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// MaxClaimsDepth bounds the nesting of a claim set. The payload needs two levels (the claim
// set and the contact); extra claims get a few more. Deeper documents are refused because the
// gateway forwards the claim set whole, and common upstream parsers fail at depths from about
// 500 up (Python's json at ~1,000).
const MaxClaimsDepth = 16

// ErrClaimsDepth reports a claim set nested deeper than MaxClaimsDepth.
var ErrClaimsDepth = errors.New("claims nested too deeply")

// DecodePayload reads the payload fields from a claim set (the JSON of a token's payload
// segment), strictly: invalid UTF-8, a member name that occurs twice, also when two names
// differ only in case or by Unicode folding ("employeeId", "EMPLOYEEID"), a payload field of
// the wrong JSON type, and nesting deeper than MaxClaimsDepth are errors. Case-insensitive
// duplicates are refused because parsers disagree on which one wins: Go's encoding/json
// takes the last case-insensitive match, others the exact one, so a claim set that is one
// identity to the gateway could be another to an upstream. Other claims are allowed and
// ignored.
//
// The gateway and the app service both read claims with the rules of this function.
func DecodePayload(data []byte) (*Payload, error) {
	if err := CheckClaimsDepth(data); err != nil {
		return nil, err
	}
	var p Payload
	if err := json.Unmarshal(data, &p, StrictClaims()); err != nil {
		return nil, err
	}
	return &p, nil
}

// StrictClaims returns the go-json-experiment options of DecodePayload, for decoders of a
// claim set that embed Payload in a larger struct.
func StrictClaims() json.Options {
	return json.JoinOptions(
		json.MatchCaseInsensitiveNames(true),
		jsontext.AllowDuplicateNames(false),
		jsontext.AllowInvalidUTF8(false),
	)
}

// CheckClaimsDepth returns ErrClaimsDepth when data nests deeper than MaxClaimsDepth. It
// looks only at brackets outside strings, so it is cheap enough to run before any decoding.
func CheckClaimsDepth(data []byte) error {
	depth, inString, escaped := 0, false, false
	for _, c := range data {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			if depth > MaxClaimsDepth {
				return ErrClaimsDepth
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return nil
}
