package web

import (
	"net/http"
	"time"

	"github.com/partnergate/partnergate/appservice/store"
	"github.com/partnergate/partnergate/linkspec"
	"github.com/partnergate/partnergate/personspec"
	"github.com/partnergate/partnergate/problem"
)

// personJSON is a person as the desktop wrapper hands it to desktop programs.
type personJSON struct {
	ID            int64    `json:"id"`
	CustomID      string   `json:"customId"`
	Firstname     string   `json:"firstname"`
	Middlename    string   `json:"middlename"`
	Lastname      string   `json:"lastname"`
	Name          string   `json:"name"`
	Email         string   `json:"email"`
	Mobile        string   `json:"mobile"`
	PhoneHome     string   `json:"phoneHome"`
	PhoneWork     string   `json:"phoneWork"`
	Address       string   `json:"address"`
	Country       string   `json:"country"`
	Zipcode       string   `json:"zipcode"`
	Location      string   `json:"location"`
	BirthDate     string   `json:"birthDate"`
	Gender        string   `json:"gender"`
	Diagnosis     string   `json:"diagnosis"`
	LastChangedAt string   `json:"lastChangedAt"`
	PartnerIDs    []string `json:"partnerIds"`
}

func personOut(p *store.Person) *personJSON {
	if p == nil {
		return nil
	}
	ids := p.PartnerIDs
	if ids == nil {
		ids = []string{}
	}
	return &personJSON{ID: p.ID, CustomID: p.CustomID, Firstname: p.Firstname, Middlename: p.Middlename, Lastname: p.Lastname,
		Name: p.Name(), Email: p.Email, Mobile: p.Mobile, PhoneHome: p.PhoneHome, PhoneWork: p.PhoneWork, Address: p.Address,
		Country: p.Country, Zipcode: p.Zipcode, Location: p.Location, BirthDate: p.BirthDate, Gender: p.Gender,
		Diagnosis: p.Diagnosis, LastChangedAt: timeOut(p.UpdatedAt), PartnerIDs: ids}
}

func personsOut(ps []store.Person) []*personJSON {
	out := make([]*personJSON, len(ps))
	for i := range ps {
		out[i] = personOut(&ps[i])
	}
	return out
}

// timeOut is an RFC 3339 time in UTC, or "" for the zero time.
func timeOut(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// profileOut is a profile entry with its extra keys alongside the named ones; an extra key
// never replaces a named one.
func profileOut(e store.ProfileEntry) map[string]string {
	m := make(map[string]string, 7+len(e.Extra))
	for k, v := range e.Extra {
		m[k] = v
	}
	date := ""
	if !e.Date.IsZero() {
		date = personspec.FormatProfileDate(e.Date)
	}
	for k, v := range map[string]string{"key": e.Key, "name": e.Name, "value": e.Value, "unit": e.Unit, "date": date,
		"source": e.Source, "description": e.Description} {
		m[k] = v
	}
	return m
}

type statusJSON struct {
	SignedIn     bool        `json:"signedIn"`
	Role         string      `json:"role,omitempty"`
	Account      any         `json:"account,omitempty"`
	Organization any         `json:"organization,omitempty"`
	Person       *personJSON `json:"person"`
	CaseID       string      `json:"caseId"`
	CSRFToken    string      `json:"csrfToken,omitempty"`
	Version      int         `json:"version"`
}

// status is the session as the page and window.svcApp.status see it; the CSRF token comes
// along, so a page that outlived its token takes a fresh one.
func (h *Handler) status(w http.ResponseWriter, r *http.Request, s *store.Session) any {
	if s == nil {
		return map[string]bool{"signedIn": false}
	}
	st := statusJSON{SignedIn: true, Role: s.Account.Role, Person: personOut(s.Person), CaseID: s.CaseID,
		CSRFToken: h.csrfToken(w, r), Version: 1,
		Account: map[string]any{"id": s.Account.ID, "username": s.Account.Username, "displayName": s.Account.DisplayName}}
	if o := s.Organization; o != nil {
		st.Organization = map[string]any{"id": o.ID, "name": o.Name}
	}
	return st
}

func (h *Handler) apiStatus(r *apiRequest) (int, any, error) {
	return http.StatusOK, h.status(r.w, r.Request, r.s), nil
}

// reloadStatus reads the session again after a change and answers its status.
func (h *Handler) reloadStatus(r *apiRequest) (int, any, error) {
	s, err := h.cfg.Store.Session(r.Context(), r.token)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, h.status(r.w, r.Request, s), nil
}

func (h *Handler) apiPersons(r *apiRequest) (int, any, error) {
	var fe fieldErrors
	customID := queryText(r, &fe, "customId", personspec.MaxText)
	limit := queryInt(r, &fe, "limit", 1, 1000)
	if err := fe.err(); err != nil {
		return 0, nil, err
	}
	ps, err := h.cfg.Store.Persons(r.Context(), r.org(), customID, int(limit))
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, map[string]any{"persons": personsOut(ps)}, nil
}

func (h *Handler) apiPerson(r *apiRequest) (int, any, error) {
	id, err := pathID(r, "id")
	if err != nil {
		return 0, nil, err
	}
	p, err := h.cfg.Store.Person(r.Context(), r.org(), id)
	if err != nil {
		return 0, nil, err
	}
	profile, err := h.cfg.Store.Profile(r.Context(), r.org(), id)
	if err != nil {
		return 0, nil, err
	}
	ws, err := h.cfg.Store.Workouts(r.Context(), r.org(), store.WorkoutQuery{PersonID: id})
	if err != nil {
		return 0, nil, err
	}
	entries := make([]map[string]string, len(profile))
	for i, e := range profile {
		entries[i] = profileOut(e)
	}
	return http.StatusOK, map[string]any{"person": personOut(p), "profile": entries, "workouts": workoutsOut(ws)}, nil
}

// apiSelectPerson is the wrapper's selectperson: the person found or created becomes the
// session's person in focus.
func (h *Handler) apiSelectPerson(r *apiRequest) (int, any, error) {
	sel, ferrs, err := personspec.DecodeSelect(r.body)
	if err != nil {
		return 0, nil, invalid(problem.FieldError{Field: "", Reason: "the body must be one JSON object"})
	}
	if len(ferrs) > 0 {
		fields := make([]problem.FieldError, len(ferrs))
		for i, e := range ferrs {
			fields[i] = problem.FieldError{Field: e.Field, Reason: e.Reason}
		}
		return 0, nil, invalid(fields...)
	}
	p, created, matched, err := h.cfg.Store.SelectPerson(r.Context(), r.org(), sel)
	if err != nil {
		return 0, nil, err
	}
	if err := h.cfg.Store.SetSessionPerson(r.Context(), r.token, r.org(), p.ID); err != nil {
		return 0, nil, err
	}
	return http.StatusOK, map[string]any{"person": personOut(p), "created": created, "matched": matched}, nil
}

func (h *Handler) apiSetCustomID(r *apiRequest) (int, any, error) {
	id, err := pathID(r, "id")
	if err != nil {
		return 0, nil, err
	}
	var in struct {
		CustomID *string `json:"customId"`
	}
	if err := decodeBody(r, &in); err != nil {
		return 0, nil, err
	}
	var fe fieldErrors
	if in.CustomID == nil {
		fe.add("customId", "required")
	} else {
		fe.text("customId", *in.CustomID, personspec.MaxText, false)
	}
	if err := fe.err(); err != nil {
		return 0, nil, err
	}
	if err := h.cfg.Store.SetCustomID(r.Context(), r.org(), id, *in.CustomID); err != nil {
		return 0, nil, err
	}
	p, err := h.cfg.Store.Person(r.Context(), r.org(), id)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, personOut(p), nil
}

func (h *Handler) apiSessionPerson(r *apiRequest) (int, any, error) {
	var in struct {
		PersonID int64 `json:"personId"`
	}
	if err := decodeBody(r, &in); err != nil {
		return 0, nil, err
	}
	if in.PersonID <= 0 {
		return 0, nil, invalid(problem.FieldError{Field: "personId", Reason: "must be a positive integer"})
	}
	if err := h.cfg.Store.SetSessionPerson(r.Context(), r.token, r.org(), in.PersonID); err != nil {
		return 0, nil, err
	}
	return h.reloadStatus(r)
}

func (h *Handler) apiSessionCase(r *apiRequest) (int, any, error) {
	var in struct {
		CaseID *string `json:"caseId"`
	}
	if err := decodeBody(r, &in); err != nil {
		return 0, nil, err
	}
	var fe fieldErrors
	if in.CaseID == nil {
		fe.add("caseId", "required (empty clears the case)")
	} else {
		fe.text("caseId", *in.CaseID, linkspec.MaxIDLength, false)
	}
	if err := fe.err(); err != nil {
		return 0, nil, err
	}
	if err := h.cfg.Store.SetSessionCase(r.Context(), r.token, *in.CaseID); err != nil {
		return 0, nil, err
	}
	return h.reloadStatus(r)
}
