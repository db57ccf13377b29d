-- Certificate objects made with Config/Create (class X509 Certificate)
-- before they hold a certificate: their attributes (subject, SANs, key,
-- CA, contacts...; JSON, core::cert::Template), from which
-- Certificates/Renew enrolls them. Empty for objects made by a Request.
-- Such an object's row has an empty serial and thumbprint until then.
ALTER TABLE certificates ADD COLUMN template TEXT NOT NULL DEFAULT '';
