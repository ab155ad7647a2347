package partnerkit

import (
	"fmt"

	"github.com/go-json-experiment/json"

	"github.com/partnergate/partnergate/linkspec"
)

// Payload is the link payload: the type of linkspec, so that the kit, the gateway and the app
// service read one definition and validate with one function.
type Payload = linkspec.Payload

// Contact is the member, patient or client in focus.
type Contact = linkspec.Contact

// Employee is the signed-in user (instructor) of a main-client link.
type Employee struct {
	ID        string // globally unique id in the partner application; required
	Username  string
	Firstname string // required
	Lastname  string // required
	Email     string // used for prefilling
}

// Organization is the center, clinic or location the link is for.
type Organization struct {
	Name string // required
	ID   string // globally unique id in the partner application; required
}

// MainPayload returns the payload of a main-client link: an instructor signed in, the
// contact in focus (contact needs id, firstname and lastname).
func MainPayload(e Employee, org Organization, contact Contact) *Payload {
	return &Payload{
		EmployeeID:        e.ID,
		EmployeeUsername:  e.Username,
		EmployeeFirstname: e.Firstname,
		EmployeeLastname:  e.Lastname,
		EmployeeEmail:     e.Email,
		OrganizationName:  org.Name,
		OrganizationID:    org.ID,
		Contact:           &contact,
	}
}

// GoPayload returns the payload of a link for the mobile client (Go): the contact is signed
// in (contact needs id, firstname, lastname and email).
func GoPayload(org Organization, contact Contact) *Payload {
	return &Payload{
		OrganizationName: org.Name,
		OrganizationID:   org.ID,
		Contact:          &contact,
	}
}

// ParsePayload reads a payload from JSON, as in the tables of docs/interface.md. Names match
// exactly, as at the gateway, and unknown members are refused, since a misspelt field name
// ("employeeID") would otherwise be dropped silently and the link rejected as incomplete;
// extra claims go through WithClaims instead. The payload is not validated here: Signer.Sign
// does that.
func ParsePayload(data []byte) (*Payload, error) {
	var p Payload
	if err := json.Unmarshal(data, &p, json.RejectUnknownMembers(true)); err != nil {
		return nil, fmt.Errorf("reading payload: %v", err)
	}
	return &p, nil
}
