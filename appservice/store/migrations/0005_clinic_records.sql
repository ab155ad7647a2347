-- Each organization keeps its own record of a person, and the human behind the records is one
-- member per partner (issue 25). Until now a person matched by partner id or ssn in two
-- organizations was one shared record that both changed and both read.
--
-- What becomes of the shared records (docs/appservice.md, "Migration 0005"):
-- - A person shared by several organizations becomes one record per organization. The
--   organization that had the person first (person_organizations.created_at, then the lower
--   organization id) keeps the id; every other organization's record gets a new id, after
--   the highest. Links, sessions, plans, exports and profile entries of an organization point
--   at its own record afterwards.
-- - The migration cannot tell which organization wrote which value into a shared record, so
--   each record starts with everything its organization saw that day: the fields, and every
--   partner id of its partner. Nothing becomes visible that was not before; from now on no
--   organization's change reaches another's record.
-- - Every person with a partner id is a member; persons of one partner with the same ssn
--   hash are one member (numbered as the oldest of them). Their records, in every
--   organization, point at it, and its partner ids are theirs.
-- - Migration 0003 kept a partner id with the oldest of its contacts only: a second
--   organization's contact of the same id became a person without one. Such a person (no
--   partner id, made by a partner link, its custom id still the id 0003 gave it, which a
--   person of the same partner holds, and no other ssn than that person's) becomes that
--   member's record in its organization again. Else, with the same ssn hash as a member of
--   its partner, it joins that member; else, with a member account, it is a member of its
--   own. A stray that joined a member gets its custom id as its partner id when the id is
--   that member's and no record of its organization holds it.
-- - A member left with two accounts (0003's strays had their own) keeps the account of its
--   oldest person, or else its oldest account; the other accounts are retired (no member, no
--   sessions): a Go link signs in to the kept one, which sees every clinic's plans.

CREATE TABLE members (
	id @IDENTITY@,
	partner TEXT NOT NULL,
	-- The partner id the member was created with: only Go links that carry it change the
	-- member account's name and e-mail. Empty for a member without one (migrated strays).
	partner_person_id TEXT NOT NULL,
	ssn_hash TEXT,
	created_at BIGINT NOT NULL,
	updated_at BIGINT NOT NULL
);

CREATE INDEX members_ssn ON members (partner, ssn_hash);

-- Every partner id of a member's records; contact ids are unique across a partner, so one id
-- is one human wherever it comes from.
CREATE TABLE member_identities (
	partner TEXT NOT NULL,
	partner_person_id TEXT NOT NULL,
	member_id BIGINT NOT NULL REFERENCES members (id),
	created_at BIGINT NOT NULL,
	PRIMARY KEY (partner, partner_person_id)
);

CREATE INDEX member_identities_member ON member_identities (member_id);

-- Old person -> member.
CREATE TABLE m_person_member (
	person_id BIGINT PRIMARY KEY,
	member_id BIGINT NOT NULL,
	partner TEXT NOT NULL
);

CREATE TABLE m_anchor AS
SELECT i.person_id, MIN(i.partner) AS partner, MIN(p.ssn_hash) AS ssn_hash
FROM person_identities i JOIN persons p ON p.id = i.person_id
GROUP BY i.person_id;

INSERT INTO m_person_member (person_id, member_id, partner)
SELECT a.person_id,
	COALESCE((SELECT MIN(b.person_id) FROM m_anchor b WHERE b.partner = a.partner AND b.ssn_hash = a.ssn_hash), a.person_id),
	a.partner
FROM m_anchor a;

-- 0003's strays, by the custom id 0003 gave them.
INSERT INTO m_person_member (person_id, member_id, partner)
SELECT po.person_id, MIN(hm.member_id), MIN(o.partner)
FROM person_organizations po
JOIN organizations o ON o.id = po.organization_id
JOIN person_identities i ON i.partner = o.partner AND i.partner_person_id = po.custom_id
JOIN m_person_member hm ON hm.person_id = i.person_id
JOIN persons p ON p.id = po.person_id
JOIN persons h ON h.id = i.person_id
WHERE NOT EXISTS (SELECT 1 FROM m_anchor x WHERE x.person_id = po.person_id)
	AND EXISTS (SELECT 1 FROM links l WHERE l.contact_id = po.person_id AND l.organization_id = po.organization_id)
	AND (p.ssn_hash IS NULL OR h.ssn_hash IS NULL OR p.ssn_hash = h.ssn_hash)
GROUP BY po.person_id;

-- Others with a member's ssn hash, within the partner.
INSERT INTO m_person_member (person_id, member_id, partner)
SELECT p.id, MIN(a.member_id), MIN(a.partner)
FROM persons p
JOIN person_organizations po ON po.person_id = p.id
JOIN organizations o ON o.id = po.organization_id
JOIN m_anchor b ON b.ssn_hash = p.ssn_hash AND b.partner = o.partner
JOIN m_person_member a ON a.person_id = b.person_id
WHERE p.ssn_hash IS NOT NULL AND NOT EXISTS (SELECT 1 FROM m_person_member x WHERE x.person_id = p.id)
GROUP BY p.id;

-- Others with a member account are members of their own.
INSERT INTO m_person_member (person_id, member_id, partner)
SELECT a.contact_id, a.contact_id,
	COALESCE((SELECT MIN(o.partner) FROM person_organizations po JOIN organizations o ON o.id = po.organization_id WHERE po.person_id = a.contact_id), '')
FROM accounts a
WHERE a.contact_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM m_person_member x WHERE x.person_id = a.contact_id);

INSERT INTO members (id, partner, partner_person_id, ssn_hash, created_at, updated_at)
SELECT m.member_id, m.partner,
	COALESCE((SELECT i.partner_person_id FROM person_identities i JOIN m_person_member x ON x.person_id = i.person_id
		WHERE x.member_id = m.member_id ORDER BY i.created_at, i.partner_person_id LIMIT 1), ''),
	p.ssn_hash, p.created_at, p.updated_at
FROM m_person_member m JOIN persons p ON p.id = m.person_id
WHERE m.member_id = m.person_id;

INSERT INTO member_identities (partner, partner_person_id, member_id, created_at)
SELECT i.partner, i.partner_person_id, m.member_id, i.created_at
FROM person_identities i JOIN m_person_member m ON m.person_id = i.person_id;

-- Old person and organization -> the organization's record: the first organization keeps
-- the id, the others' records are numbered after the highest id.
CREATE TABLE m_split AS
WITH ranked AS (
	SELECT person_id, organization_id, custom_id, created_at, updated_at,
		ROW_NUMBER() OVER (PARTITION BY person_id ORDER BY created_at, organization_id) AS n
	FROM person_organizations
), moved AS (
	SELECT person_id, organization_id, ROW_NUMBER() OVER (ORDER BY person_id, n) AS k
	FROM ranked WHERE n > 1
)
SELECT r.person_id AS old_id, r.organization_id, r.custom_id, r.created_at, r.updated_at,
	CASE WHEN r.n = 1 THEN r.person_id ELSE (SELECT MAX(id) FROM persons) + m.k END AS new_id
FROM ranked r LEFT JOIN moved m ON m.person_id = r.person_id AND m.organization_id = r.organization_id;

CREATE INDEX m_split_old ON m_split (old_id, organization_id);

-- Each record's partner ids: its partner's ids of the old person (preference 0), and a stray's
-- custom id where it is its member's (preference 1, only where no record of the organization
-- holds it).
CREATE TABLE m_partner_ids AS
SELECT s.organization_id, i.partner_person_id, s.new_id AS person_id, i.created_at, 0 AS preference
FROM m_split s
JOIN organizations o ON o.id = s.organization_id
JOIN person_identities i ON i.person_id = s.old_id AND i.partner = o.partner;

INSERT INTO m_partner_ids (organization_id, partner_person_id, person_id, created_at, preference)
SELECT s.organization_id, s.custom_id, s.new_id, s.created_at, 1
FROM m_split s
JOIN organizations o ON o.id = s.organization_id
JOIN m_person_member m ON m.person_id = s.old_id AND m.member_id <> s.old_id
JOIN member_identities mi ON mi.partner = o.partner AND mi.partner_person_id = s.custom_id AND mi.member_id = m.member_id
WHERE NOT EXISTS (SELECT 1 FROM m_anchor a WHERE a.person_id = s.old_id);

-- Account -> member: one account per member, the oldest person's first.
CREATE TABLE m_account_member AS
SELECT account_id, member_id FROM (
	SELECT a.id AS account_id, m.member_id,
		ROW_NUMBER() OVER (PARTITION BY m.member_id ORDER BY CASE WHEN a.contact_id = m.member_id THEN 0 ELSE 1 END, a.id) AS n
	FROM accounts a JOIN m_person_member m ON m.person_id = a.contact_id
) ranked WHERE n = 1;

-- Retired accounts are signed out.
DELETE FROM sessions WHERE account_id IN (
	SELECT a.id FROM accounts a WHERE a.contact_id IS NOT NULL
	AND NOT EXISTS (SELECT 1 FROM m_account_member m WHERE m.account_id = a.id));

DROP TABLE person_identities;
DROP TABLE person_organizations;

@PERSONS_PER_ORGANIZATION@

DROP INDEX IF EXISTS persons_ssn;
CREATE INDEX persons_organization_ssn ON persons (organization_id, ssn_hash);
CREATE INDEX persons_organization_custom_id ON persons (organization_id, custom_id);
CREATE INDEX persons_organization_updated ON persons (organization_id, updated_at);
CREATE INDEX persons_member ON persons (member_id);
CREATE UNIQUE INDEX accounts_member ON accounts (member_id);

-- An organization's partner ids of its records: the link's (organization, contact.id) finds
-- the organization's record, and only that organization's.
CREATE TABLE person_partner_ids (
	organization_id BIGINT NOT NULL REFERENCES organizations (id),
	partner_person_id TEXT NOT NULL,
	person_id BIGINT NOT NULL REFERENCES persons (id),
	created_at BIGINT NOT NULL,
	PRIMARY KEY (organization_id, partner_person_id)
);

CREATE INDEX person_partner_ids_person ON person_partner_ids (person_id);

INSERT INTO person_partner_ids (organization_id, partner_person_id, person_id, created_at)
SELECT organization_id, partner_person_id, person_id, created_at FROM m_partner_ids WHERE true ORDER BY preference, person_id
ON CONFLICT DO NOTHING;

-- What pointed at a shared person in an organization points at that organization's record.
UPDATE profile_entries SET person_id = (SELECT s.new_id FROM m_split s WHERE s.old_id = profile_entries.person_id AND s.organization_id = profile_entries.organization_id)
WHERE EXISTS (SELECT 1 FROM m_split s WHERE s.old_id = profile_entries.person_id AND s.organization_id = profile_entries.organization_id AND s.new_id <> s.old_id);

UPDATE workouts SET person_id = (SELECT s.new_id FROM m_split s WHERE s.old_id = workouts.person_id AND s.organization_id = workouts.organization_id)
WHERE EXISTS (SELECT 1 FROM m_split s WHERE s.old_id = workouts.person_id AND s.organization_id = workouts.organization_id AND s.new_id <> s.old_id);

UPDATE case_exports SET person_id = (SELECT s.new_id FROM m_split s WHERE s.old_id = case_exports.person_id AND s.organization_id = case_exports.organization_id)
WHERE EXISTS (SELECT 1 FROM m_split s WHERE s.old_id = case_exports.person_id AND s.organization_id = case_exports.organization_id AND s.new_id <> s.old_id);

UPDATE links SET contact_id = (SELECT s.new_id FROM m_split s WHERE s.old_id = links.contact_id AND s.organization_id = links.organization_id)
WHERE EXISTS (SELECT 1 FROM m_split s WHERE s.old_id = links.contact_id AND s.organization_id = links.organization_id AND s.new_id <> s.old_id);

UPDATE sessions SET contact_id = (SELECT s.new_id FROM m_split s WHERE s.old_id = sessions.contact_id AND s.organization_id = sessions.organization_id)
WHERE EXISTS (SELECT 1 FROM m_split s WHERE s.old_id = sessions.contact_id AND s.organization_id = sessions.organization_id AND s.new_id <> s.old_id);

DROP TABLE m_partner_ids;
DROP TABLE m_account_member;
DROP TABLE m_split;
DROP TABLE m_person_member;
DROP TABLE m_anchor;
