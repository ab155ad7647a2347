package linkspec

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func mainPayload() Payload {
	return Payload{
		EmployeeID:        "emp-1",
		EmployeeFirstname: "Åsa",
		EmployeeLastname:  "Öberg",
		EmployeeEmail:     "asa@clinic.example",
		OrganizationName:  "Clinic Nord",
		OrganizationID:    "org-1",
		Contact: &Contact{
			ID:        "c-1",
			Birthdate: "1980-02-29",
			Firstname: "Jon",
			Lastname:  "Jónsson",
		},
	}
}

func goPayload() Payload {
	return Payload{
		OrganizationName: "Gym Syd",
		OrganizationID:   "org-2",
		Contact: &Contact{
			ID:        "c-2",
			Firstname: "Ida",
			Lastname:  "Berg",
			Email:     "ida@example.org",
		},
	}
}

func failingFields(err error) []string {
	var e *Error
	if !errors.As(err, &e) {
		return nil
	}
	var names []string
	for _, f := range e.Fields {
		names = append(names, f.Field)
	}
	return names
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		payload func() Payload
		allowed []Kind
		kind    Kind
		fails   []string // failing fields, in table order; nil means valid
	}{
		{"main valid", mainPayload, nil, KindMain, nil},
		{"go valid", goPayload, nil, KindGo, nil},
		{"main allowed", mainPayload, []Kind{KindMain}, KindMain, nil},
		{"main refused for a go-only partner", mainPayload, []Kind{KindGo}, KindMain, []string{"employeeId"}},
		{"go refused for a main-only partner", goPayload, []Kind{KindMain}, KindGo, []string{"employeeId"}},
		{"employeeEmail is extra user data in a go link", func() Payload {
			p := goPayload()
			p.EmployeeEmail = "x@example.org"
			return p
		}, nil, KindGo, nil},
		{"employeeUsername is extra user data in a go link", func() Payload {
			p := goPayload()
			p.EmployeeUsername = "ida.b"
			return p
		}, nil, KindGo, nil},
		{"extra user data is held to its rule", func() Payload {
			p := goPayload()
			p.EmployeeEmail = "x at example.org"
			return p
		}, nil, KindGo, []string{"employeeEmail"}},
		{"employeeFirstname makes it main, refused without employeeId", func() Payload {
			p := goPayload()
			p.EmployeeFirstname = "Åsa"
			return p
		}, nil, KindMain, []string{"employeeId", "employeeLastname"}},
		{"main link that lost employeeId", func() Payload {
			p := mainPayload()
			p.EmployeeID = ""
			return p
		}, nil, KindMain, []string{"employeeId"}},
		{"blank employeeId keeps it main", func() Payload {
			p := mainPayload()
			p.EmployeeID = "  "
			return p
		}, nil, KindMain, []string{"employeeId"}},
		{"contact missing", func() Payload {
			p := mainPayload()
			p.Contact = nil
			return p
		}, nil, KindMain, []string{"contact"}},
		{"organization missing", func() Payload {
			p := goPayload()
			p.OrganizationID, p.OrganizationName = "", ""
			return p
		}, nil, KindGo, []string{"organizationName", "organizationId"}},
		{"go needs contact email", func() Payload {
			p := goPayload()
			p.Contact.Email = ""
			return p
		}, nil, KindGo, []string{"contact.email"}},
		{"main does not need contact email", func() Payload {
			p := mainPayload()
			p.Contact.Email = ""
			return p
		}, nil, KindMain, nil},
		{"not a calendar date", func() Payload {
			p := mainPayload()
			p.Contact.Birthdate = "1981-02-29"
			return p
		}, nil, KindMain, []string{"contact.birthdate"}},
		{"date in another format", func() Payload {
			p := mainPayload()
			p.Contact.Birthdate = "29.02.1980"
			return p
		}, nil, KindMain, []string{"contact.birthdate"}},
		{"control character", func() Payload {
			p := mainPayload()
			p.Contact.Lastname = "Berg\r\nX-Evil: 1"
			return p
		}, nil, KindMain, []string{"contact.lastname"}},
		{"line separator", func() Payload {
			p := mainPayload()
			p.EmployeeFirstname = "a\u2028b"
			return p
		}, nil, KindMain, []string{"employeeFirstname"}},
		{"invalid UTF-8", func() Payload {
			p := mainPayload()
			p.OrganizationName = "Clinic \xff"
			return p
		}, nil, KindMain, []string{"organizationName"}},
		{"blank name", func() Payload {
			p := mainPayload()
			p.Contact.Firstname = "   "
			return p
		}, nil, KindMain, []string{"contact.firstname"}},
		{"name at the bound", func() Payload {
			p := mainPayload()
			p.Contact.Firstname = strings.Repeat("é", maxNameLength)
			return p
		}, nil, KindMain, nil},
		{"name over the bound", func() Payload {
			p := mainPayload()
			p.Contact.Firstname = strings.Repeat("é", maxNameLength+1)
			return p
		}, nil, KindMain, []string{"contact.firstname"}},
		{"bad e-mail", func() Payload {
			p := mainPayload()
			p.EmployeeEmail = "asa at clinic"
			return p
		}, nil, KindMain, []string{"employeeEmail"}},
		{"every failing field is named", func() Payload {
			return Payload{EmployeeLastname: "L", Contact: &Contact{}}
		}, nil, KindMain, []string{"employeeId", "employeeFirstname",
			"organizationName", "organizationId", "contact.id", "contact.firstname", "contact.lastname"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.payload()
			kind, err := p.Validate(tt.allowed...)
			if kind != tt.kind {
				t.Errorf("Validate() kind = %q, want %q", kind, tt.kind)
			}
			if got := failingFields(err); !reflect.DeepEqual(got, tt.fails) {
				t.Errorf("Validate() failing fields = %q, want %q (err %v)", got, tt.fails, err)
			}
		})
	}
}

func TestDropMalformed(t *testing.T) {
	tests := []struct {
		name    string
		payload func() Payload
		dropped []string // in table order
		after   func(p *Payload) string
	}{
		{"valid main drops nothing", mainPayload, nil, nil},
		{"valid go drops nothing", goPayload, nil, nil},
		{"empty optional values are absent, not dropped", func() Payload {
			p := mainPayload()
			p.Contact.Middlename, p.Contact.Email = "", ""
			return p
		}, nil, nil},
		{"blank middlename", func() Payload {
			p := mainPayload()
			p.Contact.Middlename = " \t"
			return p
		}, []string{"contact.middlename"}, func(p *Payload) string { return p.Contact.Middlename }},
		{"malformed e-mails of a main link", func() Payload {
			p := mainPayload()
			p.EmployeeEmail, p.Contact.Email = "asa at clinic", "jon@"
			return p
		}, []string{"employeeEmail", "contact.email"}, func(p *Payload) string { return p.EmployeeEmail + p.Contact.Email }},
		{"every kind of malformed optional value", func() Payload {
			p := mainPayload()
			p.EmployeeUsername = strings.Repeat("u", MaxIDLength+1)
			p.CaseID = "case\x00"
			p.Contact.Birthdate = "29.02.1980"
			p.Contact.SSN = " "
			p.Contact.Gender = "f\u2028"
			p.Contact.Mobile = "+47\r\n1"
			p.Contact.Diagnosis = strings.Repeat("d", maxShortLength+1)
			return p
		}, []string{"employeeUsername", "caseId", "contact.birthdate", "contact.ssn", "contact.gender", "contact.mobile", "contact.diagnosis"},
			func(p *Payload) string {
				c := p.Contact
				return p.EmployeeUsername + p.CaseID + c.Birthdate + c.SSN + c.Gender + c.Mobile + c.Diagnosis
			}},
		{"ssn placeholders and numbers that fail their check", func() Payload {
			p := mainPayload()
			p.Contact.SSN = "N/A"
			return p
		}, []string{"contact.ssn"}, func(p *Payload) string { return p.Contact.SSN }},
		{"ssn with wrong check digits (issue 34's spelling)", func() Payload {
			p := goPayload()
			p.Contact.SSN = "170485 12345"
			return p
		}, []string{"contact.ssn"}, func(p *Payload) string { return p.Contact.SSN }},
		{"ssn of Norway, Sweden and Denmark in any spelling kept", func() Payload {
			p := mainPayload()
			p.Contact.SSN = "170535 50088"
			return p
		}, nil, nil},
		{"required fields are never dropped", func() Payload {
			p := mainPayload()
			p.EmployeeFirstname, p.Contact.ID = " ", "c\x00"
			return p
		}, nil, func(p *Payload) string { return "" }},
		{"contact email is required in a go link, not dropped", func() Payload {
			p := goPayload()
			p.Contact.Email = "no address"
			return p
		}, nil, nil},
		{"extra user data of a go link", func() Payload {
			p := goPayload()
			p.EmployeeEmail = "no address"
			return p
		}, []string{"employeeEmail"}, func(p *Payload) string { return p.EmployeeEmail }},
		{"no contact", func() Payload {
			p := goPayload()
			p.Contact = nil
			return p
		}, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.payload()
			kind := p.Kind()
			got := p.DropMalformed()
			var names []string
			for _, f := range got {
				names = append(names, f.Field)
				if f.Reason == "" {
					t.Errorf("DropMalformed() dropped %s without a reason", f.Field)
				}
			}
			if !reflect.DeepEqual(names, tt.dropped) {
				t.Errorf("DropMalformed() = %q, want %q", names, tt.dropped)
			}
			if tt.after != nil && len(tt.dropped) > 0 {
				if left := tt.after(&p); left != "" {
					t.Errorf("after DropMalformed() the dropped fields hold %q, want them empty", left)
				}
			}
			if p.Kind() != kind {
				t.Errorf("DropMalformed() changed the kind from %s to %s", kind, p.Kind())
			}
			if len(tt.dropped) > 0 {
				if again := p.DropMalformed(); again != nil {
					t.Errorf("DropMalformed() twice = %v, want nil the second time", again)
				}
			}
		})
	}
}

func TestDropMalformedThenValidate(t *testing.T) {
	p := mainPayload()
	p.EmployeeEmail, p.Contact.Email, p.Contact.Middlename = "x", "y", "   "
	if _, err := p.Validate(); err == nil {
		t.Fatal("Validate() before DropMalformed = nil, want the optional fields refused")
	}
	p.DropMalformed()
	if kind, err := p.Validate(); err != nil || kind != KindMain {
		t.Errorf("Validate() after DropMalformed = %q, %v, want main, nil", kind, err)
	}
	if p.EmployeeID != "emp-1" || p.Contact.Firstname != "Jon" {
		t.Errorf("DropMalformed() touched a valid field: %+v", p)
	}
}

func TestWithoutFields(t *testing.T) {
	in := `{"iss":"a","employeeEmail":"x","contact":{"id":"c","email":"y","middlename":" "},"caseId":"k","extra":{"email":"keep"}}`
	got, err := WithoutFields([]byte(in), []string{"employeeEmail", "contact.email", "contact.middlename"})
	if err != nil {
		t.Fatalf("WithoutFields = %v", err)
	}
	want := `{"iss":"a","contact":{"id":"c"},"caseId":"k","extra":{"email":"keep"}}`
	if string(got) != want {
		t.Errorf("WithoutFields = %s, want %s", got, want)
	}
	if got, err := WithoutFields([]byte(in), nil); err != nil || string(got) != in {
		t.Errorf("WithoutFields(nothing) = %s, %v, want the claims unchanged", got, err)
	}
	if _, err := WithoutFields([]byte(`[1]`), []string{"caseId"}); err == nil {
		t.Error("WithoutFields(array) = nil error, want one")
	}
}

func TestErrorDoesNotEchoValues(t *testing.T) {
	p := mainPayload()
	p.Contact.SSN = "20400229-1237\x00"
	_, err := p.Validate()
	if err == nil {
		t.Fatal("Validate() = nil, want an error for a control character")
	}
	if strings.Contains(err.Error(), "20400229") {
		t.Errorf("Validate() error %q echoes the ssn", err)
	}
}

func TestHeaderValueRoundTrip(t *testing.T) {
	for _, s := range []string{"", "plain-ID_1.~", "Åsa Öberg", "a%b", "x\r\ny", "名前", "\xff\x00"} {
		enc := EncodeHeaderValue(s)
		for i := 0; i < len(enc); i++ {
			if enc[i] < 0x21 || enc[i] > 0x7e {
				t.Fatalf("EncodeHeaderValue(%q) = %q, has byte %#x outside printable ASCII", s, enc, enc[i])
			}
		}
		dec, err := DecodeHeaderValue(enc)
		if err != nil || dec != s {
			t.Errorf("DecodeHeaderValue(EncodeHeaderValue(%q)) = %q, %v, want %q", s, dec, err, s)
		}
	}
	for _, bad := range []string{"%", "%4", "%zz", "a%g1"} {
		if _, err := DecodeHeaderValue(bad); err == nil {
			t.Errorf("DecodeHeaderValue(%q) = nil error, want malformed", bad)
		}
	}
}

func TestEachFieldAndSetField(t *testing.T) {
	p := mainPayload()
	p.CaseID = "case-7"
	var back Payload
	n := 0
	p.EachField(func(header, value string) {
		n++
		if !back.SetField(header, value) {
			t.Errorf("SetField(%q) = false, want true", header)
		}
	})
	if n != 11 {
		t.Errorf("EachField visited %d fields, want 11", n)
	}
	if !reflect.DeepEqual(back, p) {
		t.Errorf("payload rebuilt from its fields = %+v, want %+v", back, p)
	}
	if back.SetField("No-Such-Field", "x") {
		t.Error(`SetField("No-Such-Field") = true, want false`)
	}
}

func TestFieldsMatchJSONNames(t *testing.T) {
	// Every Fields path must be a JSON member of Payload, so the header contract and the
	// claims cannot drift apart.
	p := mainPayload()
	p.EmployeeUsername, p.CaseID = "u", "c"
	c := p.Contact
	c.SSN, c.Gender, c.Middlename, c.Mobile, c.Email, c.Diagnosis = "s", "g", "m", "+1", "e@x", "d"
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	for _, f := range Fields {
		var v any = doc
		for _, part := range strings.Split(f.Path, ".") {
			m, _ := v.(map[string]any)
			v = m[part]
		}
		if _, ok := v.(string); !ok {
			t.Errorf("field path %q is not a string member of the payload JSON", f.Path)
		}
	}
	if len(Fields) != 18 {
		t.Errorf("len(Fields) = %d, want 18 (9 payload + 10 contact - contact object)", len(Fields))
	}
}

func FuzzValidate(f *testing.F) {
	for _, p := range []Payload{mainPayload(), goPayload()} {
		raw, _ := json.Marshal(p)
		f.Add(raw)
	}
	f.Add([]byte(`{"contact":{"birthdate":"2024-02-30"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var p Payload
		if json.Unmarshal(data, &p) != nil {
			return
		}
		kind, err := p.Validate()
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || len(e.Fields) == 0 {
				t.Fatalf("Validate() error %v is not an *Error naming fields", err)
			}
			return
		}
		// A valid payload has every required field and only encodable values.
		if p.OrganizationID == "" || p.Contact == nil || p.Contact.ID == "" {
			t.Fatalf("Validate() accepted a payload without a required field: kind %q", kind)
		}
		p.EachField(func(header, value string) {
			if dec, err := DecodeHeaderValue(EncodeHeaderValue(value)); err != nil || dec != value {
				t.Fatalf("header value of %s does not round-trip", header)
			}
		})
	})
}

func FuzzDecodeHeaderValue(f *testing.F) {
	for _, s := range []string{"", "abc", "%41", "%", "%E2%82%AC"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		dec, err := DecodeHeaderValue(s)
		if err != nil {
			return
		}
		if again, err := DecodeHeaderValue(EncodeHeaderValue(dec)); err != nil || again != dec {
			t.Fatalf("re-encoding %q does not round-trip", dec)
		}
	})
}
