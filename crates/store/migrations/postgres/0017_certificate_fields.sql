-- Custom fields of certificate objects (issue 33), as the product has them
-- (`Metadata/*`, `Certificates/Request`'s CustomFields). A definition is
-- made by an operator (`strongroom admin fields create`): its GUID, its
-- label (unique whatever the case), its type (1 text, 2 list), the values a
-- list allows and the classes it applies to (JSON arrays of strings).
CREATE TABLE cert_fields (
    guid       TEXT PRIMARY KEY,
    name_key   TEXT NOT NULL UNIQUE,
    name       TEXT NOT NULL,
    kind       BIGINT NOT NULL,
    allowed    TEXT NOT NULL,
    classes    TEXT NOT NULL,
    created_at BIGINT NOT NULL
);

-- A certificate object's values of a field (JSON array of strings), part of
-- the object's state: written by the Request's one write or by
-- Metadata/Set, kept by renewals, gone with the object or the field.
CREATE TABLE cert_field_values (
    path_key   TEXT NOT NULL,
    field_guid TEXT NOT NULL REFERENCES cert_fields(guid) ON DELETE CASCADE,
    vals       TEXT NOT NULL,
    PRIMARY KEY (path_key, field_guid)
);
