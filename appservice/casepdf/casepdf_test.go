package casepdf

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func samplePlan() Plan {
	return Plan{
		Organization:    "Fysioterapi Nord AS",
		Person:          "Åsa Ørnø-Łukasz Müller",
		PersonBirthDate: "1956-11-02",
		Title:           "Knee rehabilitation, week 1",
		Notes: "Warm up for 5 minutes on the exercise bike before you start. Stop an exercise if the pain " +
			"in the knee rises above 5 on a scale of 10, and tell your physiotherapist at the next visit.\n" +
			"Do the programme every second day.",
		Author: "Ines Brønstad",
		CaseID: "CASE-2024-0042",
		Date:   time.Date(2024, 3, 5, 14, 30, 0, 0, time.UTC),
		Items: []Item{
			{"Sit-to-stand", "3 x 10, rest 60 s", "Arms crossed over the chest; stand up fully."},
			{"Heel slide", "2 x 15", ""},
			{"Straight leg raise", "3 x 12, 1 kg, rest 45 s", "Tighten the thigh first, then lift to the height of the other knee. Lower slowly over three seconds, keep the back flat on the floor."},
			{"Wall sit", "3 x hold 30 s, rest 60 s", "Knees above the ankles, not in front of the toes."},
			{"Step-up", "3 x 8 each leg, 5 kg", "Use a 15 cm step."},
			{"Calf raise", "3 x 15", "Hold on to a chair for balance."},
			{"Bridge", "3 x 12, rest 45 s", ""},
			{"Clamshell", "2 x 15 each side, band", "Keep the heels together."},
			{"Hamstring stretch", "3 x hold 30 s", "Do not bounce."},
			{"Άσκηση ισορροπίας", "3 x hold 20 s", "Στάση σε ένα πόδι."},
			{"Приседания у стены", "2 x 10", "Медленно вниз."},
			{"Hip flexor stretch", "2 x hold 30 s each side", ""},
		},
	}
}

// TestRenderReadsBack reads the PDF with poppler's pdftotext, as a person's PDF viewer
// would show it, and keeps a PNG of page 1 under integration/artifacts/casepdf/.
func TestRenderReadsBack(t *testing.T) {
	for _, tool := range []string{"pdftotext", "pdftoppm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not found: apt-get install poppler-utils (scripts/test-deps.sh does)", tool)
		}
	}
	plan := samplePlan()
	// Enough exercises for a second page, to see the table header repeated.
	for i := range 14 {
		plan.Items = append(plan.Items, Item{fmt.Sprintf("Bird dog, variation %d", i+1), "2 x 10 each side", "Slow and controlled."})
	}
	out, err := Render(plan)
	if err != nil {
		t.Fatalf("Render() error: %v", err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "plan.pdf")
	if err := os.WriteFile(file, out, 0o644); err != nil {
		t.Fatal(err)
	}
	// -raw keeps the content stream's order, which is cell by cell, so a wrapped cell
	// reads as one text; whitespace is then folded to single spaces.
	txt, err := exec.Command("pdftotext", "-raw", "-enc", "UTF-8", file, "-").CombinedOutput()
	if err != nil {
		t.Fatalf("pdftotext: %v: %s", err, txt)
	}
	got := strings.Join(strings.Fields(string(txt)), " ")
	want := []string{plan.Person, plan.CaseID, plan.Organization, plan.Title, plan.Author, plan.PersonBirthDate, "2024-03-05 14:30",
		"Do the programme every second day.", "Page 1 of 2", "Page 2 of 2"}
	for i, it := range plan.Items {
		want = append(want, fmt.Sprintf("%d. %s %s", i+1, it.Name, it.Dose), it.Note)
	}
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("pdftotext output lacks %q:\n%s", w, txt)
		}
	}
	if n := strings.Count(got, "# Exercise Dose Note"); n != 2 {
		t.Errorf("table header appears %d times on 2 pages, want 2", n)
	}

	png, err := exec.Command("pdftoppm", "-png", "-r", "60", "-f", "1", "-l", "1", "-singlefile", file, filepath.Join(dir, "page")).CombinedOutput()
	if err != nil {
		t.Fatalf("pdftoppm: %v: %s", err, png)
	}
	keepArtifact(t, filepath.Join(dir, "page.png"), "plan-page1.png")
}

// TestRenderLanguages: the document's labels, dates and dose words are the plan's
// language's, as pdftotext reads them; the person's data stays as it is.
func TestRenderLanguages(t *testing.T) {
	for _, tt := range []struct {
		lang string
		want []string
	}{
		{"nb", []string{"TRENINGSPROGRAM", "FØDSELSDATO", "02.11.1956", "05.03.2024 14:30", "# Øvelse Dosering Merknad", "Sak CASE-2024-0042", "Side 1 av 1", "Notater"}},
		{"sv", []string{"TRÄNINGSPROGRAM", "FÖDELSEDATUM", "1956-11-02", "2024-03-05 14:30", "# Övning Dos Anteckning", "Ärende CASE-2024-0042", "Sida 1 av 1"}},
		{"da", []string{"TRÆNINGSPROGRAM", "FØDSELSDATO", "02.11.1956", "05.03.2024 14.30", "# Øvelse Dosering Note", "Sag CASE-2024-0042", "Side 1 af 1"}},
		{"de", []string{"TRAININGSPROGRAMM", "GEBURTSDATUM", "02.11.1956", "05.03.2024 14:30", "# Übung Dosierung Notiz", "Fall CASE-2024-0042", "Seite 1 von 1"}},
		{"", []string{"TRAINING PROGRAM", "DATE OF BIRTH", "1956-11-02", "2024-03-05 14:30", "# Exercise Dose Note", "Case CASE-2024-0042", "Page 1 of 1"}},
	} {
		t.Run(tt.lang, func(t *testing.T) {
			plan := samplePlan()
			plan.Language = tt.lang
			out, err := Render(plan)
			if err != nil {
				t.Fatalf("Render() error: %v", err)
			}
			dir := t.TempDir()
			file := filepath.Join(dir, "plan.pdf")
			if err := os.WriteFile(file, out, 0o644); err != nil {
				t.Fatal(err)
			}
			txt, err := exec.Command("pdftotext", "-raw", "-enc", "UTF-8", file, "-").CombinedOutput()
			if err != nil {
				t.Fatalf("pdftotext: %v: %s", err, txt)
			}
			got := strings.Join(strings.Fields(string(txt)), " ")
			for _, w := range append(tt.want, plan.Person, plan.Title) {
				if !strings.Contains(got, w) {
					t.Errorf("Render(%s): pdftotext output lacks %q:\n%s", tt.lang, w, txt)
				}
			}
			if tt.lang == "nb" {
				png, err := exec.Command("pdftoppm", "-png", "-r", "60", "-f", "1", "-l", "1", "-singlefile", file, filepath.Join(dir, "page")).CombinedOutput()
				if err != nil {
					t.Fatalf("pdftoppm: %v: %s", err, png)
				}
				keepArtifact(t, filepath.Join(dir, "page.png"), "plan-page1-nb.png")
			}
		})
	}
}

// keepArtifact copies a file to integration/artifacts/casepdf/ for a person to look at.
func keepArtifact(t *testing.T, src, name string) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(root)
		if parent == root {
			t.Fatal("no go.mod above the package folder")
		}
		root = parent
	}
	dir := filepath.Join(root, "integration", "artifacts", "casepdf")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestRenderDeterministic: an archived export's SHA-256 must be reproducible, so the same
// plan gives the same bytes, with the plan's date as the document's and no random id.
func TestRenderDeterministic(t *testing.T) {
	first, err := Render(samplePlan())
	if err != nil {
		t.Fatalf("Render() error: %v", err)
	}
	for range 3 {
		again, err := Render(samplePlan())
		if err != nil || !bytes.Equal(again, first) {
			t.Fatalf("Render() gave different bytes for the same plan (error %v)", err)
		}
	}
	for _, want := range []string{"/CreationDate (D:20240305143000)", "/ModDate (D:20240305143000)"} {
		if !bytes.Contains(first, []byte(want)) {
			t.Errorf("Render() output lacks %s", want)
		}
	}
	if bytes.Contains(first, []byte("/ID")) {
		t.Error("Render() output carries a document /ID")
	}
}

func TestRenderEdges(t *testing.T) {
	long := strings.Repeat("Keep the knee over the second toe and breathe out as you push. ", 120)
	tests := []struct {
		name string
		edit func(*Plan)
	}{
		{"no items", func(p *Plan) { p.Items = nil }},
		{"empty texts", func(p *Plan) { *p = Plan{Date: p.Date, Items: []Item{{}}} }},
		{"row taller than a page", func(p *Plan) { p.Items[1].Note = long }},
		{"notes longer than a page", func(p *Plan) { p.Notes = long }},
		{"single-line fields longer than their box", func(p *Plan) {
			p.Person = strings.Repeat("Åsa Ørnø ", 1000)
			p.Organization, p.CaseID = p.Person, strings.Repeat("C", 5000)
		}},
		{"unbreakable word", func(p *Plan) { p.Items[0].Name = strings.Repeat("x", 400) }},
		{"outside the BMP and controls", func(p *Plan) {
			p.Person = "Emoji 💪\x00\tName\r\n"
			p.Items[0].Note = "line\x07one\r\nline two 𝄞"
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := samplePlan()
			tt.edit(&p)
			out, err := Render(p)
			if err != nil || !bytes.HasPrefix(out, []byte("%PDF-")) {
				t.Fatalf("Render() = %d bytes, error %v; want a PDF", len(out), err)
			}
		})
	}
}

func TestRenderNeedsDate(t *testing.T) {
	p := samplePlan()
	p.Date = time.Time{}
	if _, err := Render(p); err == nil {
		t.Error("Render() with no date succeeded, want an error")
	}
}
