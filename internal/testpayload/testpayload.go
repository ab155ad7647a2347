// Package testpayload holds the one valid link payload of each kind that the tests sign:
// the end-to-end harness (internal/harness) and the verifier's fixture (internal/jwttest)
// both build their tokens from it, so that "a valid main-client link" is the same link
// wherever a test says it. Non-ASCII names and a national identity number are in it on
// purpose: the first test the header encoding and the pages, the second that no log or
// rejection ever carries one. It imports nothing, so that every test may use it.
package testpayload

// Main returns a valid main-client payload (docs/interface.md A-PAY-MAIN, A-PAY-CONTACT)
// with every field a partner usually fills: the employee, the organization, the contact
// with a birth date and an ssn, and a case.
func Main() map[string]any {
	return map[string]any{
		"employeeId":        "emp-1001",
		"employeeUsername":  "a.ngstrom",
		"employeeFirstname": "Åsa",
		"employeeLastname":  "Ångström",
		"employeeEmail":     "asa@partner.example",
		"organizationName":  "Kliniken Öst",
		"organizationId":    "org-42",
		"contact": map[string]any{
			"id":        "c-7",
			"birthdate": "1980-02-29",
			"ssn":       "20400229-1237",
			"firstname": "Zoë",
			"lastname":  "Þórsdóttir",
			"email":     "zoe@example.org",
		},
		"caseId": "case-9",
	}
}

// Go returns a valid Go payload (A-PAY-GO): no employee fields, another contact.
func Go() map[string]any {
	return map[string]any{
		"organizationName": "Kliniken Öst",
		"organizationId":   "org-42",
		"contact": map[string]any{
			"id":        "c-8",
			"firstname": "Jürgen",
			"lastname":  "Müller-Łukasz",
			"email":     "jurgen@example.org",
			"ssn":       "20450115-1239",
		},
	}
}
