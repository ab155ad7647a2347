-- The language a person chose in the application, saved for the account: an i18n code
-- (en, nb, sv, da, de), or '' for none (the browser's Accept-Language then). It only adds
-- a column with a default: instances of the previous release keep working beside it.
ALTER TABLE accounts ADD COLUMN language TEXT NOT NULL DEFAULT '';
