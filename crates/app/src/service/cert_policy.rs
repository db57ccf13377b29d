//! Folder certificate policies as the product's attributes: the
//! names `Config/WritePolicy`, `Config/ReadPolicy` and
//! `Config/ClearPolicyAttribute` take for class `X509 Certificate` (those of
//! vcert's `setpolicy` and `getpolicy`), each mapped onto the folder policy
//! store `admin policy set` writes. [`set`] is the one place a value is read
//! and checked: `admin policy set`, the console and `Config/WritePolicy` all
//! go through it, then through [`Policy::check`].
//!
//! `Locked` true makes a value a policy, false a default, for the values the
//! store keeps both ways (CA, subject, key, `Manual Csr`, `Management Type`).
//! The whitelist, wildcards, prohibited SAN kinds, key reuse, contacts and
//! approvers are always in force; reading them back says `Locked` true.

use strongroom_core::cert::{Curve, KeySpec, MANAGEMENT_TYPES, Policy, Setting, san_type};
use strongroom_core::event::EventKind;
use strongroom_core::vault::{FolderPath, Rights};
use strongroom_store::{CaRecord, Store};

use super::certificates::{self as svc, CertError};
use super::identity as people;
use super::vault::Caller;
use crate::App;

type Result<T, E = CertError> = std::result::Result<T, E>;

/// The class whose policy a folder holds (`Class` of the policy calls).
pub const POLICY_CLASS: &str = "X509 Certificate";

/// A policy attribute of class `X509 Certificate`, as the product names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Attribute {
    CertificateAuthority,
    Organization,
    OrganizationalUnit,
    City,
    State,
    Country,
    KeyAlgorithm,
    KeyBitStrength,
    EllipticCurve,
    /// `PKIX Parameter Set Policy`: the key as an OID (vcert writes it, not the three above, to a
    /// server of version 25 or later, as this one says it is).
    PkixParameterSet,
    /// `PKIX Parameter Set Policy Default`.
    PkixParameterSetDefault,
    ManualCsr,
    ManagementType,
    DomainSuffixWhitelist,
    ProhibitWildcard,
    ProhibitedSanTypes,
    AllowPrivateKeyReuse,
    WantRenewal,
    Contact,
    Approver,
}

impl Attribute {
    /// Every attribute with its name.
    pub const ALL: [(Attribute, &'static str); 20] = [
        (Attribute::CertificateAuthority, "Certificate Authority"),
        (Attribute::Organization, "Organization"),
        (Attribute::OrganizationalUnit, "Organizational Unit"),
        (Attribute::City, "City"),
        (Attribute::State, "State"),
        (Attribute::Country, "Country"),
        (Attribute::KeyAlgorithm, "Key Algorithm"),
        (Attribute::KeyBitStrength, "Key Bit Strength"),
        (Attribute::EllipticCurve, "Elliptic Curve"),
        (Attribute::PkixParameterSet, "PKIX Parameter Set Policy"),
        (Attribute::PkixParameterSetDefault, "PKIX Parameter Set Policy Default"),
        (Attribute::ManualCsr, "Manual Csr"),
        (Attribute::ManagementType, "Management Type"),
        (Attribute::DomainSuffixWhitelist, "Domain Suffix Whitelist"),
        (Attribute::ProhibitWildcard, "Prohibit Wildcard"),
        (Attribute::ProhibitedSanTypes, "Prohibited SAN Types"),
        (Attribute::AllowPrivateKeyReuse, "Allow Private Key Reuse"),
        (Attribute::WantRenewal, "Want Renewal"),
        (Attribute::Contact, "Contact"),
        (Attribute::Approver, "Approver"),
    ];

    /// The attribute `name` names (any case, spaces trimmed).
    pub fn parse(name: &str) -> Option<Attribute> {
        let n = name.trim();
        Attribute::ALL.iter().find(|(_, s)| s.eq_ignore_ascii_case(n)).map(|(a, _)| *a)
    }

    pub fn name(self) -> &'static str {
        Attribute::ALL.iter().find(|(a, _)| *a == self).map_or("", |(_, s)| s)
    }
}

/// Why a value cannot be set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SetError {
    /// What it names does not exist (a CA).
    NotFound(String),
    Invalid(String),
}

impl From<SetError> for CertError {
    fn from(e: SetError) -> Self {
        match e {
            SetError::NotFound(m) | SetError::Invalid(m) => CertError::Invalid(m),
        }
    }
}

fn one(attr: Attribute, values: &[String]) -> std::result::Result<String, SetError> {
    match values {
        [v] if !v.trim().is_empty() => Ok(v.trim().to_owned()),
        _ => Err(SetError::Invalid(format!("{} takes one value.", attr.name()))),
    }
}

fn flag(attr: Attribute, values: &[String]) -> std::result::Result<bool, SetError> {
    match one(attr, values)?.to_ascii_lowercase().as_str() {
        "1" | "true" => Ok(true),
        "0" | "false" => Ok(false),
        other => Err(SetError::Invalid(format!("{} is 0 or 1, not {other:?}.", attr.name()))),
    }
}

fn set_key(p: &mut Policy, key: KeySpec, locked: bool) {
    p.key_algorithm = Some(Setting { value: key.algorithm().to_owned(), locked });
    match key {
        KeySpec::Rsa(bits) => p.key_size = Some(Setting { value: bits, locked }),
        KeySpec::Ec(curve) => p.curve = Some(Setting { value: curve, locked }),
    }
}

/// The folder policy's key as a PKIX parameter set OID, if it names one.
fn pkix_oid(p: &Policy) -> Option<(String, bool)> {
    let alg = p.key_algorithm.as_ref()?;
    match alg.value.as_str() {
        "RSA" => p.key_size.as_ref().map(|s| (format!("1.3.6.1.4.1.28783.10.1.1.{}", s.value), alg.locked)),
        _ => p.curve.as_ref().map(|c| (format!("1.3.6.1.4.1.28783.10.2.1.{}", &c.value.as_str()[1..]), alg.locked)),
    }
}

/// Sets `attr` of folder policy `p` to `values`, a policy when `locked`, else a default. The values
/// of `Contact` and `Approver` must already be resolved identities ([`write`] does it). `cas` are
/// the CAs a `Certificate Authority` may name (by name or DN). Follow with [`Policy::check`].
pub fn set(p: &mut Policy, attr: Attribute, values: &[String], locked: bool, cas: &[CaRecord]) -> std::result::Result<(), SetError> {
    let setting = |v: String| Some(Setting { value: v, locked });
    match attr {
        Attribute::CertificateAuthority => {
            let ca = one(attr, values)?;
            let found = svc::find_ca(cas, &ca).ok_or_else(|| SetError::NotFound(format!("CA {ca}")))?;
            p.ca = Some(Setting { value: found.dn.clone(), locked });
        }
        Attribute::Organization => p.organization = setting(one(attr, values)?),
        Attribute::City => p.city = setting(one(attr, values)?),
        Attribute::State => p.state = setting(one(attr, values)?),
        Attribute::Country => p.country = setting(one(attr, values)?.to_ascii_uppercase()),
        Attribute::OrganizationalUnit => {
            let ou: Vec<String> = values.iter().map(|v| v.trim().to_owned()).filter(|v| !v.is_empty()).collect();
            if ou.is_empty() {
                return Err(SetError::Invalid("Organizational Unit takes one value or more.".into()));
            }
            p.organizational_unit = Some(Setting { value: ou, locked });
        }
        Attribute::KeyAlgorithm => {
            let a = one(attr, values)?.to_ascii_uppercase();
            let a = if a == "EC" || a == "ECDSA" { "ECC".to_owned() } else { a };
            p.key_algorithm = setting(a);
        }
        Attribute::KeyBitStrength => {
            let v = one(attr, values)?;
            let bits = v.parse().map_err(|_| SetError::Invalid(format!("Key Bit Strength is a number of bits, not {v:?}.")))?;
            p.key_size = Some(Setting { value: bits, locked });
        }
        Attribute::EllipticCurve => {
            let c = one(attr, values)?;
            let curve = Curve::parse(&c).ok_or_else(|| SetError::Invalid(format!("curve {c:?}: P256, P384 or P521")))?;
            p.curve = Some(Setting { value: curve, locked });
        }
        Attribute::PkixParameterSet | Attribute::PkixParameterSetDefault => {
            let oid = match values {
                [v] => v.trim().to_owned(),
                _ => return Err(SetError::Invalid(format!("{} takes one value: Strongroom keeps one key type per folder.", attr.name()))),
            };
            let key = KeySpec::from_pkix_oid(&oid)
                .ok_or_else(|| SetError::Invalid(format!("{oid:?} is not a PKIX parameter set of RSA or P256/P384/P521.")))?;
            if attr == Attribute::PkixParameterSet {
                set_key(p, key, locked);
            } else if !p.key_algorithm.as_ref().is_some_and(|a| a.locked) {
                // The default is a default whatever its `Locked`, and never loosens a locked key
                // (vcert writes both, the default after the policy, with the same `Locked`).
                set_key(p, key, false);
            }
        }
        Attribute::ManualCsr => p.manual_csr = Some(Setting { value: flag(attr, values)?, locked }),
        Attribute::ManagementType => {
            let m = one(attr, values)?;
            let known = MANAGEMENT_TYPES.iter().find(|t| t.eq_ignore_ascii_case(&m)).map_or(m, |t| (*t).to_owned());
            p.management_type = setting(known);
        }
        Attribute::DomainSuffixWhitelist => {
            p.domains = Some(values.iter().map(|x| x.trim().to_ascii_lowercase()).filter(|x| !x.is_empty()).collect());
        }
        Attribute::ProhibitWildcard => p.wildcards = Some(!flag(attr, values)?),
        Attribute::ProhibitedSanTypes => {
            let mut kinds = Vec::new();
            for v in values.iter().filter(|v| !v.trim().is_empty()) {
                let k = san_type(v).ok_or_else(|| SetError::Invalid(format!("SAN type {v:?}: DNS, IP, Email, URI or UPN")))?;
                if !kinds.contains(&k.to_owned()) {
                    kinds.push(k.to_owned());
                }
            }
            p.prohibited_san_types = Some(kinds);
        }
        Attribute::AllowPrivateKeyReuse => p.key_reuse = Some(flag(attr, values)?),
        Attribute::WantRenewal => p.want_renewal = Some(flag(attr, values)?),
        Attribute::Contact => p.contacts = Some(values.to_vec()),
        Attribute::Approver => p.approvers = Some(values.to_vec()),
    }
    Ok(())
}

/// Clears `attr` of folder policy `p` (the PKIX parameter sets clear the key).
pub fn clear(p: &mut Policy, attr: Attribute) {
    match attr {
        Attribute::CertificateAuthority => p.ca = None,
        Attribute::Organization => p.organization = None,
        Attribute::OrganizationalUnit => p.organizational_unit = None,
        Attribute::City => p.city = None,
        Attribute::State => p.state = None,
        Attribute::Country => p.country = None,
        Attribute::KeyAlgorithm => p.key_algorithm = None,
        Attribute::KeyBitStrength => p.key_size = None,
        Attribute::EllipticCurve => p.curve = None,
        Attribute::PkixParameterSet | Attribute::PkixParameterSetDefault => {
            p.key_algorithm = None;
            p.key_size = None;
            p.curve = None;
        }
        Attribute::ManualCsr => p.manual_csr = None,
        Attribute::ManagementType => p.management_type = None,
        Attribute::DomainSuffixWhitelist => p.domains = None,
        Attribute::ProhibitWildcard => p.wildcards = None,
        Attribute::ProhibitedSanTypes => p.prohibited_san_types = None,
        Attribute::AllowPrivateKeyReuse => p.key_reuse = None,
        Attribute::WantRenewal => p.want_renewal = None,
        Attribute::Contact => p.contacts = None,
        Attribute::Approver => p.approvers = None,
    }
}

/// The values of `attr` in folder policy `p` and whether they are locked (nothing set: none).
pub fn read(p: &Policy, attr: Attribute) -> Option<(Vec<String>, bool)> {
    fn text(s: &Option<Setting<String>>) -> Option<(Vec<String>, bool)> {
        s.as_ref().map(|s| (vec![s.value.clone()], s.locked))
    }
    let bit = |b: bool| if b { "1".to_owned() } else { "0".to_owned() };
    match attr {
        Attribute::CertificateAuthority => text(&p.ca),
        Attribute::Organization => text(&p.organization),
        Attribute::City => text(&p.city),
        Attribute::State => text(&p.state),
        Attribute::Country => text(&p.country),
        Attribute::OrganizationalUnit => p.organizational_unit.as_ref().map(|s| (s.value.clone(), s.locked)),
        Attribute::KeyAlgorithm => text(&p.key_algorithm),
        Attribute::KeyBitStrength => p.key_size.as_ref().map(|s| (vec![s.value.to_string()], s.locked)),
        Attribute::EllipticCurve => p.curve.as_ref().map(|s| (vec![s.value.as_str().to_owned()], s.locked)),
        Attribute::PkixParameterSet => pkix_oid(p).map(|(o, l)| (vec![o], l)),
        Attribute::PkixParameterSetDefault => pkix_oid(p).map(|(o, _)| (vec![o], false)),
        Attribute::ManualCsr => p.manual_csr.as_ref().map(|s| (vec![bit(s.value)], s.locked)),
        Attribute::ManagementType => text(&p.management_type),
        Attribute::DomainSuffixWhitelist => p.domains.clone().map(|d| (d, true)),
        Attribute::ProhibitWildcard => p.wildcards.map(|w| (vec![bit(!w)], true)),
        Attribute::ProhibitedSanTypes => p.prohibited_san_types.clone().map(|k| (k, true)),
        Attribute::AllowPrivateKeyReuse => p.key_reuse.map(|b| (vec![bit(b)], true)),
        Attribute::WantRenewal => p.want_renewal.map(|b| (vec![bit(b)], true)),
        Attribute::Contact => p.contacts.clone().map(|c| (c, true)),
        Attribute::Approver => p.approvers.clone().map(|c| (c, true)),
    }
    .filter(|(v, _)| !v.is_empty() || matches!(attr, Attribute::DomainSuffixWhitelist | Attribute::ProhibitedSanTypes))
}

// ------------------------------------------------------------------ the calls

/// A policy call's `Class` and `AttributeName`, read: only class `X509 Certificate`, only the
/// attributes of [`Attribute::ALL`] (anything else is 400 with the names it could be).
pub fn attribute(class: Option<&str>, name: Option<&str>) -> Result<Attribute> {
    match class.map(str::trim) {
        Some(c) if c.eq_ignore_ascii_case(POLICY_CLASS) => {}
        Some(c) => {
            return Err(CertError::Invalid(format!("Class {c:?}: this server keeps folder policy for class {POLICY_CLASS} only.")));
        }
        None => return Err(CertError::Invalid(format!("Class is required ({POLICY_CLASS})."))),
    }
    let name = name.map(str::trim).filter(|n| !n.is_empty()).ok_or_else(|| CertError::Invalid("AttributeName is required.".into()))?;
    Attribute::parse(name).ok_or_else(|| {
        let known: Vec<&str> = Attribute::ALL.iter().map(|(_, n)| *n).collect();
        CertError::Invalid(format!("Policy attribute {name:?} is not supported by this server; it supports {}.", known.join(", ")))
    })
}

/// The policy folder `dn` names, for a caller who holds `need` on it: a folder the caller has no
/// right on at all is one that does not exist (400); one they hold other rights on is 403.
async fn folder_for(app: &App, c: &Caller, dn: &str, need: Rights, what: &str) -> Result<FolderPath> {
    let folder = svc::policy_folder(app, dn).await?;
    let held = c.perms.effective(&folder).implied();
    if c.perms.master_admin || held.contains(need) {
        return Ok(folder);
    }
    if held == Rights::NONE {
        return Err(CertError::NoPolicy(format!("PolicyDN: {} does not exist", folder.as_str())));
    }
    Err(CertError::Denied(format!(
        "{what} the policy of {} needs the {} right on it.",
        folder.as_str(),
        if need == Rights::WRITE { "Write" } else { "Read" }
    )))
}

/// Resolves each identity of a `Contact` or `Approver` (a prefixed name or universal, as
/// `Identity/Validate` reads it) to its prefixed universal; an unknown one is 400.
async fn identities(app: &App, attr: Attribute, values: &[String]) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for v in values.iter().filter(|v| !v.trim().is_empty()) {
        let unknown = || CertError::Invalid(format!("{}: {v:?} is not an identity of this server.", attr.name()));
        let r = strongroom_core::identity::IdentityRef::parse(v).ok_or_else(unknown)?;
        let found = people::resolve(app, &r).await?.ok_or_else(unknown)?;
        let universal = found.entry().prefixed_universal();
        if !out.contains(&universal) {
            out.push(universal);
        }
    }
    Ok(out)
}

/// How often a policy change is tried again when another one landed between its read and its write.
const TRIES: usize = 64;

/// A folder's own policy as stored (its text, compared in the write) and read.
pub(crate) async fn own(store: &dyn Store, folder: &FolderPath) -> Result<(Option<String>, Policy)> {
    let text = store.cert_policies().await?.into_iter().find(|(k, _)| k == folder.key()).map(|(_, t)| t);
    let p = match &text {
        Some(t) => serde_json::from_str(t).map_err(|e| CertError::Internal(format!("a stored policy: {e}")))?,
        None => Policy::default(),
    };
    Ok((text, p))
}

/// Changes folder `folder`'s own policy with `change` (`Ok(false)`: nothing to change), by one
/// conditional write on the policy read (another change landing between the read and the write
/// makes it read and change again, so none is lost), with a `certificate.policy_set` event.
async fn update(app: &App, c: &Caller, folder: &FolderPath, what: &str, change: impl Fn(&mut Policy) -> Result<bool>) -> Result<()> {
    for _ in 0..TRIES {
        let (old, mut p) = own(&*app.store, folder).await?;
        if !change(&mut p)? {
            return Ok(());
        }
        let new =
            if p == Policy::default() { None } else { Some(serde_json::to_string(&p).map_err(|e| CertError::Internal(e.to_string()))?) };
        let shown = new.as_deref().unwrap_or("{}");
        let event = c.event(app, EventKind::CertPolicySet, None).object(folder.as_str()).detail(format!("{what} policy={shown}"));
        match app.store.replace_cert_policy(folder.clone(), old, new, event).await? {
            Some(true) => return Ok(()),
            Some(false) => continue,
            None => return Err(CertError::NoPolicy(format!("PolicyDN: {} does not exist", folder.as_str()))),
        }
    }
    Err(CertError::Internal(format!("the policy of {} kept changing: {TRIES} tries", folder.as_str())))
}

/// `Config/WritePolicy`: sets one attribute of a folder's policy (Write on the folder), checked as
/// `admin policy set` checks it, with a chained `certificate.policy_set` event.
pub async fn write(app: &App, c: &Caller, dn: &str, attr: Attribute, values: &[String], locked: bool) -> Result<()> {
    let folder = folder_for(app, c, dn, Rights::WRITE, "Writing").await?;
    let values = match attr {
        Attribute::Contact | Attribute::Approver => identities(app, attr, values).await?,
        _ => values.to_vec(),
    };
    let cas = if attr == Attribute::CertificateAuthority { app.store.cert_authorities().await? } else { Vec::new() };
    let what = format!("attribute={:?} locked={locked}", attr.name());
    update(app, c, &folder, &what, |p| {
        set(p, attr, &values, locked, &cas)?;
        p.check().map_err(CertError::Invalid)?;
        Ok(true)
    })
    .await
}

/// `Config/ClearPolicyAttribute`: clears one attribute of a folder's policy (Write on the folder);
/// clearing what is not set writes nothing.
pub async fn clear_attribute(app: &App, c: &Caller, dn: &str, attr: Attribute) -> Result<()> {
    let folder = folder_for(app, c, dn, Rights::WRITE, "Clearing").await?;
    update(app, c, &folder, &format!("cleared={:?}", attr.name()), |p| {
        if read(p, attr).is_none() {
            return Ok(false);
        }
        clear(p, attr);
        Ok(true)
    })
    .await
}

/// `Config/ReadPolicy`: the folder's own values of `attr` (Read on the folder).
pub async fn read_attribute(app: &App, c: &Caller, dn: &str, attr: Attribute) -> Result<Option<(Vec<String>, bool)>> {
    let folder = folder_for(app, c, dn, Rights::READ, "Reading").await?;
    Ok(read(&own(&*app.store, &folder).await?.1, attr))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| (*x).to_owned()).collect()
    }

    #[test]
    fn every_attribute_round_trips() {
        let mut p = Policy::default();
        for (attr, values, locked) in [
            (Attribute::Organization, s(&["Acme"]), true),
            (Attribute::OrganizationalUnit, s(&["Ops", "Web"]), false),
            (Attribute::Country, s(&["fr"]), true),
            (Attribute::KeyAlgorithm, s(&["ECDSA"]), true),
            (Attribute::EllipticCurve, s(&["p384"]), true),
            (Attribute::ManualCsr, s(&["0"]), true),
            (Attribute::ManagementType, s(&["provisioning"]), false),
            (Attribute::DomainSuffixWhitelist, s(&["Example.com", "example.org"]), true),
            (Attribute::ProhibitWildcard, s(&["1"]), false),
            (Attribute::ProhibitedSanTypes, s(&["IP", "ipaddress", "OtherName"]), false),
            (Attribute::AllowPrivateKeyReuse, s(&["0"]), true),
        ] {
            assert_eq!(set(&mut p, attr, &values, locked, &[]), Ok(()), "{attr:?}");
        }
        assert_eq!(p.check(), Ok(()));
        assert_eq!(read(&p, Attribute::Country), Some((s(&["FR"]), true)));
        assert_eq!(read(&p, Attribute::KeyAlgorithm), Some((s(&["ECC"]), true)));
        assert_eq!(read(&p, Attribute::EllipticCurve), Some((s(&["P384"]), true)));
        assert_eq!(read(&p, Attribute::PkixParameterSet), Some((s(&["1.3.6.1.4.1.28783.10.2.1.384"]), true)));
        assert_eq!(read(&p, Attribute::ManagementType), Some((s(&["Provisioning"]), false)));
        assert_eq!(read(&p, Attribute::DomainSuffixWhitelist), Some((s(&["example.com", "example.org"]), true)));
        assert_eq!(read(&p, Attribute::ProhibitWildcard), Some((s(&["1"]), true)));
        assert_eq!(p.wildcards, Some(false));
        assert_eq!(read(&p, Attribute::ProhibitedSanTypes), Some((s(&["IP", "UPN"]), true)));
        assert_eq!(read(&p, Attribute::OrganizationalUnit), Some((s(&["Ops", "Web"]), false)));
        clear(&mut p, Attribute::Country);
        assert_eq!(read(&p, Attribute::Country), None);
        clear(&mut p, Attribute::PkixParameterSet);
        assert_eq!((read(&p, Attribute::KeyAlgorithm), read(&p, Attribute::EllipticCurve)), (None, None));
    }

    #[test]
    fn pkix_sets_the_key_and_a_default_does_not_loosen_a_policy() {
        let mut p = Policy::default();
        let rsa3072 = s(&["1.3.6.1.4.1.28783.10.1.1.3072"]);
        assert_eq!(set(&mut p, Attribute::PkixParameterSet, &rsa3072, true, &[]), Ok(()));
        assert_eq!(set(&mut p, Attribute::PkixParameterSetDefault, &rsa3072, true, &[]), Ok(()));
        assert_eq!(
            (read(&p, Attribute::KeyAlgorithm), read(&p, Attribute::KeyBitStrength)),
            (Some((s(&["RSA"]), true)), Some((s(&["3072"]), true)))
        );
        let mut d = Policy::default();
        assert_eq!(set(&mut d, Attribute::PkixParameterSetDefault, &s(&["1.3.6.1.4.1.28783.10.2.1.256"]), false, &[]), Ok(()));
        assert_eq!(read(&d, Attribute::EllipticCurve), Some((s(&["P256"]), false)));
        assert!(set(&mut d, Attribute::PkixParameterSet, &s(&["1.2.3"]), true, &[]).is_err());
    }

    #[test]
    fn bad_values_and_names_are_refused() {
        let mut p = Policy::default();
        assert!(set(&mut p, Attribute::KeyBitStrength, &s(&["big"]), true, &[]).is_err());
        assert!(set(&mut p, Attribute::EllipticCurve, &s(&["P999"]), true, &[]).is_err());
        assert!(set(&mut p, Attribute::ManualCsr, &s(&["maybe"]), true, &[]).is_err());
        assert!(set(&mut p, Attribute::Organization, &s(&["a", "b"]), true, &[]).is_err());
        assert!(matches!(set(&mut p, Attribute::CertificateAuthority, &s(&["nope"]), true, &[]), Err(SetError::NotFound(_))));
        assert_eq!(set(&mut p, Attribute::KeyBitStrength, &s(&["1024"]), true, &[]), Ok(()));
        assert!(p.check().is_err());
        assert!(attribute(Some("X509 Certificate"), Some("Favourite Colour")).is_err());
        assert!(attribute(Some("Policy"), Some("City")).is_err());
        assert_eq!(attribute(Some("x509 certificate"), Some("prohibit wildcard")).ok(), Some(Attribute::ProhibitWildcard));
    }
}
