package store

import "context"

// SetAccountLanguage saves lang, a language code the caller checked (or "" for none), as
// the account's choice. An account that does not exist is ErrNotFound.
func (s *Store) SetAccountLanguage(ctx context.Context, accountID int64, lang string) error {
	res, err := s.db.ExecContext(ctx, s.q(`UPDATE accounts SET language = ?, updated_at = ? WHERE id = ?`), lang, s.now(), accountID)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return ErrNotFound
	}
	return nil
}
