-- The \VED tree as objects (issue 23). A folder is an object with a GUID
-- (lower case, no braces), fixed for \VED and \VED\Policy, random for every
-- other folder; local users and groups already have one (their id). A
-- folder keeps its GUID for its life: the store copier carries it over.
ALTER TABLE folders ADD COLUMN guid TEXT;

UPDATE folders SET guid = CASE path_key
    WHEN '\ved' THEN '00000000-0000-4000-8000-00000000ed01'
    WHEN '\ved\policy' THEN '00000000-0000-4000-8000-00000000ed02'
    WHEN '\ved\identity' THEN '00000000-0000-4000-8000-00000000ed03'
    ELSE lower(hex(randomblob(4))) || '-' || lower(hex(randomblob(2))) || '-4' || substr(lower(hex(randomblob(2))), 2) || '-'
         || substr('89ab', 1 + (abs(random()) % 4), 1) || substr(lower(hex(randomblob(2))), 2) || '-' || lower(hex(randomblob(6)))
END;

CREATE UNIQUE INDEX folders_guid ON folders(guid);
