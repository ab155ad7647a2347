-- What a session may see of a member's plans follows what proved who holds it (issue 34).
-- 'organization': the session's organization only. Every partner link's session (a link is
-- one organization's word about who holds it, and whoever holds the link opens it) and
-- every instructor's. 'member': every organization of the member account, for a member who
-- proved who they are with a national electronic ID. The narrow scope is the default: a
-- session started before this migration, or by a statement that names no scope, sees its
-- organization only. It only adds a column with a default: instances of the previous
-- release keep working beside it (their member sessions, all from links, see every clinic's
-- plans until they are upgraded).
ALTER TABLE sessions ADD COLUMN scope TEXT NOT NULL DEFAULT 'organization' CHECK (scope IN ('organization', 'member'));
