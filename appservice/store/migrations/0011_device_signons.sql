-- Device sign-on credentials (issue 35, B-SSO): a desktop wrapper's remembered sign-on of
-- an instructor, issued for one external user on one wrapper installation and exchanged at
-- the wrapper's start for a fresh session, rotating at every use. One row of
-- device_signons is one signed-in desktop (the credential's family); device_secrets holds
-- the SHA-256 of each secret the family was given, the current one with used_at NULL, so
-- that a second use of a rotated secret is told from an unknown one (OAuth 2.0 Security
-- BCP, RFC 9700 §4.14.2: refresh token reuse detection) and ends the family.
-- password_stamp is the SHA-256 of the account's password hash when the family was issued:
-- a password changed in any way ends it. The lifetimes (idle since last_used_at, absolute
-- since created_at) are the app service's settings, read at each use.
CREATE TABLE device_signons (
	id @IDENTITY@,
	account_id BIGINT NOT NULL REFERENCES accounts (id),
	organization_id BIGINT REFERENCES organizations (id),
	external_user TEXT NOT NULL,
	installation TEXT NOT NULL,
	computer TEXT NOT NULL,
	password_stamp TEXT NOT NULL,
	created_at BIGINT NOT NULL,
	last_used_at BIGINT NOT NULL
);
CREATE INDEX device_signons_account ON device_signons (account_id);
CREATE TABLE device_secrets (
	secret_hash TEXT PRIMARY KEY,
	device_id BIGINT NOT NULL REFERENCES device_signons (id),
	used_at BIGINT
);
CREATE INDEX device_secrets_device ON device_secrets (device_id);
-- The session a device sign-on started: it cannot issue another credential (a family never
-- forks), and revoking the desktop ends it. It only adds a nullable column: instances of the
-- previous release keep working beside it.
ALTER TABLE sessions ADD COLUMN device_id BIGINT REFERENCES device_signons (id);
