package web

import (
	"encoding/base64"
	"testing"
)

func TestDecodeClaimsRefusesWhatParsersDisagreeOn(t *testing.T) {
	for _, claims := range []string{
		`{"employeeId":"emp-1","EMPLOYEEID":"emp-admin","contact":{"id":"c1"}}`,
		`{"employeeId":"emp-1","contact":{"id":"c1","ID":"c2"}}`,
		`{"employeeId":"emp-1","contact":"c1"}`,
	} {
		p, fields := decodeClaims(base64.RawURLEncoding.EncodeToString([]byte(claims)))
		if p != nil || len(fields) == 0 {
			t.Errorf("decodeClaims(%s) = %+v, %v; want refused", claims, p, fields)
		}
	}
	p, fields := decodeClaims(base64.RawURLEncoding.EncodeToString([]byte(`{"employeeId":"emp-1","extra":1}`)))
	if fields != nil || p == nil || p.EmployeeID != "emp-1" {
		t.Errorf("decodeClaims(valid) = %+v, %v; want employeeId emp-1", p, fields)
	}
}
