package linkspec

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestKindRule: Kind, KindFrom and KindOf read the kind by one rule: a main link when
// employeeId, employeeFirstname or employeeLastname is there and not empty, with those
// fields named in the payload's order; a Go link otherwise, whatever else it carries.
func TestKindRule(t *testing.T) {
	tests := []struct {
		name     string
		payload  Payload
		wantKind Kind
		wantFrom []string
	}{
		{"go", Payload{OrganizationID: "o", Contact: &Contact{ID: "c"}}, KindGo, nil},
		{"go with extra employee fields", Payload{EmployeeUsername: "u", EmployeeEmail: "e@x.example"}, KindGo, nil},
		{"main", Payload{EmployeeID: "e", EmployeeFirstname: "f", EmployeeLastname: "l"}, KindMain, []string{"employeeId", "employeeFirstname", "employeeLastname"}},
		{"main without employeeId", Payload{EmployeeLastname: "l"}, KindMain, []string{"employeeLastname"}},
		{"blank employeeId", Payload{EmployeeID: " "}, KindMain, []string{"employeeId"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.payload.Kind(); got != tt.wantKind {
				t.Errorf("Kind() = %q, want %q", got, tt.wantKind)
			}
			kind, from := tt.payload.KindFrom()
			if kind != tt.wantKind || !reflect.DeepEqual(from, tt.wantFrom) {
				t.Errorf("KindFrom() = %q, %q, want %q, %q", kind, from, tt.wantKind, tt.wantFrom)
			}
			// KindOf on the payload's JSON names agrees.
			b, err := json.Marshal(tt.payload)
			if err != nil {
				t.Fatal(err)
			}
			var top map[string]any
			if err := json.Unmarshal(b, &top); err != nil {
				t.Fatal(err)
			}
			kind, from = KindOf(func(name string) bool { _, ok := top[name]; return ok })
			if kind != tt.wantKind || !reflect.DeepEqual(from, tt.wantFrom) {
				t.Errorf("KindOf(%s) = %q, %q, want %q, %q", b, kind, from, tt.wantKind, tt.wantFrom)
			}
		})
	}
	f := KindFields()
	f[0] = "changed"
	if KindFields()[0] != "employeeId" {
		t.Error("KindFields() shares its array with the caller")
	}
}
