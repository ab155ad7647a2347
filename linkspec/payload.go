// Package linkspec holds the link payload of the partner integration interface, its
// validation against the interface tables, and the header contract by which the gateway
// forwards a verified payload to the app service.
//
// It imports no web server and no HTTP package: the gateway, the partner kit and the app
// service share it so that one rule never has two implementations.
package linkspec

// Kind tells which client a link opens.
type Kind string

const (
	// KindMain is a link for the main web client: an instructor signed in, a contact in focus.
	KindMain Kind = "main"
	// KindGo is a link for the mobile client (Go): the contact is signed in.
	KindGo Kind = "go"
)

// ParseKind returns the Kind named s ("main" or "go").
func ParseKind(s string) (Kind, bool) {
	switch Kind(s) {
	case KindMain, KindGo:
		return Kind(s), true
	}
	return "", false
}

// Contact is the member, patient or client in focus (docs/interface.md A-PAY-CONTACT).
type Contact struct {
	ID         string `json:"id,omitempty"`
	Birthdate  string `json:"birthdate,omitempty"`
	SSN        string `json:"ssn,omitempty"`
	Gender     string `json:"gender,omitempty"`
	Firstname  string `json:"firstname,omitempty"`
	Middlename string `json:"middlename,omitempty"`
	Lastname   string `json:"lastname,omitempty"`
	Mobile     string `json:"mobile,omitempty"`
	Email      string `json:"email,omitempty"`
	Diagnosis  string `json:"diagnosis,omitempty"`
}

// Payload is the link payload. Its fields are top-level claims of the token, next to the
// registered claims (iss, aud, nbf, exp, iat, nonce); the interface leaves placement open and
// top-level claims are what a partner's JWT library produces with the least effort.
//
// The kind of a link follows from its payload (Kind). Claims not named here are allowed: the
// gateway forwards them inside the verified claim set.
type Payload struct {
	EmployeeID        string   `json:"employeeId,omitempty"`
	EmployeeUsername  string   `json:"employeeUsername,omitempty"`
	EmployeeFirstname string   `json:"employeeFirstname,omitempty"`
	EmployeeLastname  string   `json:"employeeLastname,omitempty"`
	EmployeeEmail     string   `json:"employeeEmail,omitempty"`
	OrganizationName  string   `json:"organizationName,omitempty"`
	OrganizationID    string   `json:"organizationId,omitempty"`
	Contact           *Contact `json:"contact,omitempty"`
	CaseID            string   `json:"caseId,omitempty"`
}

// Kind reports the client the payload is for. The two requests differ only in their payload
// fields (docs/interface.md A-EP-3), and a Go request may carry extra user data (A-PAY-GO). So
// the kind is read from the fields the main table requires and the Go table does not have:
// KindMain when employeeId, employeeFirstname or employeeLastname is present (not empty),
// KindGo otherwise. A main-client link that lost employeeId but kept the instructor's name is
// still a main link, refused for the missing employeeId, never a Go link that signs the
// contact in; the main table's optional employee fields (employeeUsername, employeeEmail)
// alone are extra user data in a Go link. Presence means not empty, not "not blank", so that a
// blank employeeId cannot make a link a Go link; and since required fields are never dropped
// (DropMalformed), dropping cannot change the kind.
func (p *Payload) Kind() Kind {
	for _, v := range p.kindValues() {
		if v != "" {
			return KindMain
		}
	}
	return KindGo
}

// kindFields are the payload fields a link's kind is read from (Kind), in the order
// KindFrom and KindOf name them; kindValues are their values in a payload.
var kindFields = [...]string{"employeeId", "employeeFirstname", "employeeLastname"}

func (p *Payload) kindValues() [len(kindFields)]string {
	return [...]string{p.EmployeeID, p.EmployeeFirstname, p.EmployeeLastname}
}

// KindFrom returns the payload's kind (Kind) and the fields that made it a main link, nil
// for a Go link: what a rejection's kind_from says.
func (p *Payload) KindFrom() (Kind, []string) {
	vals := p.kindValues()
	return kindOf(func(i int) bool { return vals[i] != "" })
}

// KindOf applies Kind's rule to a payload known only by its field names, such as one whose
// fields could not be decoded: present reports whether the payload carries the named field
// (not empty). It returns KindMain and the fields of the rule present, or KindGo and nil.
func KindOf(present func(field string) bool) (Kind, []string) {
	return kindOf(func(i int) bool { return present(kindFields[i]) })
}

// KindFields returns the payload fields a link's kind is read from, in the order KindFrom
// names them: a link carrying any of them (not empty) is a main link.
func KindFields() []string { return append([]string(nil), kindFields[:]...) }

// kindOf is Kind's rule with the i-th of kindFields present when present(i).
func kindOf(present func(i int) bool) (Kind, []string) {
	var from []string
	for i, name := range kindFields {
		if present(i) {
			from = append(from, name)
		}
	}
	if from != nil {
		return KindMain, from
	}
	return KindGo, nil
}
