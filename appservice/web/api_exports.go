package web

import (
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/partnergate/partnergate/appservice/casepdf"
	"github.com/partnergate/partnergate/appservice/store"
	"github.com/partnergate/partnergate/i18n"
	"github.com/partnergate/partnergate/linkspec"
	"github.com/partnergate/partnergate/problem"
)

type exportJSON struct {
	ID        int64  `json:"id"`
	CaseID    string `json:"caseId"`
	WorkoutID int64  `json:"workoutId"`
	PersonID  int64  `json:"personId"`
	Filename  string `json:"filename"`
	SHA256    string `json:"sha256"`
	Size      int    `json:"size"`
	CreatedAt string `json:"createdAt"`
	CreatedBy string `json:"createdBy"`
	URL       string `json:"url"` // the download, relative to the site
}

func exportOut(e *store.CaseExport) exportJSON {
	return exportJSON{ID: e.ID, CaseID: e.CaseID, WorkoutID: e.WorkoutID, PersonID: e.PersonID, Filename: e.Filename,
		SHA256: e.SHA256, Size: e.Size, CreatedAt: timeOut(e.CreatedAt), CreatedBy: e.CreatedBy,
		URL: apiPrefix + "exports/" + strconv.FormatInt(e.ID, 10) + ".pdf"}
}

// file is an answer that is not JSON: the route's bytes with their type and disposition.
type file struct {
	contentType, disposition string
	data                     []byte
}

func (f file) write(w http.ResponseWriter) {
	hdr := w.Header()
	hdr.Set("Content-Type", f.contentType)
	hdr.Set("Content-Disposition", f.disposition)
	hdr.Set("Content-Length", strconv.Itoa(len(f.data)))
	w.WriteHeader(http.StatusOK)
	w.Write(f.data)
}

// apiExport renders a plan of the organization as a PDF and archives it under the case
// given, or else the session's case.
func (h *Handler) apiExport(r *apiRequest) (int, any, error) {
	id, err := pathID(r, "id")
	if err != nil {
		return 0, nil, err
	}
	var in struct {
		CaseID string `json:"caseId"`
	}
	if err := decodeBody(r, &in); err != nil {
		return 0, nil, err
	}
	var fe fieldErrors
	fe.text("caseId", in.CaseID, linkspec.MaxIDLength, false)
	if in.CaseID == "" {
		in.CaseID = r.s.CaseID
	}
	if in.CaseID == "" {
		fe.add("caseId", "required: the session has no case")
	}
	if err := fe.err(); err != nil {
		return 0, nil, err
	}
	w, err := h.cfg.Store.Workout(r.Context(), r.org(), id)
	if err != nil {
		return 0, nil, err
	}
	now := h.cfg.Now()
	plan := casepdf.Plan{Organization: r.s.Organization.Name, Title: w.Title, Notes: w.Notes, Author: w.OwnerName,
		CaseID: in.CaseID, Date: now, Language: h.apiLanguage(r)}
	if plan.Author == "" {
		plan.Author = r.s.Account.DisplayName
	}
	if w.Person != nil {
		plan.Person, plan.PersonBirthDate = w.Person.Name(), w.Person.BirthDate
	}
	for _, it := range w.Items {
		plan.Items = append(plan.Items, casepdf.Item{Name: it.Exercise.Name, Dose: doseText(plan.Language, it), Note: it.Note})
	}
	pdf, err := casepdf.Render(plan)
	if err != nil {
		return 0, nil, err
	}
	// The file name holds no personal data: it travels in download folders and mail.
	name := fmt.Sprintf("workout-plan-%d-%s.pdf", w.ID, now.UTC().Format("20060102-150405"))
	e, err := h.cfg.Store.AddCaseExport(r.Context(), r.org(), r.s.Account.ID, store.CaseExport{CaseID: in.CaseID, WorkoutID: w.ID, Filename: name}, pdf)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusCreated, exportOut(e), nil
}

// doseText is an item's dose as the printout shows it: "3 x 10, 5 kg, rest 60 s", a hold
// "3 x 30 s".
func doseText(lang string, it store.Item) string {
	var parts []string
	sets := max(it.Sets, 1)
	switch {
	case it.Reps > 0:
		parts = append(parts, fmt.Sprintf("%d x %d", sets, it.Reps))
		if it.HoldSeconds > 0 {
			parts = append(parts, i18n.T(lang, "dose.hold", "seconds", strconv.Itoa(it.HoldSeconds)))
		}
	case it.HoldSeconds > 0:
		parts = append(parts, fmt.Sprintf("%d x %d s", sets, it.HoldSeconds))
	case it.Sets > 0:
		parts = append(parts, i18n.T(lang, "dose.sets", "n", strconv.Itoa(it.Sets)))
	}
	if it.Load != "" {
		parts = append(parts, it.Load)
	}
	if it.RestSeconds > 0 {
		parts = append(parts, i18n.T(lang, "dose.rest", "seconds", strconv.Itoa(it.RestSeconds)))
	}
	return strings.Join(parts, ", ")
}

func (h *Handler) apiCaseExports(r *apiRequest) (int, any, error) {
	caseID := r.PathValue("caseId")
	var fe fieldErrors
	fe.text("caseId", caseID, linkspec.MaxIDLength, false)
	if err := fe.err(); err != nil {
		return 0, nil, err
	}
	es, err := h.cfg.Store.CaseExports(r.Context(), r.org(), caseID)
	if err != nil {
		return 0, nil, err
	}
	out := make([]exportJSON, len(es))
	for i := range es {
		out[i] = exportOut(&es[i])
	}
	return http.StatusOK, map[string]any{"exports": out}, nil
}

// apiExportPDF downloads an archived export: /app/api/exports/{id}.pdf.
func (h *Handler) apiExportPDF(r *apiRequest) (int, any, error) {
	digits, ok := strings.CutSuffix(r.PathValue("file"), ".pdf")
	id, err := strconv.ParseInt(digits, 10, 64)
	if !ok || err != nil || id <= 0 {
		return 0, nil, invalid(problem.FieldError{Field: "id", Reason: "must be {id}.pdf with a positive integer id"})
	}
	e, pdf, err := h.cfg.Store.CaseExportPDF(r.Context(), r.org(), id)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, file{contentType: "application/pdf", data: pdf,
		disposition: mime.FormatMediaType("attachment", map[string]string{"filename": e.Filename})}, nil
}
