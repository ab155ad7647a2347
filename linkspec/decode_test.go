package linkspec

import (
	"errors"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

func TestDecodePayload(t *testing.T) {
	tests := []struct {
		name    string
		json    string
		wantErr bool
		emp     string
	}{
		{"payload with extra claims", `{"iss":"x","employeeId":"e1","extra":{"a":[1,2]},"contact":{"id":"c"}}`, false, "e1"},
		{"exact duplicate", `{"employeeId":"e1","employeeId":"e2"}`, true, ""},
		{"case variant duplicate", `{"employeeId":"e1","EMPLOYEEID":"admin"}`, true, ""},
		{"case variant duplicate in contact", `{"contact":{"id":"c1","ID":"c2"}}`, true, ""},
		{"unicode fold variant", `{"employeeUsername":"a","employeeUſername":"b"}`, true, ""},
		{"case variant alone", `{"EmployeeId":"e1"}`, true, ""},
		{"delimiter variant alone", `{"employee_id":"e1"}`, true, ""},
		{"dash variant in contact", `{"contact":{"first-name":"A"}}`, true, ""},
		{"case variant of a registered claim", `{"employeeId":"e1","Nonce":"n"}`, true, ""},
		{"delimiter variant of a registered claim", `{"employeeId":"e1","e_x_p":1}`, true, ""},
		{"unrelated extra names", `{"employeeId":"e1","employeeIdentifier":"x","contact":{"id":"c","idType":"y"}}`, false, "e1"},
		{"wrong type", `{"contact":"c1"}`, true, ""},
		{"number for a string", `{"employeeId":7}`, true, ""},
		{"invalid UTF-8", "{\"employeeId\":\"e\xff\"}", true, ""},
		{"deep extra claim", `{"x":` + strings.Repeat("[", MaxClaimsDepth) + strings.Repeat("]", MaxClaimsDepth) + `}`, true, ""},
		{"brackets inside strings do not count", `{"employeeId":"` + strings.Repeat("[", 100) + `"}`, false, strings.Repeat("[", 100)},
		{"not an object", `[]`, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := DecodePayload([]byte(tt.json))
			if (err != nil) != tt.wantErr {
				t.Fatalf("DecodePayload(%q) error = %v, want error %v", tt.json, err, tt.wantErr)
			}
			if err == nil && p.EmployeeID != tt.emp {
				t.Errorf("DecodePayload(%q).EmployeeID = %q, want %q", tt.json, p.EmployeeID, tt.emp)
			}
		})
	}
}

func TestClaimsKeepExtraMembers(t *testing.T) {
	var c Claims
	data := []byte(`{"employeeId":"e1","iss":"x","team":{"a":1},"contact":{"id":"c","shoeSize":42}}`)
	if err := json.Unmarshal(data, &c, StrictClaims()); err != nil {
		t.Fatal(err)
	}
	if err := c.Check(ReservedClaims...); err != nil {
		t.Fatalf("Check() = %v, want nil", err)
	}
	if got, want := string(c.Extra["team"]), `{"a":1}`; got != want {
		t.Errorf("Extra[team] = %s, want %s", got, want)
	}
	if _, ok := c.Extra["iss"]; !ok {
		t.Errorf("Extra = %v, want the registered claim iss in it", c.Extra)
	}
	if got, want := string(c.Contact.Extra["shoeSize"]), "42"; got != want {
		t.Errorf("Contact.Extra[shoeSize] = %s, want %s", got, want)
	}
	if p := c.Decoded(); p.EmployeeID != "e1" || p.Contact == nil || p.Contact.ID != "c" {
		t.Errorf("Decoded() = %+v, want employeeId e1 and contact c", p)
	}
}

func TestCheckMemberNamesNamesTheField(t *testing.T) {
	_, err := DecodePayload([]byte(`{"contact":{"ID":"c"}}`))
	var ne *NameError
	if !errors.As(err, &ne) || ne.Field != "contact.id" || !errors.Is(err, ErrNearName) {
		t.Fatalf("DecodePayload(contact.ID) error = %v, want a NameError for contact.id", err)
	}
}

// TestFieldPath: a JSON pointer is named as the field errors of the gateway and of the
// app service's API both name a field, and a long member name the sender chose is cut.
func TestFieldPath(t *testing.T) {
	long := strings.Repeat("é", 40) // 80 bytes
	for _, tt := range []struct {
		pointer jsontext.Pointer
		want    string
	}{
		{"", ""},
		{"/employeeId", "employeeId"},
		{"/contact/firstname", "contact.firstname"},
		{"/items/0/sets", "items[0].sets"},
		{"/items/12", "items[12]"},
		{"/0", "0"},
		{"/a~1b/c~0d", "a/b.c~d"},
		{jsontext.Pointer("/" + long), strings.Repeat("é", 32) + "…"},
	} {
		if got := FieldPath(tt.pointer); got != tt.want {
			t.Errorf("FieldPath(%q) = %q, want %q", tt.pointer, got, tt.want)
		}
	}
}
