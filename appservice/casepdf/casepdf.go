// Package casepdf renders a workout plan as the PDF printout that is archived under a
// case id. It takes its own plain input, so that it depends on nothing of the application,
// and embeds DejaVu Sans (fonts/LICENSE), which covers Latin, Greek and Cyrillic names.
package casepdf

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/go-pdf/fpdf"

	"github.com/partnergate/partnergate/i18n"
)

// Plan is what the printout shows.
type Plan struct {
	Organization    string
	Person          string
	PersonBirthDate string // yyyy-MM-dd or ""
	Title           string
	Notes           string
	Author          string
	CaseID          string
	Date            time.Time // printed as the plan's date and the document's creation date
	// Language is the i18n code the document is written in (its labels, dates); English
	// when empty or unknown.
	Language string
	Items    []Item
}

// Item is one exercise of the plan.
type Item struct {
	Name string
	Dose string // e.g. "3 x 10, 5 kg, rest 60 s"
	Note string
}

var (
	//go:embed fonts/DejaVuSans.ttf
	regularTTF []byte
	//go:embed fonts/DejaVuSans-Bold.ttf
	boldTTF []byte
)

// Page geometry in millimetres (A4 portrait) and the palette.
const (
	pageW, pageH = 210.0, 297.0
	marginX      = 18.0
	marginTop    = 16.0
	contentW     = pageW - 2*marginX
	bodyBottom   = pageH - 20.0 // the footer lives below
	lineH        = 4.6
	rowPad       = 1.8
	headerRowH   = 7.0
	family       = "DejaVu"
)

var (
	accent   = [3]int{31, 95, 107}
	muted    = [3]int{96, 110, 116}
	ink      = [3]int{30, 34, 36}
	panel    = [3]int{238, 243, 244}
	zebra    = [3]int{247, 249, 250}
	ruleGray = [3]int{205, 213, 216}
)

// columns of the exercise table: number, name, dose, note; title is a catalogue key.
var columns = []struct {
	title string
	width float64
	align string
}{
	{"pdf.number", 9, "R"},
	{"pdf.exercise", 58, "L"},
	{"pdf.dose", 47, "L"},
	{"pdf.note", contentW - 9 - 58 - 47, "L"},
}

// Render returns the plan as a PDF. The same plan gives the same bytes: the document dates
// come from Plan.Date and fpdf's catalogs are sorted, so an archived export's hash can be
// reproduced.
func Render(p Plan) ([]byte, error) {
	if p.Date.IsZero() {
		return nil, errors.New("rendering plan: no date")
	}
	p = cleanPlan(p)
	// "Page n of N" needs N before the first footer is drawn. fpdf's page-count alias is
	// replaced after layout, which would leave the right-aligned footer measured for the
	// alias and its digits possibly missing from the font subset; a first pass counts.
	_, pages, err := render(p, 0)
	if err != nil {
		return nil, err
	}
	out, _, err := render(p, pages)
	return out, err
}

// doc is one rendering pass.
type doc struct {
	pdf   *fpdf.Fpdf
	plan  Plan
	pages int // total for the footer; 0 in the counting pass
}

// render lays the plan out; with pages 0 it only counts the pages.
func render(p Plan, pages int) ([]byte, int, error) {
	pdf := fpdf.New("P", "mm", "A4", "")
	pdf.SetCatalogSort(true)
	pdf.SetCreationDate(p.Date)
	pdf.SetModificationDate(p.Date)
	pdf.SetProducer("partnergate", false)
	pdf.SetCreator("partnergate", false)
	pdf.SetTitle(p.Title, true)
	pdf.SetAuthor(p.Author, true)
	pdf.AddUTF8FontFromBytes(family, "", regularTTF)
	pdf.AddUTF8FontFromBytes(family, "B", boldTTF)
	pdf.SetMargins(marginX, marginTop, marginX)
	pdf.SetAutoPageBreak(false, 0) // rows and notes break pages themselves
	d := &doc{pdf: pdf, plan: p, pages: pages}
	pdf.SetHeaderFunc(d.pageHeader)
	pdf.SetFooterFunc(d.pageFooter)

	pdf.AddPage()
	d.titleBlock()
	d.notes()
	d.table()
	if pages == 0 {
		if err := pdf.Error(); err != nil {
			return nil, 0, fmt.Errorf("rendering plan: %v", err)
		}
		return nil, pdf.PageCount(), nil
	}
	var buf bytes.Buffer
	if err := pdf.Output(&buf); err != nil {
		return nil, 0, fmt.Errorf("rendering plan: %v", err)
	}
	return buf.Bytes(), pages, nil
}

func (d *doc) font(style string, size float64, color [3]int) {
	d.pdf.SetFont(family, style, size)
	d.pdf.SetTextColor(color[0], color[1], color[2])
}

// textAt writes one line in a box of width w at (x, y).
func (d *doc) textAt(x, y, w, h float64, s, align string) {
	d.pdf.SetXY(x, y)
	d.pdf.CellFormat(w, h, s, "", 0, align, false, 0, "")
}

// fit shortens s with an ellipsis until it fits in w with the current font. fpdf adds up
// glyph widths without kerning, so one pass over the runes finds the cut.
func (d *doc) fit(s string, w float64) string {
	w -= 2 * d.pdf.GetCellMargin()
	if d.pdf.GetStringWidth(s) <= w {
		return s
	}
	room := w - d.pdf.GetStringWidth("…")
	used, cut := 0.0, 0
	for i, r := range s {
		if used += d.pdf.GetStringWidth(string(r)); used > room {
			cut = i
			break
		}
	}
	return strings.TrimRightFunc(s[:cut], unicode.IsSpace) + "…"
}

// split wraps s to width w with the current font; an empty text is one empty line.
func (d *doc) split(s string, w float64) []string {
	lines := d.pdf.SplitText(s, w)
	if len(lines) == 0 {
		return []string{""}
	}
	return lines
}

func (d *doc) rule(y float64, color [3]int, width float64) {
	d.pdf.SetDrawColor(color[0], color[1], color[2])
	d.pdf.SetLineWidth(width)
	d.pdf.Line(marginX, y, pageW-marginX, y)
}

// pageHeader runs at the start of every page; the first page has the title block instead.
func (d *doc) pageHeader() {
	if d.pdf.PageNo() == 1 {
		return
	}
	d.font("B", 8.5, accent)
	d.textAt(marginX, marginTop-4, contentW*0.7, 5, d.fit(d.plan.Title+" · "+d.plan.Person, contentW*0.7), "L")
	d.font("", 8.5, muted)
	d.textAt(marginX+contentW*0.7, marginTop-4, contentW*0.3, 5, d.fit(d.t("pdf.case", "case", d.plan.CaseID), contentW*0.3), "R")
	d.rule(marginTop+1.5, ruleGray, 0.3)
	d.pdf.SetY(marginTop + 5)
}

func (d *doc) pageFooter() {
	y := pageH - 14
	d.rule(y, ruleGray, 0.3)
	d.font("", 7.5, muted)
	left := d.plan.Organization
	if d.plan.CaseID != "" {
		left += " · " + d.t("pdf.case", "case", d.plan.CaseID)
	}
	d.textAt(marginX, y+1.5, contentW*0.75, 4.5, d.fit(left, contentW*0.75), "L")
	page := d.t("pdf.page", "n", strconv.Itoa(d.pdf.PageNo()))
	if d.pages > 0 {
		page = d.t("pdf.page_of", "n", strconv.Itoa(d.pdf.PageNo()), "total", strconv.Itoa(d.pages))
	}
	d.textAt(marginX+contentW*0.75, y+1.5, contentW*0.25, 4.5, page, "R")
}

// titleBlock draws the first page's head: organization, title and the facts panel.
func (d *doc) titleBlock() {
	p := d.plan
	y := marginTop
	d.font("B", 11, accent)
	d.textAt(marginX, y, contentW*0.65, 6, d.fit(p.Organization, contentW*0.65), "L")
	d.font("B", 8, muted)
	d.textAt(marginX+contentW*0.65, y, contentW*0.35, 6, strings.ToUpper(d.t("pdf.label")), "R")
	y += 7.5
	d.rule(y, accent, 0.7)
	y += 4

	d.font("B", 18, ink)
	title := p.Title
	if title == "" {
		title = d.t("pdf.untitled")
	}
	for _, line := range d.split(title, contentW) {
		d.textAt(marginX, y, contentW, 8, line, "L")
		y += 8
	}
	y += 3

	facts := [][2]string{
		{d.t("pdf.person"), p.Person}, {d.t("pdf.birthdate"), d.birthDate()},
		{d.t("pdf.instructor"), p.Author}, {d.t("pdf.date"), i18n.DateTime(d.lang(), p.Date)},
		{d.t("pdf.case_id"), p.CaseID}, {d.t("pdf.exercises"), strconv.Itoa(len(p.Items))},
	}
	const cellH, pad = 11.0, 3.0
	rows := (len(facts) + 1) / 2
	d.pdf.SetFillColor(panel[0], panel[1], panel[2])
	d.pdf.RoundedRect(marginX, y, contentW, float64(rows)*cellH+2*pad, 2, "1234", "F")
	colW := (contentW - 2*pad) / 2
	for i, f := range facts {
		x := marginX + pad + float64(i%2)*colW
		fy := y + pad + float64(i/2)*cellH
		d.font("B", 7, muted)
		d.textAt(x, fy+0.5, colW, 4, strings.ToUpper(f[0]), "L")
		value := f[1]
		if value == "" {
			value = "–"
		}
		d.font("", 10.5, ink)
		if i == 0 {
			d.font("B", 10.5, ink)
		}
		d.textAt(x, fy+4.5, colW-4, 5.5, d.fit(value, colW-4), "L")
	}
	d.pdf.SetY(y + float64(rows)*cellH + 2*pad + 6)
}

// notes prints the plan's notes, if any, breaking pages between lines.
func (d *doc) notes() {
	if strings.TrimSpace(d.plan.Notes) == "" {
		return
	}
	d.font("B", 10, accent)
	d.textAt(marginX, d.pdf.GetY(), contentW, 6, d.t("pdf.notes"), "L")
	d.pdf.SetY(d.pdf.GetY() + 6.5)
	d.font("", 9.5, ink)
	for _, line := range d.split(d.plan.Notes, contentW) {
		if d.pdf.GetY()+lineH > bodyBottom {
			d.pdf.AddPage()
			d.font("", 9.5, ink)
		}
		d.textAt(marginX, d.pdf.GetY(), contentW, lineH, line, "L")
		d.pdf.SetY(d.pdf.GetY() + lineH)
	}
	d.pdf.SetY(d.pdf.GetY() + 5)
}

func (d *doc) tableHeader() {
	y := d.pdf.GetY()
	d.pdf.SetFillColor(accent[0], accent[1], accent[2])
	d.pdf.Rect(marginX, y, contentW, headerRowH, "F")
	d.font("B", 8.5, [3]int{255, 255, 255})
	x := marginX
	for _, c := range columns {
		d.textAt(x, y, c.width, headerRowH, d.t(c.title), c.align)
		x += c.width
	}
	d.pdf.SetY(y + headerRowH)
}

// cellStyle is the font of each column's text.
var cellStyle = []struct {
	style string
	size  float64
	color [3]int
}{
	{"", 9, muted}, {"B", 9.5, ink}, {"", 9.5, ink}, {"", 9, ink},
}

// table prints one row per exercise. A row that does not fit on the rest of a page moves
// to the next one, with the table header repeated; a row taller than a page is split
// between lines.
func (d *doc) table() {
	if d.pdf.GetY()+headerRowH+lineH+2*rowPad > bodyBottom {
		d.pdf.AddPage()
	}
	d.tableHeader()
	if len(d.plan.Items) == 0 {
		d.font("", 9.5, muted)
		d.textAt(marginX, d.pdf.GetY()+rowPad, contentW, lineH, d.t("pdf.no_items"), "L")
		return
	}
	for i, it := range d.plan.Items {
		cells := make([][]string, len(columns))
		n := 1
		for c, s := range []string{strconv.Itoa(i+1) + ".", it.Name, it.Dose, it.Note} {
			st := cellStyle[c]
			d.font(st.style, st.size, st.color)
			cells[c] = d.split(s, columns[c].width)
			n = max(n, len(cells[c]))
		}
		rowH := float64(n)*lineH + 2*rowPad
		fresh := bodyBottom - (marginTop + 5 + headerRowH)
		if d.pdf.GetY()+rowH > bodyBottom && rowH <= fresh {
			d.newTablePage()
		}
		for start := 0; start < n; {
			k := min(int((bodyBottom-d.pdf.GetY()-2*rowPad)/lineH), n-start)
			if k < 1 {
				d.newTablePage()
				continue
			}
			d.row(i, cells, start, start+k)
			if start += k; start < n {
				d.newTablePage()
			}
		}
	}
}

func (d *doc) newTablePage() {
	d.pdf.AddPage()
	d.tableHeader()
}

// row draws lines [from, to) of each cell of exercise i as one band. A band that
// continues a row from the page before repeats its number and says so.
func (d *doc) row(i int, cells [][]string, from, to int) {
	y := d.pdf.GetY()
	h := float64(to-from)*lineH + 2*rowPad
	if i%2 == 1 {
		d.pdf.SetFillColor(zebra[0], zebra[1], zebra[2])
		d.pdf.Rect(marginX, y, contentW, h, "F")
	}
	x := marginX
	for c, col := range columns {
		st := cellStyle[c]
		d.font(st.style, st.size, st.color)
		lines := cells[c][min(from, len(cells[c])):min(to, len(cells[c]))]
		if from > 0 && len(lines) == 0 && c < 2 {
			lines = []string{cells[0][0]}
			if c == 1 {
				d.font("", 8.5, muted)
				lines = []string{"(continued)"}
			}
		}
		for j, line := range lines {
			d.textAt(x, y+rowPad+float64(j)*lineH, col.width, lineH, line, col.align)
		}
		x += col.width
	}
	d.rule(y+h, ruleGray, 0.2)
	d.pdf.SetY(y + h)
}

// cleanPlan makes every text printable: fpdf indexes its width table by rune and has no
// entries beyond the Basic Multilingual Plane, and control characters have no glyph.
// Notes keep their line breaks; single-line fields lose them.
func cleanPlan(p Plan) Plan {
	p.Organization, p.Person, p.PersonBirthDate = clean(p.Organization, false), clean(p.Person, false), clean(p.PersonBirthDate, false)
	p.Title, p.Author, p.CaseID = clean(p.Title, false), clean(p.Author, false), clean(p.CaseID, false)
	p.Notes = clean(p.Notes, true)
	items := make([]Item, len(p.Items))
	for i, it := range p.Items {
		items[i] = Item{Name: clean(it.Name, false), Dose: clean(it.Dose, false), Note: clean(it.Note, true)}
	}
	p.Items = items
	return p
}

func clean(s string, multiline bool) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.TrimSpace(strings.Map(func(r rune) rune {
		switch {
		case r == '\n' && multiline:
			return r
		case unicode.IsControl(r) || unicode.IsSpace(r):
			return ' '
		case r > 0xFFFF:
			return '?'
		}
		return r
	}, s))
}

// lang is the document's language: the plan's when the catalogue has it, else English.
func (d *doc) lang() string {
	if i18n.Supported(d.plan.Language) {
		return d.plan.Language
	}
	return i18n.Default
}

// t is the catalogue's message key in the document's language.
func (d *doc) t(key string, args ...string) string {
	return i18n.T(d.lang(), key, args...)
}

// birthDate is the person's birth date as the document's language writes a date.
func (d *doc) birthDate() string {
	return i18n.Day(d.lang(), d.plan.PersonBirthDate)
}
