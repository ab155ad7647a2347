-- The counts of password sign-in attempts (issue 34), where every app service instance on
-- the database sees them: in one process's memory, a guesser got each limit once per
-- instance behind the gateway. One row per counted subject: an address, a (login name,
-- address) pair or a login name, each as a keyed hash, never in clear. window_start and
-- attempts are the fixed window's count; turn_at, on a login name's row, is when the last
-- attempt given a turn may check its password, so that guesses at one login name from many
-- addresses take turns; expires_at is when the row counts for nothing any more
-- (DeleteExpired). A new table: instances of the previous release ignore it and keep their
-- limits in memory until they are upgraded.
CREATE TABLE signin_counts (
	subject TEXT PRIMARY KEY,
	window_start BIGINT NOT NULL,
	attempts INTEGER NOT NULL,
	turn_at BIGINT NOT NULL,
	expires_at BIGINT NOT NULL
);

CREATE INDEX signin_counts_expires ON signin_counts (expires_at);
