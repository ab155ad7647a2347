package linkspec

import (
	"strings"
	"testing"
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
		{"case variant alone is read", `{"EmployeeId":"e1"}`, false, "e1"},
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
