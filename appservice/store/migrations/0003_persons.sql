-- Persons keyed by partner identities and linked to organizations separately (issue 15), and
-- the exercise and workout plan application's tables. Contacts become persons with the same
-- ids, so links, sessions and member accounts keep pointing at the same people.

CREATE TABLE legacy_contacts AS
SELECT c.id, c.organization_id, o.partner, c.partner_contact_id, c.ssn_hash, c.firstname, c.middlename, c.lastname,
	c.birthdate, c.gender, c.email, c.mobile, c.diagnosis, c.created_at, c.updated_at
FROM contacts c JOIN organizations o ON o.id = c.organization_id;

@CONTACTS_TO_PERSONS@

ALTER TABLE persons ADD COLUMN phone_home TEXT NOT NULL DEFAULT '';
ALTER TABLE persons ADD COLUMN phone_work TEXT NOT NULL DEFAULT '';
ALTER TABLE persons ADD COLUMN address TEXT NOT NULL DEFAULT '';
ALTER TABLE persons ADD COLUMN country TEXT NOT NULL DEFAULT '';
ALTER TABLE persons ADD COLUMN zipcode TEXT NOT NULL DEFAULT '';
ALTER TABLE persons ADD COLUMN location TEXT NOT NULL DEFAULT '';
-- Unknown members of selectperson, kept verbatim as a JSON object.
ALTER TABLE persons ADD COLUMN extra TEXT NOT NULL DEFAULT '{}';

-- Stored genders are '', 'female' or 'male'; links carried free text before.
UPDATE persons SET gender = CASE LOWER(gender)
	WHEN 'female' THEN 'female' WHEN 'f' THEN 'female' WHEN 'k' THEN 'female'
	WHEN 'male' THEN 'male' WHEN 'm' THEN 'male' ELSE '' END;

CREATE INDEX persons_ssn ON persons (ssn_hash);

-- A partner's ids of a person; one person may have several (matched by ssn across the
-- partner's organizations).
CREATE TABLE person_identities (
	partner TEXT NOT NULL,
	partner_person_id TEXT NOT NULL,
	person_id BIGINT NOT NULL REFERENCES persons (id),
	created_at BIGINT NOT NULL,
	PRIMARY KEY (partner, partner_person_id)
);

CREATE INDEX person_identities_person ON person_identities (person_id);

-- Contacts of one partner id in two organizations were two contacts; the older one keeps the
-- id, the newer stays a person of its organization without it.
INSERT INTO person_identities (partner, partner_person_id, person_id, created_at)
SELECT partner, partner_contact_id, id, created_at FROM legacy_contacts WHERE true ORDER BY id
ON CONFLICT DO NOTHING;

-- custom_id is the person's id as the organization's desktop program knows it; not unique.
CREATE TABLE person_organizations (
	person_id BIGINT NOT NULL REFERENCES persons (id),
	organization_id BIGINT NOT NULL REFERENCES organizations (id),
	custom_id TEXT NOT NULL,
	created_at BIGINT NOT NULL,
	updated_at BIGINT NOT NULL,
	PRIMARY KEY (person_id, organization_id)
);

CREATE INDEX person_organizations_custom_id ON person_organizations (organization_id, custom_id);

INSERT INTO person_organizations (person_id, organization_id, custom_id, created_at, updated_at)
SELECT id, organization_id, partner_contact_id, created_at, updated_at FROM legacy_contacts;

DROP TABLE legacy_contacts;

-- measured_at is Unix milliseconds, 0 when the entry has no date; re-sending an entry with the
-- same key, date and source updates it.
CREATE TABLE profile_entries (
	id @IDENTITY@,
	person_id BIGINT NOT NULL REFERENCES persons (id),
	organization_id BIGINT NOT NULL REFERENCES organizations (id),
	key TEXT NOT NULL,
	name TEXT NOT NULL,
	value TEXT NOT NULL,
	unit TEXT NOT NULL,
	measured_at BIGINT NOT NULL,
	source TEXT NOT NULL,
	description TEXT NOT NULL,
	extra TEXT NOT NULL,
	created_at BIGINT NOT NULL,
	updated_at BIGINT NOT NULL,
	UNIQUE (person_id, organization_id, key, measured_at, source)
);

-- organization_id NULL is the global catalogue.
CREATE TABLE exercises (
	id @IDENTITY@,
	organization_id BIGINT REFERENCES organizations (id),
	name TEXT NOT NULL,
	category TEXT NOT NULL,
	body_part TEXT NOT NULL,
	equipment TEXT NOT NULL,
	instructions TEXT NOT NULL,
	created_at BIGINT NOT NULL
);

CREATE INDEX exercises_organization ON exercises (organization_id, name);

-- organization_id is NULL only for global templates; person_id (the executor) is NULL for
-- templates.
CREATE TABLE workouts (
	id @IDENTITY@,
	organization_id BIGINT REFERENCES organizations (id),
	person_id BIGINT REFERENCES persons (id),
	owner_account_id BIGINT REFERENCES accounts (id),
	title TEXT NOT NULL,
	notes TEXT NOT NULL,
	is_template INTEGER NOT NULL,
	created_at BIGINT NOT NULL,
	updated_at BIGINT NOT NULL
);

CREATE INDEX workouts_organization ON workouts (organization_id, updated_at);
CREATE INDEX workouts_person ON workouts (person_id);

CREATE TABLE workout_items (
	id @IDENTITY@,
	workout_id BIGINT NOT NULL REFERENCES workouts (id),
	position INTEGER NOT NULL,
	exercise_id BIGINT NOT NULL REFERENCES exercises (id),
	sets INTEGER NOT NULL,
	reps INTEGER NOT NULL,
	hold_seconds INTEGER NOT NULL,
	load TEXT NOT NULL,
	rest_seconds INTEGER NOT NULL,
	note TEXT NOT NULL
);

CREATE INDEX workout_items_workout ON workout_items (workout_id, position);

-- An exported plan PDF, archived under a case id of the partner's system.
CREATE TABLE case_exports (
	id @IDENTITY@,
	organization_id BIGINT NOT NULL REFERENCES organizations (id),
	case_id TEXT NOT NULL,
	workout_id BIGINT NOT NULL REFERENCES workouts (id),
	person_id BIGINT REFERENCES persons (id),
	filename TEXT NOT NULL,
	sha256 TEXT NOT NULL,
	size BIGINT NOT NULL,
	pdf @BLOB@ NOT NULL,
	created_by_account_id BIGINT NOT NULL REFERENCES accounts (id),
	created_at BIGINT NOT NULL
);

CREATE INDEX case_exports_case ON case_exports (organization_id, case_id);

-- An instructor's organizations; a password sign-in lands in the most recent one.
CREATE TABLE memberships (
	account_id BIGINT NOT NULL REFERENCES accounts (id),
	organization_id BIGINT NOT NULL REFERENCES organizations (id),
	role TEXT NOT NULL,
	created_at BIGINT NOT NULL,
	PRIMARY KEY (account_id, organization_id)
);

-- Instructors linked to employees are members of the organizations their links came from.
INSERT INTO memberships (account_id, organization_id, role, created_at)
SELECT e.account_id, l.organization_id, 'instructor', MIN(l.created_at)
FROM links l JOIN employees e ON e.id = l.employee_id
WHERE e.account_id IS NOT NULL
GROUP BY e.account_id, l.organization_id;

-- The session's case starts as its link's caseId and can be set later.
ALTER TABLE sessions ADD COLUMN case_id TEXT NOT NULL DEFAULT '';
UPDATE sessions SET case_id = COALESCE((SELECT l.case_id FROM links l WHERE l.id = sessions.link_id), '');
