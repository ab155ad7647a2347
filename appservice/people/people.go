// Package people holds the person record that the desktop wrapper and the JSON API exchange
// (the selectperson arguments) and its profile data entries. No database, no HTTP.
package people

import (
	"encoding/json"
	"time"
)

// Select is the selectperson arguments (interface part B table), decoded.
type Select struct {
	UserID    int64  // service id; 0 = new person (or find by CustomID)
	CustomID  string // "customid", or obsolete "id" read as customid
	Firstname string
	Lastname  string
	Email     string
	Address   string
	PhoneHome string
	PhoneWork string
	Mobile    string
	Country   string
	Zipcode   string
	Location  string
	// Gender is "", "female" or "male", the stored values.
	Gender string
	// DateOfBirth is yyyy-MM-dd or "".
	DateOfBirth string
	Profile     []ProfileEntry
	// Extra holds the unknown members, kept verbatim (names lower-cased).
	Extra map[string]json.RawMessage
}

// ProfileEntry is one profile data entry (a measurement of the partner's system).
type ProfileEntry struct {
	Key         string
	Name        string
	Value       string
	Unit        string
	Date        time.Time // zero when the entry has no date
	Source      string
	Description string
	Extra       map[string]string // extra keys on the entry, kept
}
