package legacyxml

import (
	"testing"

	"github.com/partnergate/partnergate/webwrapper/command"
)

// FuzzParse feeds arbitrary bytes to the input.xml reader: no panic, and what it accepts
// is a valid selectperson with all required elements, then at most the two searches.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"<exorinput delete='false' exercisequery='knee'>" + person + "</exorinput>",
		"<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><exorinput><firstname>\xc5sa</firstname></exorinput>",
		"\xff\xfe<\x00e\x00x\x00o\x00r\x00i\x00n\x00p\x00u\x00t\x00/\x00>\x00",
		"<exorinput><born><![CDATA[1950-07-01]]></born><!-- x --></exorinput>",
		"<!DOCTYPE exorinput [<!ENTITY e SYSTEM 'file:///etc/passwd'>]><exorinput><firstname>&e;</firstname></exorinput>",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		in, err := parse(data)
		if err != nil {
			return
		}
		cmds, err := in.commands()
		if err != nil {
			if cmds != nil {
				t.Fatalf("commands() = %v with error %v", cmds, err)
			}
			return
		}
		if len(cmds) == 0 || len(cmds) > 3 || cmds[0].Name != command.SelectPerson {
			t.Fatalf("parse(%q) commands = %v", data, cmds)
		}
		for _, c := range cmds {
			if err := command.Validate(c); err != nil {
				t.Fatalf("parse(%q) gave invalid %+v: %v", data, c, err)
			}
		}
		for _, k := range []string{"customid", "firstname", "lastname", "dateofbirth"} {
			if s, _ := cmds[0].Args[k].(string); s == "" {
				t.Fatalf("parse(%q) selectperson without %s: %v", data, k, cmds[0].Args)
			}
		}
	})
}
