-- The states of directory sign-ins whose callback came, kept until the sign-in would have
-- expired anyway: a state, and so a callback, is good once by the server's record, not only
-- because the browser deletes its flow cookie (issue 34). The hash of the state is kept,
-- never the state. A new table: instances of the previous release keep working beside it.
CREATE TABLE used_directory_states (
	state_hash TEXT PRIMARY KEY,
	expires_at BIGINT NOT NULL
);

CREATE INDEX used_directory_states_expires_at ON used_directory_states (expires_at);
