//! Certificates, the pure part: the product's vault types, key
//! specifications as clients send them, folder policies (each value locked
//! or a default, inherited down the tree) and the check of a request
//! against the effective policy. No I/O, no clock, no randomness.

use serde::{Deserialize, Serialize};

pub mod enroll;
pub mod fields;
pub mod names;

/// The product's vault types of a certificate's entries (`VaultType`).
pub mod vault_type {
    pub const CERTIFICATE: i32 = 2;
    pub const PKCS8: i32 = 256;
    pub const PKCS10: i32 = 512;
    /// The archived overlay bit (`Mutate`d on renewal): 1073741826, 1073742080, 1073742336.
    pub const ARCHIVED: i32 = 1 << 30;
    pub const ARCHIVED_CERTIFICATE: i32 = ARCHIVED + CERTIFICATE;
    pub const ARCHIVED_PKCS8: i32 = ARCHIVED + PKCS8;
    pub const ARCHIVED_PKCS10: i32 = ARCHIVED + PKCS10;
}

/// Where the tree keeps the issuing CAs: `\VED\Policy\CA Templates\NAME`.
pub const CA_FOLDER: &str = "\\VED\\Policy\\CA Templates";

/// The class of a certificate object (the product's `SchemaClass` for server certificates).
pub const CERTIFICATE_CLASS: &str = "X509 Server Certificate";
/// The class of an issuing CA's object: Strongroom's own (clients see a CA only as a DN, so a
/// name of its own cannot be taken for one of the product's CA template classes).
pub const CA_CLASS: &str = "Strongroom CA";

/// The smallest RSA key accepted, whatever the policy.
pub const MIN_RSA_BITS: u32 = 2048;

/// An elliptic curve as the product names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Curve {
    P256,
    P384,
    P521,
}

impl Curve {
    pub fn as_str(self) -> &'static str {
        match self {
            Curve::P256 => "P256",
            Curve::P384 => "P384",
            Curve::P521 => "P521",
        }
    }

    /// `P256`, `p-256`, `secp256r1`, `prime256v1`, `256`, …
    pub fn parse(s: &str) -> Option<Curve> {
        let t: String = s.trim().chars().filter(|c| *c != '-' && *c != '_' && *c != ' ').collect::<String>().to_ascii_lowercase();
        match t.as_str() {
            "p256" | "secp256r1" | "prime256v1" | "256" | "ecdsap256" => Some(Curve::P256),
            "p384" | "secp384r1" | "384" | "ecdsap384" => Some(Curve::P384),
            "p521" | "secp521r1" | "521" | "ecdsap521" => Some(Curve::P521),
            _ => None,
        }
    }
}

/// A key: RSA of a size, or EC on a curve.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KeySpec {
    Rsa(u32),
    Ec(Curve),
}

impl KeySpec {
    /// The product's `KeyAlgorithm`.
    pub fn algorithm(self) -> &'static str {
        match self {
            KeySpec::Rsa(_) => "RSA",
            KeySpec::Ec(_) => "ECC",
        }
    }

    pub fn describe(self) -> String {
        match self {
            KeySpec::Rsa(b) => format!("RSA {b}"),
            KeySpec::Ec(c) => format!("ECC {}", c.as_str()),
        }
    }

    /// The key of a `PkixParameterSet` OID (`1.3.6.1.4.1.28783.10.1.1.2048` RSA 2048,
    /// `….10.2.1.256` P-256; the OIDs vcert sends).
    pub fn from_pkix_oid(oid: &str) -> Option<KeySpec> {
        let rest = oid.trim().strip_prefix("1.3.6.1.4.1.28783.10.")?;
        let parts: Vec<&str> = rest.split('.').collect();
        match parts.as_slice() {
            ["1", "1", bits] => bits.parse().ok().map(KeySpec::Rsa),
            ["2", "1", curve] => Curve::parse(curve).map(KeySpec::Ec),
            _ => None,
        }
    }

    /// The key asked for by `KeyAlgorithm` (`RSA`/`ECC`/`ECDSA`/`EC`), `KeyBitSize` and `EllipticCurve`.
    pub fn from_fields(algorithm: Option<&str>, bits: Option<u32>, curve: Option<&str>) -> Result<Option<KeySpec>, String> {
        let curve = match curve.filter(|c| !c.trim().is_empty()) {
            Some(c) => Some(Curve::parse(c).ok_or_else(|| format!("EllipticCurve {c:?} is not one of P256, P384, P521."))?),
            None => None,
        };
        match algorithm.map(|a| a.trim().to_ascii_uppercase()) {
            Some(a) if a == "RSA" => Ok(Some(KeySpec::Rsa(bits.unwrap_or(2048)))),
            Some(a) if a == "ECC" || a == "EC" || a == "ECDSA" => Ok(Some(KeySpec::Ec(curve.unwrap_or(Curve::P256)))),
            Some(a) if !a.is_empty() => Err(format!("KeyAlgorithm {a:?} is not RSA or ECC.")),
            _ => Ok(match (bits, curve) {
                (_, Some(c)) => Some(KeySpec::Ec(c)),
                (Some(b), None) => Some(KeySpec::Rsa(b)),
                (None, None) => None,
            }),
        }
    }
}

/// One policy value: locked (a policy the request must meet) or a default.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Setting<T> {
    pub value: T,
    #[serde(default)]
    pub locked: bool,
}

/// What a folder sets; `None` inherits from above.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Policy {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca: Option<Setting<String>>,
    /// `RSA` or `ECC`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_algorithm: Option<Setting<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_size: Option<Setting<u32>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub curve: Option<Setting<Curve>>,
    /// Domain suffixes a CN and DNS names must fall under (empty: any).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domains: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wildcards: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub organization: Option<Setting<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub organizational_unit: Option<Setting<Vec<String>>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub city: Option<Setting<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<Setting<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub country: Option<Setting<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validity_days: Option<u32>,
    /// `Manual Approval`: requests here wait for an approver before anything is issued.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manual_approval: Option<Setting<bool>>,
    /// The product's `Prohibited SAN Types`: of `DNS`, `IP`, `Email`, `URI`, `UPN`, the kinds of
    /// subject alternative names a request here may not have (`None` inherits; none: all allowed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prohibited_san_types: Option<Vec<String>>,
    /// `Manual Csr`: `true` lets a request bring its own CSR (`UserProvided`), `false` allows only
    /// a key of the server's making (`ServiceGenerated`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manual_csr: Option<Setting<bool>>,
    /// `Management Type`: one of [`MANAGEMENT_TYPES`] (shown by CheckPolicy; not enforced).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub management_type: Option<Setting<String>>,
    /// `Allow Private Key Reuse` (CheckPolicy's `PrivateKeyReuseAllowed`; shown, not enforced).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_reuse: Option<bool>,
    /// `Want Renewal` (vcert writes it with `Allow Private Key Reuse`): kept and read back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub want_renewal: Option<bool>,
    /// `Contact`: identities as prefixed universals (`local:{guid}`), read back by `Config/ReadPolicy`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contacts: Option<Vec<String>>,
    /// `Approver`: identities as prefixed universals, read back by `Config/ReadPolicy`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approvers: Option<Vec<String>>,
}

/// The product's management types (`Management Type`).
pub const MANAGEMENT_TYPES: [&str; 4] = ["Unassigned", "Monitoring", "Enrollment", "Provisioning"];

/// The kinds of subject alternative names a policy names, as it spells them.
pub const SAN_TYPES: [&str; 5] = ["DNS", "IP", "Email", "URI", "UPN"];

/// A kind of SAN in any case (`ipaddress`, `rfc822` and `othername` too), spelled as [`SAN_TYPES`].
pub fn san_type(s: &str) -> Option<&'static str> {
    match s.trim().to_ascii_lowercase().as_str() {
        "dns" => Some("DNS"),
        "ip" | "ipaddress" => Some("IP"),
        "email" | "rfc822" => Some("Email"),
        "uri" => Some("URI"),
        "upn" | "othername" => Some("UPN"),
        _ => None,
    }
}

fn merge<T: Clone>(above: &Option<Setting<T>>, here: &Option<Setting<T>>) -> Option<Setting<T>> {
    match (above, here) {
        (Some(a), _) if a.locked => Some(a.clone()),
        (_, Some(h)) => Some(h.clone()),
        (a, None) => a.clone(),
    }
}

impl Policy {
    /// The policy in force at a folder: its ancestors' policies, top first, then its own. A locked
    /// value set higher up wins over anything below it; otherwise the nearest value wins.
    pub fn effective<'a>(chain: impl IntoIterator<Item = &'a Policy>) -> Policy {
        let mut p = Policy::default();
        for here in chain {
            p = Policy {
                ca: merge(&p.ca, &here.ca),
                key_algorithm: merge(&p.key_algorithm, &here.key_algorithm),
                key_size: merge(&p.key_size, &here.key_size),
                curve: merge(&p.curve, &here.curve),
                domains: here.domains.clone().or(p.domains),
                wildcards: here.wildcards.or(p.wildcards),
                organization: merge(&p.organization, &here.organization),
                organizational_unit: merge(&p.organizational_unit, &here.organizational_unit),
                city: merge(&p.city, &here.city),
                state: merge(&p.state, &here.state),
                country: merge(&p.country, &here.country),
                validity_days: here.validity_days.or(p.validity_days),
                manual_approval: merge(&p.manual_approval, &here.manual_approval),
                prohibited_san_types: here.prohibited_san_types.clone().or(p.prohibited_san_types),
                manual_csr: merge(&p.manual_csr, &here.manual_csr),
                management_type: merge(&p.management_type, &here.management_type),
                key_reuse: here.key_reuse.or(p.key_reuse),
                want_renewal: here.want_renewal.or(p.want_renewal),
                // Who to tell and who approves are the folder's own (Config/ReadPolicy reads them there).
                contacts: here.contacts.clone(),
                approvers: here.approvers.clone(),
            };
        }
        p
    }

    /// Checks a policy an administrator sets: values clients can read (vcert panics on a locked
    /// key algorithm it does not know).
    pub fn check(&self) -> Result<(), String> {
        if let Some(a) = &self.key_algorithm
            && a.value != "RSA"
            && a.value != "ECC"
        {
            return Err("The key algorithm is RSA or ECC.".into());
        }
        if let Some(s) = &self.key_size
            && ![2048, 3072, 4096, 8192].contains(&s.value)
        {
            return Err("The key size is 2048, 3072, 4096 or 8192.".into());
        }
        if let Some(d) = &self.domains {
            for x in d {
                if x.is_empty() || x.contains(char::is_whitespace) || x.starts_with('*') {
                    return Err(format!("{x:?} is not a domain."));
                }
            }
        }
        if let Some(c) = &self.country
            && c.value.len() != 2
        {
            return Err("The country is a two-letter code.".into());
        }
        if let Some(m) = &self.management_type
            && !MANAGEMENT_TYPES.contains(&m.value.as_str())
        {
            return Err(format!("The management type is one of {}.", MANAGEMENT_TYPES.join(", ")));
        }
        if let Some(x) = self.prohibited_san_types.iter().flatten().find(|x| !SAN_TYPES.contains(&x.as_str())) {
            return Err(format!("{x:?} is not a SAN type: {}.", SAN_TYPES.join(", ")));
        }
        Ok(())
    }

    /// Whether SANs of `kind` (one of [`SAN_TYPES`]) may be asked for here.
    pub fn san_allowed(&self, kind: &str) -> bool {
        !self.prohibited_san_types.iter().flatten().any(|x| x == kind)
    }
}

/// Whether a request may bring its own CSR: not where a locked `Manual Csr` of `0` allows only
/// keys of the server's making.
pub fn judge_csr(p: &Policy, user_csr: bool) -> Result<(), String> {
    if user_csr && p.manual_csr.as_ref().is_some_and(|m| m.locked && !m.value) {
        return Err("The policy allows only keys generated by the server (Manual Csr is 0): send no CSR.".into());
    }
    Ok(())
}

/// What a request asks for, as far as the policy judges it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Asked {
    pub common_name: Option<String>,
    pub dns: Vec<String>,
    /// The kinds of SANs asked for ([`SAN_TYPES`]).
    pub san_types: Vec<String>,
    pub organization: Option<String>,
    pub organizational_unit: Vec<String>,
    pub city: Option<String>,
    pub state: Option<String>,
    pub country: Option<String>,
    pub key: KeySpec,
}

impl Default for KeySpec {
    fn default() -> Self {
        KeySpec::Ec(Curve::P256)
    }
}

fn under(name: &str, domain: &str) -> bool {
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    let name = name.strip_prefix("*.").unwrap_or(&name);
    let domain = domain.trim_start_matches('.').trim_end_matches('.').to_ascii_lowercase();
    name == domain || name.ends_with(&format!(".{domain}"))
}

fn locked_text(what: &str, s: &Option<Setting<String>>, asked: &Option<String>) -> Result<(), String> {
    if let (Some(p), Some(a)) = (s, asked)
        && p.locked
        && !a.is_empty()
        && a != &p.value
    {
        return Err(format!("{what} is locked to {:?} by policy; the request has {a:?}.", p.value));
    }
    Ok(())
}

/// Judges a request against the effective policy: the reason for a refusal,
/// in the words clients show (nothing is issued then).
pub fn judge(p: &Policy, a: &Asked) -> Result<(), String> {
    let names: Vec<&String> = a.common_name.iter().chain(a.dns.iter()).collect();
    if p.wildcards == Some(false)
        && let Some(n) = names.iter().find(|n| n.contains('*'))
    {
        return Err(format!("Wildcards are not allowed by policy: {n}."));
    }
    if let Some(domains) = p.domains.as_ref().filter(|d| !d.is_empty()) {
        for n in &names {
            // A CN that is not a host name (no dot) is not judged by the whitelist.
            if (a.dns.contains(n) || n.contains('.')) && !domains.iter().any(|d| under(n, d)) {
                return Err(format!("{n} is not in the domains allowed by policy ({}).", domains.join(", ")));
            }
        }
    }
    if let Some(k) = a.san_types.iter().find(|k| !p.san_allowed(k)) {
        return Err(format!("Subject alternative names of type {k} are prohibited by policy."));
    }
    locked_text("Organization", &p.organization, &a.organization)?;
    locked_text("City", &p.city, &a.city)?;
    locked_text("State", &p.state, &a.state)?;
    locked_text("Country", &p.country, &a.country)?;
    if let Some(ou) = &p.organizational_unit
        && ou.locked
        && !a.organizational_unit.is_empty()
        && a.organizational_unit != ou.value
    {
        return Err(format!("Organizational Unit is locked to {:?} by policy.", ou.value));
    }
    if let KeySpec::Rsa(bits) = a.key
        && bits < MIN_RSA_BITS
    {
        return Err(format!("The key is RSA {bits}: at least {MIN_RSA_BITS} bits are required."));
    }
    if let Some(alg) = &p.key_algorithm
        && alg.locked
        && alg.value != a.key.algorithm()
    {
        return Err(format!("The key algorithm is locked to {} by policy; the request has {}.", alg.value, a.key.describe()));
    }
    if let (Some(size), KeySpec::Rsa(bits)) = (&p.key_size, a.key)
        && size.locked
        && bits < size.value
    {
        return Err(format!("The key size is locked to at least {} by policy; the request has {bits}.", size.value));
    }
    if let (Some(curve), KeySpec::Ec(c)) = (&p.curve, a.key)
        && curve.locked
        && curve.value != c
    {
        return Err(format!("The elliptic curve is locked to {} by policy; the request has {}.", curve.value.as_str(), c.as_str()));
    }
    Ok(())
}

/// The product's revocation reasons (`Certificates/Revoke`'s `Reason`): RFC 5280's CRLReason
/// codes 0 to 5, as the product's documentation names them. No other code is accepted.
pub const REVOCATION_REASONS: [&str; 6] =
    ["unspecified", "key compromise", "CA compromise", "affiliation changed", "superseded", "cessation of operation"];

/// A revocation reason as given, if it is one of [`REVOCATION_REASONS`]; else the refusal's text.
pub fn revocation_reason(code: i64) -> Result<i64, String> {
    if usize::try_from(code).is_ok_and(|c| c < REVOCATION_REASONS.len()) {
        return Ok(code);
    }
    let known: Vec<String> = REVOCATION_REASONS.iter().enumerate().map(|(i, r)| format!("{i} {r}")).collect();
    Err(format!("Reason {code} is not a revocation reason: {}.", known.join(", ")))
}

/// The class pyvenafi's `certificate.create` passes to `Config/Create` (the product's base class of
/// certificate objects); an object made so shows it as its class.
pub const CREATED_CLASS: &str = "X509 Certificate";

/// Whether `Config/Create` of class `name` makes a certificate object.
pub fn is_certificate_class(name: &str) -> bool {
    let n = name.trim();
    n.eq_ignore_ascii_case(CREATED_CLASS) || n.eq_ignore_ascii_case(CERTIFICATE_CLASS)
}

/// What a certificate object made with `Config/Create` (class `X509 Certificate`) holds until
/// (and after) its first enrollment: its attributes, from which `Certificates/Renew` enrolls it.
/// Stored as JSON with the object; empty fields are left out.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Template {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub contacts: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub approvers: Vec<String>,
    /// `Unassigned`, `Monitoring`, `Enrollment` or `Provisioning`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub management_type: Option<String>,
    /// `Manual Csr`: `true` ("1") when the CSR comes from the caller; `false` ("0") when the server
    /// makes the key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manual_csr: Option<bool>,
    /// `X509 Subject`: the CN.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub common_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub organization: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub organizational_unit: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub city: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub country: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dns: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ip: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub uri: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub email: Vec<String>,
    /// `X509 SubjectAltName OtherName UPN`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub upn: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_algorithm: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_bit_strength: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elliptic_curve: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pkix_parameter_set: Option<String>,
    /// `Certificate Authority`: a CA's DN (or name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certificate_authority: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub disable_automatic_renewal: bool,
}

/// Why `Config/Create` refused an object's attributes: its `Result` code and text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttributeError {
    pub code: i32,
    pub text: String,
}

/// `Config` result `InvalidArgument`: a value that cannot be.
pub const RESULT_INVALID_ARGUMENT: i32 = 2;
/// `Config` result `IllegalAttributeForClass`: a name this class has not (here).
pub const RESULT_ILLEGAL_ATTRIBUTE: i32 = 112;

/// Attributes of the class that are accepted and not acted on: which driver, hash or renewal
/// window the product's own engine would use.
const IGNORED_ATTRIBUTES: [&str; 4] = ["driver name", "pkcs10 hash algorithm", "renewal window", "origin"];

fn flag_value(name: &str, v: &str) -> Result<bool, AttributeError> {
    match v.trim() {
        "1" => Ok(true),
        "0" | "" => Ok(false),
        t if t.eq_ignore_ascii_case("true") => Ok(true),
        t if t.eq_ignore_ascii_case("false") => Ok(false),
        _ => Err(AttributeError { code: RESULT_INVALID_ARGUMENT, text: format!("{name} is \"0\" or \"1\", not {v:?}.") }),
    }
}

impl Template {
    /// Reads `Config/Create`'s `NameAttributeList` (names in any case; each value a list). A name
    /// outside the ones listed in the book is `Result` 112, a value that cannot be 2.
    pub fn from_attributes(attributes: &[(String, Vec<String>)]) -> Result<Template, AttributeError> {
        let mut t = Template::default();
        let bad = |text: String| AttributeError { code: RESULT_INVALID_ARGUMENT, text };
        for (name, values) in attributes {
            let values: Vec<String> = values.iter().map(|v| v.trim().to_owned()).filter(|v| !v.is_empty()).collect();
            let one = values.first().cloned();
            let key = name.trim().to_ascii_lowercase();
            match key.as_str() {
                "description" => t.description = one,
                "contact" => t.contacts = values,
                "approver" => t.approvers = values,
                "management type" => {
                    if let Some(m) = &one {
                        let known = ["Unassigned", "Monitoring", "Enrollment", "Provisioning"];
                        let Some(k) = known.iter().find(|k| k.eq_ignore_ascii_case(m)) else {
                            return Err(bad(format!("Management Type {m:?} is not one of {}.", known.join(", "))));
                        };
                        t.management_type = Some((*k).to_owned());
                    }
                }
                "manual csr" => t.manual_csr = one.as_deref().map(|v| flag_value(name, v)).transpose()?,
                "x509 subject" => t.common_name = one,
                "organization" => t.organization = one,
                "organizational unit" => t.organizational_unit = values,
                "city" => t.city = one,
                "state" => t.state = one,
                "country" => {
                    if let Some(c) = &one
                        && (c.len() != 2 || !c.chars().all(|x| x.is_ascii_alphabetic()))
                    {
                        return Err(bad(format!("Country {c:?} is not a two-letter code.")));
                    }
                    t.country = one;
                }
                "x509 subjectaltname dns" => t.dns = values,
                "x509 subjectaltname ipaddress" => {
                    if let Some(v) = values.iter().find(|v| v.parse::<std::net::IpAddr>().is_err()) {
                        return Err(bad(format!("{v:?} is not an IP address.")));
                    }
                    t.ip = values;
                }
                "x509 subjectaltname uri" => t.uri = values,
                "x509 subjectaltname rfc822" => t.email = values,
                "x509 subjectaltname othername upn" => t.upn = values,
                "key algorithm" => t.key_algorithm = one,
                "key bit strength" => {
                    t.key_bit_strength = match &one {
                        Some(v) => Some(v.parse().map_err(|_| bad(format!("Key Bit Strength {v:?} is not a number.")))?),
                        None => None,
                    }
                }
                "elliptic curve" => t.elliptic_curve = one,
                "pkix parameter set" => t.pkix_parameter_set = one,
                "certificate authority" => t.certificate_authority = one,
                "disable automatic renewal" => {
                    t.disable_automatic_renewal = one.as_deref().map(|v| flag_value(name, v)).transpose()?.unwrap_or(false)
                }
                "generate keypair on application" => {
                    if one.as_deref().map(|v| flag_value(name, v)).transpose()? == Some(true) {
                        return Err(bad(
                            "Generate Keypair On Application: keys made on applications need devices, which this server does not manage."
                                .into(),
                        ));
                    }
                }
                k if IGNORED_ATTRIBUTES.contains(&k) => {}
                _ => {
                    return Err(AttributeError {
                        code: RESULT_ILLEGAL_ATTRIBUTE,
                        text: format!("Attribute {:?} is not kept on certificate objects by this server.", name.trim()),
                    });
                }
            }
        }
        t.check_names().map_err(bad)?;
        t.key_spec().map_err(bad)?;
        Ok(t)
    }

    /// Whether the names it holds may be issued, as a request's would be ([`names`]).
    fn check_names(&self) -> Result<(), String> {
        let one = |k: &str, v: &Option<String>| v.iter().map(|v| (k.to_owned(), v.clone())).collect::<Vec<_>>();
        let mut subject = one("CN", &self.common_name);
        subject.extend(one("O", &self.organization));
        subject.extend(self.organizational_unit.iter().map(|v| ("OU".to_owned(), v.clone())));
        subject.extend(one("L", &self.city));
        subject.extend(one("ST", &self.state));
        names::subject(&subject)?;
        self.dns.iter().try_for_each(|d| names::host_name(d))?;
        self.email.iter().try_for_each(|e| names::email(e))?;
        self.uri.iter().try_for_each(|u| names::uri(u))?;
        match self.upn.iter().find(|u| u.len() > 1024 || u.chars().any(char::is_control)) {
            Some(u) => Err(format!("{} is not a user principal name.", names::shown(u))),
            None => Ok(()),
        }
    }

    /// The key the template asks for (`None`: the policy's), or why it names none that can be.
    pub fn key_spec(&self) -> Result<Option<KeySpec>, String> {
        if let Some(oid) = self.pkix_parameter_set.as_ref().filter(|o| !o.trim().is_empty()) {
            return KeySpec::from_pkix_oid(oid).map(Some).ok_or_else(|| format!("PKIX Parameter Set {oid:?} is not a known key."));
        }
        let spec = KeySpec::from_fields(self.key_algorithm.as_deref(), self.key_bit_strength, self.elliptic_curve.as_deref())?;
        if let Some(KeySpec::Rsa(bits)) = spec
            && !(MIN_RSA_BITS..=8192).contains(&bits)
        {
            return Err(format!("Key Bit Strength {bits} is not between {MIN_RSA_BITS} and 8192."));
        }
        Ok(spec)
    }
}

/// A thumbprint as clients send it: upper-case hex without `:`, `.` or spaces.
pub fn normalize_thumbprint(s: &str) -> String {
    s.chars().filter(|c| c.is_ascii_hexdigit()).collect::<String>().to_ascii_uppercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn locked<T>(value: T) -> Option<Setting<T>> {
        Some(Setting { value, locked: true })
    }

    fn attrs(list: &[(&str, &[&str])]) -> Vec<(String, Vec<String>)> {
        list.iter().map(|(n, v)| ((*n).to_owned(), v.iter().map(|x| (*x).to_owned()).collect())).collect()
    }

    #[test]
    fn templates_read_what_pyvenafi_sends_and_refuse_the_rest() {
        let t = Template::from_attributes(&attrs(&[
            ("Description", &["made by a test"]),
            ("Management Type", &["enrollment"]),
            ("Manual Csr", &["0"]),
            ("X509 Subject", &["www.example.com"]),
            ("Organizational Unit", &["a", "b"]),
            ("Driver Name", &["appx509certificate"]),
            ("X509 SubjectAltName DNS", &["www.example.com", "api.example.com"]),
            ("X509 SubjectAltName IPAddress", &["192.0.2.1"]),
            ("Key Algorithm", &["RSA"]),
            ("Key Bit Strength", &["3072"]),
            ("Disable Automatic Renewal", &["1"]),
        ]))
        .unwrap();
        assert_eq!(t.management_type.as_deref(), Some("Enrollment"));
        assert_eq!(t.manual_csr, Some(false));
        assert_eq!(t.common_name.as_deref(), Some("www.example.com"));
        assert_eq!(t.organizational_unit, vec!["a", "b"]);
        assert_eq!(t.dns.len(), 2);
        assert!(t.disable_automatic_renewal);
        assert_eq!(t.key_spec(), Ok(Some(KeySpec::Rsa(3072))));
        let code = |list: &[(&str, &[&str])]| Template::from_attributes(&attrs(list)).map_err(|e| e.code);
        assert_eq!(code(&[("Favourite Colour", &["blue"])]), Err(RESULT_ILLEGAL_ATTRIBUTE));
        assert_eq!(code(&[("Key Bit Strength", &["1024"])]), Err(RESULT_INVALID_ARGUMENT));
        assert_eq!(code(&[("Key Algorithm", &["DSA"])]), Err(RESULT_INVALID_ARGUMENT));
        assert_eq!(code(&[("X509 SubjectAltName IPAddress", &["not-an-ip"])]), Err(RESULT_INVALID_ARGUMENT));
        assert_eq!(code(&[("Country", &["USA"])]), Err(RESULT_INVALID_ARGUMENT));
        assert_eq!(code(&[("Manual Csr", &["maybe"])]), Err(RESULT_INVALID_ARGUMENT));
        assert_eq!(code(&[("Generate Keypair On Application", &["1"])]), Err(RESULT_INVALID_ARGUMENT));
        // Names that are not names, as a request's would be refused.
        for (attr, value) in [
            ("X509 Subject", "www.evil.com\0.example.com"),
            ("X509 Subject", "evil.com/.example.com"),
            ("X509 SubjectAltName DNS", ".example.com"),
            ("X509 SubjectAltName DNS", "a..example.com"),
            ("X509 SubjectAltName RFC822", "nobody"),
            ("X509 SubjectAltName URI", "no scheme"),
            ("Organization", "Acme\u{0}"),
        ] {
            assert_eq!(code(&[(attr, &[value])]), Err(RESULT_INVALID_ARGUMENT), "{attr} {value:?}");
        }
        let long_cn = "a".repeat(100_000);
        let e = Template::from_attributes(&attrs(&[("X509 Subject", &[long_cn.as_str()])])).unwrap_err();
        assert!(e.text.contains("longer than 64") && e.text.len() < 200, "{}", e.text);
        let upn = Template::from_attributes(&attrs(&[("X509 SubjectAltName OtherName UPN", &["alice@corp.example", " "])])).unwrap();
        assert_eq!(upn.upn, vec!["alice@corp.example"]);
        assert_eq!(
            code(&[("PKIX Parameter Set", &["1.3.6.1.4.1.28783.10.2.1.384"])]).map(|t| t.key_spec()),
            Ok(Ok(Some(KeySpec::Ec(Curve::P384))))
        );
        let json = serde_json::to_string(&t).unwrap();
        assert_eq!(serde_json::from_str::<Template>(&json).unwrap(), t);
    }

    #[test]
    fn key_specs_read_every_spelling() {
        assert_eq!(KeySpec::from_pkix_oid("1.3.6.1.4.1.28783.10.1.1.2048"), Some(KeySpec::Rsa(2048)));
        assert_eq!(KeySpec::from_pkix_oid("1.3.6.1.4.1.28783.10.2.1.256"), Some(KeySpec::Ec(Curve::P256)));
        assert_eq!(KeySpec::from_pkix_oid("1.3.6.1.4.1.28783.10.2.1.384"), Some(KeySpec::Ec(Curve::P384)));
        assert_eq!(KeySpec::from_pkix_oid("1.2.3"), None);
        assert_eq!(KeySpec::from_fields(Some("rsa"), Some(3072), None), Ok(Some(KeySpec::Rsa(3072))));
        assert_eq!(KeySpec::from_fields(Some("ECC"), None, Some("p384")), Ok(Some(KeySpec::Ec(Curve::P384))));
        assert_eq!(KeySpec::from_fields(None, None, Some("P521")), Ok(Some(KeySpec::Ec(Curve::P521))));
        assert_eq!(KeySpec::from_fields(None, None, None), Ok(None));
        assert!(KeySpec::from_fields(Some("DSA"), None, None).is_err());
    }

    #[test]
    fn a_locked_value_above_wins_and_a_default_is_overridden() {
        let top = Policy {
            organization: locked("Acme".into()),
            city: Some(Setting { value: "Paris".into(), locked: false }),
            ..Policy::default()
        };
        let below = Policy {
            organization: Some(Setting { value: "Other".into(), locked: false }),
            city: Some(Setting { value: "Lyon".into(), locked: false }),
            ..Policy::default()
        };
        let p = Policy::effective([&top, &below]);
        assert_eq!(p.organization.map(|s| s.value), Some("Acme".into()));
        assert_eq!(p.city.map(|s| s.value), Some("Lyon".into()));
    }

    #[test]
    fn manual_approval_is_inherited_and_a_locked_one_binds_below() {
        let on = |locked| Policy { manual_approval: Some(Setting { value: true, locked }), ..Policy::default() };
        let off = Policy { manual_approval: Some(Setting { value: false, locked: false }), ..Policy::default() };
        let none = Policy::default();
        let value = |p: Policy| p.manual_approval.is_some_and(|s| s.value);
        assert!(value(Policy::effective([&on(false), &none])), "inherited");
        assert!(!value(Policy::effective([&on(false), &off])), "a default is overridden below");
        assert!(value(Policy::effective([&on(true), &off])), "a locked one binds below");
        assert!(!value(Policy::effective([&none, &none])));
    }

    #[test]
    fn only_the_products_revocation_reasons_are_accepted() {
        for code in 0..=5 {
            assert_eq!(revocation_reason(code), Ok(code));
        }
        for code in [-1, 6, 7, 8, 9, 10, 99, i64::MAX, i64::MIN] {
            let e = revocation_reason(code).unwrap_err();
            assert!(e.starts_with(&format!("Reason {code} is not")) && e.contains("1 key compromise"), "{e}");
        }
    }

    #[test]
    fn requests_are_judged() {
        let p = Policy {
            domains: Some(vec!["example.com".into()]),
            wildcards: Some(false),
            organization: locked("Acme".into()),
            key_algorithm: locked("RSA".into()),
            key_size: locked(3072),
            ..Policy::default()
        };
        let ok = Asked {
            common_name: Some("www.example.com".into()),
            dns: vec!["api.example.com".into()],
            organization: Some("Acme".into()),
            key: KeySpec::Rsa(4096),
            ..Asked::default()
        };
        assert_eq!(judge(&p, &ok), Ok(()));
        assert!(judge(&p, &Asked { dns: vec!["evil.org".into()], ..ok.clone() }).is_err());
        assert!(judge(&p, &Asked { common_name: Some("*.example.com".into()), ..ok.clone() }).is_err());
        assert!(judge(&p, &Asked { organization: Some("Evil".into()), ..ok.clone() }).is_err());
        assert!(judge(&p, &Asked { key: KeySpec::Rsa(2048), ..ok.clone() }).is_err());
        assert!(judge(&p, &Asked { key: KeySpec::Ec(Curve::P256), ..ok.clone() }).is_err());
        assert!(judge(&Policy::default(), &Asked { key: KeySpec::Rsa(1024), ..ok }).is_err());
        // Prohibited SAN types: inherited, replaced below, judged, checked when set.
        let top = Policy { prohibited_san_types: Some(vec!["UPN".into()]), ..Policy::default() };
        let p = Policy::effective([&top, &Policy::default()]);
        let upn = Asked { san_types: vec!["DNS".into(), "UPN".into()], ..Asked::default() };
        assert_eq!(judge(&p, &upn), Err("Subject alternative names of type UPN are prohibited by policy.".into()));
        assert!(judge(&p, &Asked { san_types: vec!["DNS".into()], ..Asked::default() }).is_ok());
        assert!(!p.san_allowed("UPN") && p.san_allowed("DNS"));
        let open = Policy::effective([&top, &Policy { prohibited_san_types: Some(Vec::new()), ..Policy::default() }]);
        assert!(judge(&open, &upn).is_ok());
        assert!(Policy { prohibited_san_types: Some(vec!["X400".into()]), ..Policy::default() }.check().is_err());
        assert_eq!(san_type("ipaddress"), Some("IP"));
        assert_eq!(san_type("OtherName"), Some("UPN"));
        assert!(under("a.b.example.com", "example.com"));
        assert!(!under("badexample.com", "example.com"));
    }

    #[test]
    fn csr_generation_is_judged() {
        let p = Policy { manual_csr: locked(false), ..Policy::default() };
        assert!(judge_csr(&p, true).is_err());
        assert_eq!(judge_csr(&p, false), Ok(()));
        let default_only = Policy { manual_csr: Some(Setting { value: false, locked: false }), ..Policy::default() };
        assert_eq!(judge_csr(&default_only, true), Ok(()));
        assert!(Policy { management_type: locked("Sometimes".into()), ..Policy::default() }.check().is_err());
    }

    #[test]
    fn thumbprints_are_normalized() {
        assert_eq!(normalize_thumbprint("ab:cd.Ef 01"), "ABCDEF01");
    }
}
