package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"time"
)

// CaseExport is a workout plan PDF archived under a case id.
type CaseExport struct {
	ID        int64
	CaseID    string
	Filename  string
	SHA256    string // hex, of the PDF bytes
	WorkoutID int64
	PersonID  int64 // the plan's executor; 0 for a template
	Size      int
	CreatedAt time.Time
	CreatedBy string // the exporting account's display name
}

// AddCaseExport archives pdf, the export of a workout plan of orgID made by accountID, under
// e.CaseID with e.Filename. The person and hash come from the plan and the bytes; the
// stored export is returned.
func (s *Store) AddCaseExport(ctx context.Context, orgID, accountID int64, e CaseExport, pdf []byte) (*CaseExport, error) {
	sum := sha256.Sum256(pdf)
	var id int64
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var person sql.NullInt64
		err := tx.QueryRowContext(ctx, s.q(`SELECT person_id FROM workouts WHERE id = ? AND organization_id = ?`), e.WorkoutID, orgID).Scan(&person)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, s.q(`INSERT INTO case_exports (organization_id, case_id, workout_id, person_id, filename, sha256, size, pdf, created_by_account_id, created_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`), orgID, e.CaseID, e.WorkoutID, person, e.Filename, hex.EncodeToString(sum[:]), len(pdf), pdf, accountID, s.now()).Scan(&id)
	})
	if err != nil {
		return nil, err
	}
	out, _, err := s.caseExport(ctx, orgID, id, false)
	return out, err
}

const exportColumns = `x.id, x.case_id, x.filename, x.sha256, x.workout_id, x.person_id, x.size, x.created_at, COALESCE(a.display_name, '')`

func scanExport(sc interface{ Scan(...any) error }, extra ...any) (*CaseExport, error) {
	var e CaseExport
	var person sql.NullInt64
	var created int64
	if err := sc.Scan(append([]any{&e.ID, &e.CaseID, &e.Filename, &e.SHA256, &e.WorkoutID, &person, &e.Size, &created, &e.CreatedBy}, extra...)...); err != nil {
		return nil, err
	}
	e.PersonID, e.CreatedAt = person.Int64, time.UnixMilli(created).UTC()
	return &e, nil
}

// CaseExports lists the exports of orgID under caseID, the newest first.
func (s *Store) CaseExports(ctx context.Context, orgID int64, caseID string) ([]CaseExport, error) {
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT `+exportColumns+` FROM case_exports x LEFT JOIN accounts a ON a.id = x.created_by_account_id
WHERE x.organization_id = ? AND x.case_id = ? ORDER BY x.created_at DESC, x.id DESC`), orgID, caseID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []CaseExport{}
	for rows.Next() {
		e, err := scanExport(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *e)
	}
	return out, rows.Err()
}

// CaseExportPDF returns an export of orgID with its PDF bytes.
func (s *Store) CaseExportPDF(ctx context.Context, orgID, id int64) (*CaseExport, []byte, error) {
	return s.caseExport(ctx, orgID, id, true)
}

func (s *Store) caseExport(ctx context.Context, orgID, id int64, withPDF bool) (*CaseExport, []byte, error) {
	pdfCol := `NULL`
	if withPDF {
		pdfCol = `x.pdf`
	}
	var pdf []byte
	e, err := scanExport(s.db.QueryRowContext(ctx, s.q(`SELECT `+exportColumns+`, `+pdfCol+` FROM case_exports x
LEFT JOIN accounts a ON a.id = x.created_by_account_id WHERE x.id = ? AND x.organization_id = ?`), id, orgID), &pdf)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil, ErrNotFound
	}
	if err != nil {
		return nil, nil, err
	}
	return e, pdf, nil
}
