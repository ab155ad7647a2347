-- The gateway's request ids of resolved links, kept while their gateway assertion could
-- still be accepted: a replayed assertion finds its id here and is refused.
CREATE TABLE used_requests (
	request_id TEXT PRIMARY KEY,
	expires_at BIGINT NOT NULL
);

CREATE INDEX used_requests_expires_at ON used_requests (expires_at);
