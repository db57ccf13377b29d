//! `strongroom admin ca …`, `admin policy …` and `admin fields …`:
//! issuing CAs, folder certificate policies and custom fields, on the store.
//!
//! A CA is a key of the key ring's making (its PKCS#8 sealed under the
//! current data key of the default named key, or a signing key made in the
//! token of a PKCS#11 key, never leaving it) with its certificate, shown in
//! the tree as the folder `\VED\Policy\CA Templates\NAME`: its DN is what
//! clients see (`CertificateAuthority`, `CADN`). Its `validity_days` is the
//! product's CA template `Validity Period`: how long the certificates it
//! issues last (a folder policy's validity wins).
//!
//! A root's certificate is self-signed, ten years. An intermediate
//! (`create_ca` with `intermediate`) starts without one: its CSR
//! ([`Admin::ca_csr`]) goes to an offline root, and the certificate that
//! root signs is installed with [`Admin::install_ca`] (its key, CA flags and
//! chain to a self-signed root checked); until then it issues nothing.

use strongroom_core::cert::{CA_FOLDER, Policy, Setting, fields};
use strongroom_core::event::EventKind;
use strongroom_core::tree::{ObjectGuid, lineage_with_guids};
use strongroom_core::vault::FolderPath;
use strongroom_keyring::TokenCaSigner;
use strongroom_store::{CaRecord, CertField, PendingChange, PendingRecord};

use super::{Admin, AdminError};
use crate::pki::{self, CaAlgorithm, CertFacts};
use crate::service::cert_policy::{self as policy, Attribute, SetError};
use crate::service::certificates::{self as svc, CertError};

/// How long a CA's own certificate lasts.
pub const CA_CERT_DAYS: i64 = 3650;

/// A CA as shown.
#[derive(Clone, Debug)]
pub struct CaInfo {
    pub name: String,
    pub dn: String,
    pub algorithm: String,
    pub subject: String,
    pub validity_days: i64,
    /// Its own certificate, then those above it up to the root (none for a root); empty for an
    /// intermediate whose certificate is not installed yet.
    pub chain: Vec<Vec<u8>>,
    /// Its own certificate's facts (`None`: not installed yet).
    pub facts: Option<CertFacts>,
    /// Where its key is: `sealed by NAME` (a key ring key) or `in the token of NAME`.
    pub key: String,
    /// The CA template's `Manual Approval`: what it would issue waits for an approver.
    pub manual_approval: bool,
}

impl CaInfo {
    /// Its own certificate, PEM (empty when not installed).
    pub fn pem(&self) -> String {
        self.chain.first().map(|c| pki::pem("CERTIFICATE", c).replace("\r\n", "\n")).unwrap_or_default()
    }

    /// Its certificate and those above it up to the root, PEM.
    pub fn chain_pem(&self) -> String {
        self.chain.iter().map(|c| pki::pem("CERTIFICATE", c).replace("\r\n", "\n")).collect()
    }

    /// `root`, `intermediate` (signed by another CA) or `pending` (waiting for its certificate).
    pub fn kind(&self) -> &'static str {
        match self.chain.len() {
            0 => "pending",
            1 => "root",
            _ => "intermediate",
        }
    }
}

fn info(ca: &CaRecord) -> Result<CaInfo, AdminError> {
    let chain: Vec<Vec<u8>> = pki::split_certs(&ca.cert_der).into_iter().map(<[u8]>::to_vec).collect();
    let facts = match chain.first() {
        Some(c) => Some(pki::cert_facts(c).map_err(|e| AdminError::Invalid(e.to_string()))?),
        None => None,
    };
    Ok(CaInfo {
        name: ca.name.clone(),
        dn: ca.dn.clone(),
        algorithm: ca.algorithm.clone(),
        subject: ca.subject.clone(),
        validity_days: ca.validity_days,
        chain,
        facts,
        key: if ca.key_id == svc::TOKEN_KEY_ID { format!("in the token of {}", ca.key_name) } else { format!("sealed by {}", ca.key_name) },
        manual_approval: ca.manual_approval,
    })
}

impl From<CertError> for AdminError {
    fn from(e: CertError) -> Self {
        match e {
            CertError::Store(s) => AdminError::Store(s),
            other => AdminError::Invalid(other.to_string()),
        }
    }
}

fn not_found(e: CertError) -> AdminError {
    match e {
        CertError::NoCertificate(m) => AdminError::NotFound(m),
        other => other.into(),
    }
}

fn valid_ca_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= 64 && name.trim() == name && name.chars().all(|c| c.is_ascii_alphanumeric() || " ._-".contains(c))
}

/// What `admin policy set` changes; `None` leaves a value as it is.
#[derive(Clone, Debug, Default)]
pub struct PolicyChange {
    pub ca: Option<String>,
    pub key_algorithm: Option<String>,
    pub key_size: Option<u32>,
    pub curve: Option<String>,
    pub domains: Option<Vec<String>>,
    pub wildcards: Option<bool>,
    pub organization: Option<String>,
    pub organizational_unit: Option<Vec<String>>,
    pub city: Option<String>,
    pub state: Option<String>,
    pub country: Option<String>,
    pub validity_days: Option<u32>,
    /// `Manual Approval`: requests below wait for an approver.
    pub manual_approval: Option<bool>,
    /// `DNS`, `IP`, `Email`, `URI`, `UPN`: SAN kinds requests may not have (empty: none).
    pub prohibited_san_types: Option<Vec<String>>,
    /// Every value given here is locked (a policy); otherwise each is a default.
    pub locked: bool,
}

impl Admin {
    /// Creates CA `name`: a new key (P-256 by default) and its self-signed
    /// certificate, or with `intermediate` none yet (see the module's text).
    /// The key is sealed by the key ring, or, with `token_key` (a configured
    /// PKCS#11 key's name), made in that key's token as a signing key that
    /// never leaves it (ECDSA P-256 or P-384, RSA 2048, 3072 or 4096).
    pub async fn create_ca(
        &self,
        name: &str,
        algorithm: &str,
        subject: Option<&str>,
        validity_days: Option<i64>,
        token_key: Option<&str>,
        intermediate: bool,
    ) -> Result<CaInfo, AdminError> {
        if !valid_ca_name(name) {
            return Err(AdminError::Invalid("CA names are 1-64 letters, digits, spaces or ._-".into()));
        }
        let alg = CaAlgorithm::parse(algorithm)
            .ok_or_else(|| AdminError::Invalid(format!("algorithm {algorithm:?}: p256, p384, rsa2048, rsa3072 or rsa4096")))?;
        let days = validity_days.unwrap_or(svc::DEFAULT_VALIDITY_DAYS);
        if !(1..=3650).contains(&days) {
            return Err(AdminError::Invalid("--validity-days is 1 to 3650".into()));
        }
        let subject_text = subject.map_or_else(|| format!("CN={name}"), str::to_owned);
        let subject = pki::parse_subject(&subject_text).map_err(|e| AdminError::Invalid(e.to_string()))?;
        let folder = FolderPath::parse(&format!("{CA_FOLDER}\\{name}")).map_err(|e| AdminError::Invalid(e.to_string()))?;
        if self.store.cert_authorities().await?.iter().any(|c| c.name.eq_ignore_ascii_case(name)) {
            return Err(AdminError::Exists(format!("CA {name}")));
        }
        if self.store.folder_object(folder.key().to_owned()).await?.is_some() {
            return Err(AdminError::Exists(format!("folder {folder}")));
        }
        let now = self.clock.now();
        let (signer, key_name, key_id, key_sealed) = match token_key {
            Some(token_key) => {
                let label = svc::token_label(name);
                let (key_name, _) = self
                    .keyring
                    .create_signing_key(token_key, &label, alg.into())
                    .await
                    .map_err(|e| AdminError::Invalid(format!("the CA key in {token_key}: {e}")))?;
                let signer = self.keyring.signer(&key_name, &label).map_err(|e| AdminError::Invalid(e.to_string()))?;
                let signer: Box<dyn pki::CaSigner> = Box::new(TokenCaSigner { signer, algorithm: alg.into() });
                (signer, key_name, svc::TOKEN_KEY_ID, label.into_bytes())
            }
            None => {
                // Off the async threads: an RSA key takes up to seconds.
                let rng = self.rng.clone();
                let key = tokio::task::spawn_blocking(move || pki::generate_key(alg.key_spec(), &*rng))
                    .await
                    .map_err(|e| AdminError::Invalid(format!("key generation: {e}")))?
                    .map_err(|e| AdminError::Invalid(e.to_string()))?;
                let (key_name, key_id, key_sealed) = svc::seal_ca_key(&*self.store, &self.keyring, &*self.rng, now, name, &key).await?;
                let signer: Box<dyn pki::CaSigner> = Box::new(pki::SoftwareSigner(key));
                (signer, key_name, key_id, key_sealed)
            }
        };
        let cert_der = if intermediate {
            Vec::new()
        } else {
            // A token's key signs with blocking calls.
            let (rng, subject) = (self.rng.clone(), subject.clone());
            tokio::task::spawn_blocking(move || pki::self_signed_ca(&*signer, &subject, now.secs(), CA_CERT_DAYS, &*rng))
                .await
                .map_err(|e| AdminError::Invalid(format!("signing the CA certificate: {e}")))?
                .map_err(|e| AdminError::Invalid(e.to_string()))?
        };
        let ca = CaRecord {
            name: name.to_owned(),
            dn: folder.as_str().to_owned(),
            algorithm: alg.as_str(),
            subject: subject_text,
            cert_der,
            key_name,
            key_id,
            key_sealed,
            validity_days: days,
            created_at: now,
            manual_approval: false,
        };
        let detail = if ca.cert_der.is_empty() {
            format!("ca={name} algorithm={} intermediate=true (its certificate to be installed)", ca.algorithm)
        } else {
            let facts = pki::cert_facts(&ca.cert_der).map_err(|e| AdminError::Invalid(e.to_string()))?;
            format!("ca={name} algorithm={} serial={} thumbprint={}", ca.algorithm, facts.serial, facts.thumbprint)
        };
        let event = self.event(EventKind::CaCreated).object(folder.as_str()).detail(detail);
        if !self.store.insert_ca(ca.clone(), lineage_with_guids(&folder, &*self.rng), event).await? {
            return Err(AdminError::Exists(format!("CA {name}")));
        }
        info(&ca)
    }

    pub async fn cas(&self) -> Result<Vec<CaInfo>, AdminError> {
        self.store.cert_authorities().await?.iter().map(info).collect()
    }

    /// CA `name` (or its DN).
    pub async fn ca(&self, name: &str) -> Result<CaInfo, AdminError> {
        let cas = self.store.cert_authorities().await?;
        svc::find_ca(&cas, name).map(info).unwrap_or_else(|| Err(AdminError::NotFound(format!("CA {name}"))))
    }

    /// A CSR (DER) of CA `name` for its subject, signed by its key: what an
    /// offline root signs to make it an intermediate (any CA's key can ask).
    pub async fn ca_csr(&self, name: &str) -> Result<Vec<u8>, AdminError> {
        let cas = self.store.cert_authorities().await?;
        let ca = svc::find_ca(&cas, name).ok_or_else(|| AdminError::NotFound(format!("CA {name}")))?;
        let subject = pki::parse_subject(&ca.subject).map_err(|e| AdminError::Invalid(e.to_string()))?;
        let signer = svc::ca_signer(&*self.store, &self.keyring, ca).await?;
        tokio::task::spawn_blocking(move || pki::ca_csr(&*signer, &subject))
            .await
            .map_err(|e| AdminError::Invalid(format!("signing the CSR: {e}")))?
            .map_err(|e| AdminError::Invalid(e.to_string()))
    }

    /// Installs CA `name`'s certificate `cert` (PEM or DER; any further
    /// certificates in it join `chain`) with the certificates above it up to
    /// a self-signed root (`chain`, PEM or DER, in any order): checked by
    /// [`pki::check_ca_certificate`] against the CA's key, then written in
    /// one conditional write (a concurrent install of the same CA loses).
    /// Certificates it issued before keep verifying only if the subject and
    /// key are the same, which they are: the key is the CA's, the subject the
    /// certificate's own.
    pub async fn install_ca(&self, name: &str, cert: &[u8], chain: Option<&[u8]>) -> Result<CaInfo, AdminError> {
        let cas = self.store.cert_authorities().await?;
        let ca = svc::find_ca(&cas, name).ok_or_else(|| AdminError::NotFound(format!("CA {name}")))?.clone();
        let invalid = |what: &str, e: pki::PkiError| AdminError::Invalid(format!("{what}: {e}"));
        let mut given = pki::read_certs(cert).map_err(|e| invalid("--cert", e))?;
        let own = given.remove(0);
        if let Some(chain) = chain {
            given.extend(pki::read_certs(chain).map_err(|e| invalid("--chain", e))?);
        }
        let signer = svc::ca_signer(&*self.store, &self.keyring, &ca).await?;
        let public = tokio::task::spawn_blocking(move || pki::signer_public_key(&*signer))
            .await
            .map_err(|e| AdminError::Invalid(format!("the CA's key: {e}")))?
            .map_err(|e| AdminError::Invalid(format!("the CA's key: {e}")))?;
        let now = self.clock.now();
        let path = pki::check_ca_certificate(&own, &given, &public, now.secs()).map_err(|e| AdminError::Invalid(e.to_string()))?;
        let facts = pki::cert_facts(&own).map_err(|e| AdminError::Invalid(e.to_string()))?;
        let root =
            path.last().map(|r| pki::cert_facts(r).map(|f| f.thumbprint)).transpose().map_err(|e| AdminError::Invalid(e.to_string()))?;
        let event = self.event(EventKind::CaInstalled).object(ca.dn.as_str()).detail(format!(
            "ca={} serial={} thumbprint={} issuer={:?} chain={} root={}",
            ca.name,
            facts.serial,
            facts.thumbprint,
            facts.issuer,
            path.len(),
            root.unwrap_or_default()
        ));
        if !self.store.set_ca_certificate(ca.name.to_lowercase(), ca.cert_der.clone(), path.concat(), event).await? {
            return Err(AdminError::Invalid(format!("CA {} changed meanwhile: install again", ca.name)));
        }
        let mut installed = ca;
        installed.cert_der = path.concat();
        info(&installed)
    }

    /// Changes folder `folder`'s own policy; answers it.
    pub async fn set_cert_policy(&self, folder: &str, change: PolicyChange) -> Result<Policy, AdminError> {
        let f = FolderPath::parse(folder).map_err(|e| AdminError::Invalid(e.to_string()))?;
        if !(f.key() == "\\ved\\policy" || f.key().starts_with("\\ved\\policy\\")) {
            return Err(AdminError::Invalid("policies are set on folders under \\VED\\Policy".into()));
        }
        let (old, mut p) = policy::own(&*self.store, &f).await?;
        // The product's attributes, through the one path `Config/WritePolicy` takes too.
        let mut values: Vec<(Attribute, Vec<String>)> = Vec::new();
        let mut put = |attr, v: Option<Vec<String>>| {
            if let Some(v) = v {
                values.push((attr, v));
            }
        };
        put(Attribute::CertificateAuthority, change.ca.clone().map(|x| vec![x]));
        put(Attribute::KeyAlgorithm, change.key_algorithm.clone().map(|x| vec![x]));
        put(Attribute::KeyBitStrength, change.key_size.map(|x| vec![x.to_string()]));
        put(Attribute::EllipticCurve, change.curve.clone().map(|x| vec![x]));
        put(Attribute::DomainSuffixWhitelist, change.domains.clone());
        put(Attribute::ProhibitWildcard, change.wildcards.map(|w| vec![if w { "0" } else { "1" }.to_owned()]));
        put(Attribute::Organization, change.organization.clone().map(|x| vec![x]));
        put(Attribute::OrganizationalUnit, change.organizational_unit.clone());
        put(Attribute::City, change.city.clone().map(|x| vec![x]));
        put(Attribute::State, change.state.clone().map(|x| vec![x]));
        put(Attribute::Country, change.country.clone().map(|x| vec![x]));
        put(Attribute::ProhibitedSanTypes, change.prohibited_san_types.clone());
        let cas = if change.ca.is_some() { self.store.cert_authorities().await? } else { Vec::new() };
        for (attr, v) in values {
            policy::set(&mut p, attr, &v, change.locked, &cas).map_err(|e| match e {
                SetError::NotFound(m) => AdminError::NotFound(m),
                SetError::Invalid(m) => AdminError::Invalid(m),
            })?;
        }
        if let Some(v) = change.validity_days {
            if !(1..=3650).contains(&v) {
                return Err(AdminError::Invalid("--validity-days is 1 to 3650".into()));
            }
            p.validity_days = Some(v);
        }
        if let Some(m) = change.manual_approval {
            p.manual_approval = Some(Setting { value: m, locked: change.locked });
        }
        p.check().map_err(AdminError::Invalid)?;
        let text = serde_json::to_string(&p).map_err(|e| AdminError::Invalid(e.to_string()))?;
        let event = self.event(EventKind::CertPolicySet).object(f.as_str()).detail(format!("policy={text}"));
        // Conditional on the policy read: a change that landed meanwhile (`Config/WritePolicy`,
        // the console) is not overwritten.
        match self.store.replace_cert_policy(f.clone(), old, Some(text), event).await? {
            Some(true) => Ok(p),
            Some(false) => Err(AdminError::Invalid(format!("the policy of {f} changed meanwhile: set it again"))),
            None => Err(AdminError::NotFound(format!("folder {f}"))),
        }
    }

    /// Sets CA `name`'s `Manual Approval` (the CA template's attribute): with it, what the CA
    /// would issue waits for an approver ([`Admin::approve_certificate`]).
    pub async fn set_ca_manual_approval(&self, name: &str, on: bool) -> Result<CaInfo, AdminError> {
        let cas = self.store.cert_authorities().await?;
        let mut ca = svc::find_ca(&cas, name).ok_or_else(|| AdminError::NotFound(format!("CA {name}")))?.clone();
        let event = self.event(EventKind::CaUpdated).object(ca.dn.as_str()).detail(format!("ca={} manual_approval={on}", ca.name));
        if !self.store.set_ca_manual_approval(ca.name.to_lowercase(), on, event).await? {
            return Err(AdminError::NotFound(format!("CA {name}")));
        }
        ca.manual_approval = on;
        info(&ca)
    }

    /// Every certificate request waiting for approval (or rejected), oldest first.
    pub async fn pending_certificates(&self) -> Result<Vec<PendingRecord>, AdminError> {
        Ok(self.store.pending_certificates().await?)
    }

    fn authority<'a>(&'a self, public_url: &'a str) -> svc::Authority<'a> {
        svc::Authority { store: &*self.store, clock: &*self.clock, rng: &self.rng, keyring: &self.keyring, public_url, keygen: None }
    }

    /// Approves the request waiting at certificate `dn` (at `version`, the one the approver saw,
    /// if given): issued as its Request or Renew would have been, judged by the policy in force
    /// now, in one write that takes the waiting request, so two approvals issue once. The
    /// certificates name `public_url` in their CRL distribution point (the server's).
    pub async fn approve_certificate(&self, public_url: &str, dn: &str, version: Option<i64>) -> Result<svc::Requested, AdminError> {
        let p = svc::pending_at(&*self.store, dn).await.map_err(not_found)?;
        let make = |kind: EventKind| self.event(kind);
        let actor = svc::Actor { writer: None, current_keys: Vec::new(), name: self.actor.identity.clone(), event: &make };
        Ok(self.authority(public_url).approve(&actor, &p, version).await?)
    }

    /// Rejects the request waiting at certificate `dn` (at `version`, if given) with `reason`:
    /// `Certificates/Retrieve` then answers the product's failed shape (500, `Status` the reason)
    /// until a Reset or Retry.
    pub async fn reject_certificate(&self, dn: &str, reason: &str, version: Option<i64>) -> Result<(), AdminError> {
        if reason.trim().is_empty() {
            return Err(AdminError::Invalid("a rejection gives its reason (--reason)".into()));
        }
        let p = svc::pending_at(&*self.store, dn).await.map_err(not_found)?;
        if p.rejected {
            return Err(AdminError::Invalid(format!("the request for {} was rejected already", p.path)));
        }
        let make = |kind: EventKind| self.event(kind);
        let actor = svc::Actor { writer: None, current_keys: Vec::new(), name: self.actor.identity.clone(), event: &make };
        let change = PendingChange::Reject(svc::rejected_status(reason));
        Ok(self.authority("").settle(&actor, &p, version, change, svc::APPROVE_RIGHT).await?)
    }

    /// Folder `folder`'s own policy and the one in force there.
    pub async fn cert_policy(&self, folder: &str) -> Result<(Policy, Policy), AdminError> {
        let f = FolderPath::parse(folder).map_err(|e| AdminError::Invalid(e.to_string()))?;
        if f.key() != "\\ved\\policy" && self.store.folder_object(f.key().to_owned()).await?.is_none() {
            return Err(AdminError::NotFound(format!("folder {f}")));
        }
        let all = svc::policies(&*self.store).await?;
        Ok((all.get(f.key()).cloned().unwrap_or_default(), svc::effective_policy(&all, &f)))
    }
}

/// A custom field as an operator defines it (`strongroom admin fields create`).
#[derive(Clone, Debug, Default)]
pub struct FieldSpec {
    pub name: String,
    /// `text` or `list`.
    pub kind: String,
    /// A list's values (a text field takes none).
    pub allowed: Vec<String>,
    /// The classes it applies to (none: every certificate).
    pub classes: Vec<String>,
}

impl Admin {
    /// Defines a custom field of certificate objects, with a GUID of its own; its name is unique
    /// whatever the case (two racing definitions of one name make one field).
    pub async fn create_cert_field(&self, spec: FieldSpec) -> Result<CertField, AdminError> {
        let name = fields::check_name(&spec.name).map_err(AdminError::Invalid)?;
        let kind =
            fields::parse_kind(&spec.kind).ok_or_else(|| AdminError::Invalid(format!("field type {:?}: text or list", spec.kind)))?;
        let mut allowed: Vec<String> = Vec::new();
        for v in spec.allowed.iter().map(|v| v.trim()).filter(|v| !v.is_empty()) {
            if v.chars().count() > fields::MAX_VALUE {
                return Err(AdminError::Invalid(format!("an allowed value has at most {} characters", fields::MAX_VALUE)));
            }
            if !allowed.iter().any(|a| a == v) {
                allowed.push(v.to_owned());
            }
        }
        match kind {
            fields::LIST if allowed.is_empty() => {
                return Err(AdminError::Invalid("a list field needs --value (its allowed values)".into()));
            }
            fields::TEXT if !allowed.is_empty() => return Err(AdminError::Invalid("a text field takes no --value".into())),
            _ => {}
        }
        if allowed.len() > 1000 {
            return Err(AdminError::Invalid("a list field has at most 1000 values".into()));
        }
        let mut classes: Vec<String> = Vec::new();
        for c in &spec.classes {
            let k = fields::class_name(c).ok_or_else(|| {
                AdminError::Invalid(format!(
                    "class {c:?}: {} or {}",
                    strongroom_core::cert::CREATED_CLASS,
                    strongroom_core::cert::CERTIFICATE_CLASS
                ))
            })?;
            if !classes.iter().any(|x| x == k) {
                classes.push(k.to_owned());
            }
        }
        if classes.is_empty() {
            classes.push(fields::DEFAULT_CLASS.to_owned());
        }
        let field = CertField {
            guid: ObjectGuid::generate(&*self.rng).braced(),
            name: name.clone(),
            kind,
            allowed,
            classes,
            created_at: self.clock.now(),
        };
        let event = self.event(EventKind::CertFieldCreated).object(name.as_str()).detail(format!(
            "field={name} guid={} type={}",
            field.guid,
            fields::type_name(kind)
        ));
        if !self.store.insert_cert_field(field.clone(), event).await? {
            return Err(AdminError::Exists(format!("field {name}")));
        }
        Ok(field)
    }

    /// Every custom field, by name.
    pub async fn cert_fields(&self) -> Result<Vec<CertField>, AdminError> {
        Ok(self.store.cert_fields().await?)
    }

    /// Removes custom field `name` (any case) and every object's values of it.
    pub async fn remove_cert_field(&self, name: &str) -> Result<(), AdminError> {
        let name = name.trim();
        let event = self.event(EventKind::CertFieldRemoved).object(name).detail(format!("field={name}"));
        if !self.store.delete_cert_field(name.to_owned(), event).await? {
            return Err(AdminError::NotFound(format!("field {name}")));
        }
        Ok(())
    }
}
