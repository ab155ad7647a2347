-- The national eID looks members up by the number's hash across partners: the sign-in
-- (store.SignInByNationalID) and every read of an eID session's plans (sessionPlans: every
-- partner's member with the number). members_ssn (partner, ssn_hash) serves a lookup within
-- one partner only, so these scanned the members; this index makes each one lookup. It only
-- adds an index: instances of the previous release keep working beside it.
CREATE INDEX members_ssn_hash ON members (ssn_hash);
