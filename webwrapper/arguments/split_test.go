package arguments

import (
	"reflect"
	"testing"
)

// The cases are those of the CommandLineToArgvW documentation and of
// daviddeley.com's parameter parsing study, as raw strings.
func TestSplit(t *testing.T) {
	for _, tt := range []struct {
		line string
		want []string
	}{
		{``, nil},
		{`   `, nil},
		{`a b  c`, []string{"a", "b", "c"}},
		{"a\tb", []string{"a", "b"}},
		{`firstname="Ola Nordmann" id=7`, []string{"firstname=Ola Nordmann", "id=7"}},
		{`"a b c" d e`, []string{"a b c", "d", "e"}},
		{`"ab\"c" "\\" d`, []string{`ab"c`, `\`, "d"}},
		{`a\\\b d"e f"g h`, []string{`a\\\b`, "de fg", "h"}},
		{`a\\\"b c d`, []string{`a\"b`, "c", "d"}},
		{`a\\\\"b c" d e`, []string{`a\\b c`, "d", "e"}},
		{`path="C:\Program Files\x\\" next`, []string{`path=C:\Program Files\x\`, "next"}},
		{`trailing\\`, []string{`trailing\\`}},
		{`"a""b" c`, []string{`a"b c`}},         // "" inside quotes: a quote, and the quoted part ends
		{`"a"""b c" d`, []string{`a"b c`, "d"}}, // after "", the next quote opens again
		{`a""b`, []string{"ab"}},
		{`unterminated "x y`, []string{"unterminated", "x y"}},
		{`lastname="Ørnø" x`, []string{"lastname=Ørnø", "x"}},
	} {
		if got := Split(tt.line); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Split(%q) = %q, want %q", tt.line, got, tt.want)
		}
	}
}
