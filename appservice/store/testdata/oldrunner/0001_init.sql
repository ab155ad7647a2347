-- The identity model of the reference app service. @IDENTITY@ is the dialect's
-- auto-numbered primary key; times are Unix milliseconds so both dialects compare them alike.

CREATE TABLE organizations (
	id @IDENTITY@,
	partner TEXT NOT NULL,
	partner_org_id TEXT NOT NULL,
	name TEXT NOT NULL,
	created_at BIGINT NOT NULL,
	updated_at BIGINT NOT NULL,
	UNIQUE (partner, partner_org_id)
);

CREATE TABLE contacts (
	id @IDENTITY@,
	organization_id BIGINT NOT NULL REFERENCES organizations (id),
	partner_contact_id TEXT NOT NULL,
	-- HMAC-SHA256 of the normalised national identity number; the number itself is never stored.
	ssn_hash TEXT,
	firstname TEXT NOT NULL,
	middlename TEXT NOT NULL,
	lastname TEXT NOT NULL,
	birthdate TEXT NOT NULL,
	gender TEXT NOT NULL,
	mobile TEXT NOT NULL,
	email TEXT NOT NULL,
	diagnosis TEXT NOT NULL,
	created_at BIGINT NOT NULL,
	updated_at BIGINT NOT NULL,
	UNIQUE (organization_id, partner_contact_id)
);

CREATE INDEX contacts_ssn ON contacts (organization_id, ssn_hash);

CREATE TABLE accounts (
	id @IDENTITY@,
	role TEXT NOT NULL,
	-- Instructors sign in with username (lower case) or e-mail and a password; members have
	-- neither: they are signed in by their links only.
	username TEXT UNIQUE,
	email TEXT NOT NULL,
	display_name TEXT NOT NULL,
	password_hash TEXT,
	contact_id BIGINT UNIQUE REFERENCES contacts (id),
	created_at BIGINT NOT NULL,
	updated_at BIGINT NOT NULL
);

CREATE TABLE employees (
	id @IDENTITY@,
	partner TEXT NOT NULL,
	partner_employee_id TEXT NOT NULL,
	username TEXT NOT NULL,
	firstname TEXT NOT NULL,
	lastname TEXT NOT NULL,
	email TEXT NOT NULL,
	account_id BIGINT REFERENCES accounts (id),
	created_at BIGINT NOT NULL,
	updated_at BIGINT NOT NULL,
	UNIQUE (partner, partner_employee_id)
);

CREATE TABLE links (
	id @IDENTITY@,
	partner TEXT NOT NULL,
	kind TEXT NOT NULL,
	endpoint TEXT NOT NULL,
	request_id TEXT NOT NULL,
	organization_id BIGINT NOT NULL REFERENCES organizations (id),
	contact_id BIGINT NOT NULL REFERENCES contacts (id),
	employee_id BIGINT REFERENCES employees (id),
	account_id BIGINT REFERENCES accounts (id),
	case_id TEXT NOT NULL,
	created_at BIGINT NOT NULL
);

CREATE TABLE login_codes (
	code_hash TEXT PRIMARY KEY,
	link_id BIGINT NOT NULL REFERENCES links (id),
	expires_at BIGINT NOT NULL,
	used_at BIGINT
);

CREATE TABLE sessions (
	token_hash TEXT PRIMARY KEY,
	-- account_id is NULL while the session only waits for an employee to sign in (pending).
	account_id BIGINT REFERENCES accounts (id),
	employee_id BIGINT REFERENCES employees (id),
	organization_id BIGINT REFERENCES organizations (id),
	contact_id BIGINT REFERENCES contacts (id),
	link_id BIGINT REFERENCES links (id),
	created_at BIGINT NOT NULL,
	expires_at BIGINT NOT NULL
);
