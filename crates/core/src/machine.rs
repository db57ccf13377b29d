//! Machines without a stored secret: the JWT grant's rules (issuers, JWS
//! signature checks, claim checks, mappings) and the identities mappings
//! give, for JWTs and for client certificates.
//!
//! Pure: the JWT is parsed and checked here with `now` and the issuer's keys
//! as arguments; fetching keys, the replay record and the grant's write are
//! the server's and the store's.
//!
//! - A JWT longer than [`MAX_JWT_LEN`] is refused before any base64 or JSON
//!   work. Its header must name one of [`Algorithm`]'s four: `none` and every
//!   HMAC algorithm are refused whatever the issuer says.
//! - Signatures are checked with `ring`: RS256 (RSA PKCS#1 v1.5 SHA-256) and
//!   PS256 (RSA-PSS SHA-256) from the JWK's `n`/`e`, ES256 (P-256, the JWS
//!   fixed-width `r||s` form) from `x`/`y`, EdDSA (Ed25519) from `x`. A key
//!   whose type does not fit the algorithm, or whose own `alg` differs, is
//!   never tried.
//! - Claims: `iss` is the issuer's URL exactly; `aud` names one of its
//!   audiences; `exp` is required and in the future, `nbf` and `iat` not in
//!   the future, each with the issuer's clock skew; the lifetime (`exp` −
//!   `iat`, or `exp` − now without `iat`) is at most the issuer's maximum.
//! - A mapping's conditions are exact values or globs (`*` any run of
//!   characters, `?` one) on string (or number, boolean) claims; its
//!   identity claim gives the machine identity `jwt+<mapping>:<value>`.
//!   A certificate mapping's identity is `cert+<mapping>:<name>`, the name
//!   from the subject CN, an e-mail SAN or a UPN SAN.

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Map, Value};

use crate::identity::UserId;
use crate::scope::Scope;
use crate::time::UnixTime;

/// The longest JWT looked at: 16 KiB. GitHub Actions' and Kubernetes'
/// tokens are about 1-2 KiB.
pub const MAX_JWT_LEN: usize = 16 * 1024;
/// The longest `jti` recorded; longer ones are refused.
pub const MAX_JTI_LEN: usize = 256;
/// The longest identity value taken from a claim or a certificate.
pub const MAX_SUBJECT_LEN: usize = 256;

/// The JWS algorithms an issuer may accept.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Algorithm {
    RS256,
    PS256,
    ES256,
    EdDSA,
}

impl Algorithm {
    pub const ALL: [Algorithm; 4] = [Algorithm::RS256, Algorithm::PS256, Algorithm::ES256, Algorithm::EdDSA];

    pub fn as_str(self) -> &'static str {
        match self {
            Algorithm::RS256 => "RS256",
            Algorithm::PS256 => "PS256",
            Algorithm::ES256 => "ES256",
            Algorithm::EdDSA => "EdDSA",
        }
    }

    /// One of the four by its JOSE name (exact case). `none`, `HS256` and
    /// everything else: `None`.
    pub fn parse(s: &str) -> Option<Algorithm> {
        Algorithm::ALL.into_iter().find(|a| a.as_str() == s)
    }

    /// A comma-separated list, e.g. `RS256,ES256`.
    pub fn parse_list(s: &str) -> Result<Vec<Algorithm>, String> {
        let mut out = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let a = Algorithm::parse(part).ok_or_else(|| format!("algorithm {part:?} is not accepted (RS256, PS256, ES256, EdDSA)"))?;
            if !out.contains(&a) {
                out.push(a);
            }
        }
        if out.is_empty() {
            return Err("at least one algorithm is needed (RS256, PS256, ES256, EdDSA)".into());
        }
        Ok(out)
    }

    pub fn list(algs: &[Algorithm]) -> String {
        algs.iter().map(|a| a.as_str()).collect::<Vec<_>>().join(",")
    }
}

/// Where an issuer's keys come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeySource {
    /// A JWKS document at this HTTPS URL.
    JwksUrl(String),
    /// OpenID discovery: the document at this URL names `jwks_uri`.
    Discovery(String),
    /// A JWKS document in a file on the server (each replica's own).
    JwksFile(String),
}

impl KeySource {
    pub fn kind(&self) -> &'static str {
        match self {
            KeySource::JwksUrl(_) => "jwks_url",
            KeySource::Discovery(_) => "discovery",
            KeySource::JwksFile(_) => "jwks_file",
        }
    }
    pub fn location(&self) -> &str {
        match self {
            KeySource::JwksUrl(s) | KeySource::Discovery(s) | KeySource::JwksFile(s) => s,
        }
    }
    pub fn from_parts(kind: &str, location: String) -> Option<KeySource> {
        match kind {
            "jwks_url" => Some(KeySource::JwksUrl(location)),
            "discovery" => Some(KeySource::Discovery(location)),
            "jwks_file" => Some(KeySource::JwksFile(location)),
            _ => None,
        }
    }
}

/// A trusted JWT issuer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JwtIssuer {
    /// The administrator's name for it (`github`, `k8s-prod`).
    pub name: String,
    /// Its `iss`, compared exactly.
    pub issuer: String,
    pub keys: KeySource,
    /// The `aud` values it accepts (one must be in the token's `aud`).
    pub audiences: Vec<String>,
    pub algorithms: Vec<Algorithm>,
    /// Seconds of clock difference allowed on `exp`, `nbf` and `iat`.
    pub clock_skew: i64,
    /// The longest lifetime a token may have, in seconds.
    pub max_lifetime: i64,
    pub created_at: UnixTime,
}

/// Where a certificate mapping takes the identity from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CertField {
    /// The subject's common name.
    Cn,
    /// An rfc822Name subject alternative name.
    Email,
    /// A user principal name SAN (otherName 1.3.6.1.4.1.311.20.2.3).
    Upn,
}

impl CertField {
    pub fn as_str(self) -> &'static str {
        match self {
            CertField::Cn => "cn",
            CertField::Email => "email",
            CertField::Upn => "upn",
        }
    }
    pub fn parse(s: &str) -> Option<CertField> {
        match s {
            "cn" => Some(CertField::Cn),
            "email" => Some(CertField::Email),
            "upn" => Some(CertField::Upn),
            _ => None,
        }
    }
}

/// What a mapping matches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MappingRule {
    /// Tokens of issuer `issuer` (its name) whose claims meet every
    /// condition; the identity is the value of `identity_claim`.
    Jwt { issuer: String, conditions: Vec<Condition>, identity_claim: String },
    /// Client certificates issued by a CA of `ca_bundle` (PEM); the identity
    /// from `field`.
    Cert { ca_bundle: String, field: CertField },
}

/// A claim and the pattern its value must match.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Condition {
    pub claim: String,
    pub pattern: String,
}

impl Condition {
    /// `claim=pattern`.
    pub fn parse(s: &str) -> Result<Condition, String> {
        let (claim, pattern) = s.split_once('=').ok_or_else(|| format!("{s:?}: a condition is CLAIM=PATTERN"))?;
        let claim = claim.trim();
        if !valid_claim_name(claim) {
            return Err(format!("{claim:?}: a claim name is 1-64 characters, no spaces or '='"));
        }
        if pattern.contains(['\n', '\r']) || pattern.len() > 1024 {
            return Err("a pattern is one line of at most 1024 characters".into());
        }
        Ok(Condition { claim: claim.to_owned(), pattern: pattern.to_owned() })
    }

    /// Whether the claim's value in `claims` matches.
    pub fn matches(&self, claims: &Map<String, Value>) -> bool {
        claim_text(claims, &self.claim).is_some_and(|v| glob(&self.pattern, &v))
    }

    /// The conditions as stored: one `claim=pattern` a line.
    pub fn encode(conditions: &[Condition]) -> String {
        conditions.iter().map(|c| format!("{}={}", c.claim, c.pattern)).collect::<Vec<_>>().join("\n")
    }

    pub fn decode(text: &str) -> Result<Vec<Condition>, String> {
        text.lines().filter(|l| !l.is_empty()).map(Condition::parse).collect()
    }
}

impl fmt::Display for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}", self.claim, self.pattern)
    }
}

pub fn valid_claim_name(s: &str) -> bool {
    (1..=64).contains(&s.len()) && !s.contains(['=', '\n', '\r', ' ', '\t'])
}

/// Mapping names: 1 to 64 characters, lower-case letters, digits and `.-_`.
pub fn valid_mapping_name(s: &str) -> bool {
    (1..=64).contains(&s.len()) && s.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || ".-_".contains(c))
}

/// A binding of machines to an identity.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mapping {
    pub name: String,
    pub rule: MappingRule,
    /// The API integrations (client ids) its identities may use.
    pub client_ids: Vec<String>,
    /// The most its identities may ask for.
    pub max_scope: Scope,
    pub created_at: UnixTime,
}

/// The prefixes of machine identities.
pub const JWT_PREFIX: &str = "jwt+";
pub const CERT_PREFIX: &str = "cert+";

impl Mapping {
    pub fn kind(&self) -> &'static str {
        match self.rule {
            MappingRule::Jwt { .. } => "jwt",
            MappingRule::Cert { .. } => "cert",
        }
    }

    /// The machine identity this mapping gives `subject`: `jwt+<mapping>:<subject>`
    /// or `cert+<mapping>:<subject>`.
    pub fn identity(&self, subject: &str) -> UserId {
        let prefix = match self.rule {
            MappingRule::Jwt { .. } => JWT_PREFIX,
            MappingRule::Cert { .. } => CERT_PREFIX,
        };
        UserId::from_stored(format!("{prefix}{}:{subject}", self.name))
    }

    /// For a JWT mapping: the identity its claims give, if every condition
    /// holds and the identity claim is a usable string.
    pub fn match_claims(&self, claims: &Map<String, Value>) -> Option<UserId> {
        let MappingRule::Jwt { conditions, identity_claim, .. } = &self.rule else { return None };
        if !conditions.iter().all(|c| c.matches(claims)) {
            return None;
        }
        let subject = claim_text(claims, identity_claim)?;
        valid_subject(&subject).then(|| self.identity(&subject))
    }
}

/// The mapping a machine identity names: `jwt+deploy:repo:org/app` → `deploy`.
pub fn mapping_of(identity: &str) -> Option<&str> {
    let rest = identity.strip_prefix(JWT_PREFIX).or_else(|| identity.strip_prefix(CERT_PREFIX))?;
    let (mapping, subject) = rest.split_once(':')?;
    (valid_mapping_name(mapping) && valid_subject(subject)).then_some(mapping)
}

/// An identity value: 1 to [`MAX_SUBJECT_LEN`] characters, no control characters.
pub fn valid_subject(s: &str) -> bool {
    (1..=MAX_SUBJECT_LEN).contains(&s.len()) && !s.chars().any(char::is_control)
}

/// A claim's value as text: a string as it is, a number or a boolean as
/// JSON writes it; anything else (arrays, objects, null) is no value.
fn claim_text(claims: &Map<String, Value>, name: &str) -> Option<String> {
    match claims.get(name)? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// Glob matching: `*` any run of characters (`/` included), `?` one
/// character, everything else itself. Linear in the worst case (the classic
/// backtrack to the last star).
pub fn glob(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || (p[pi] != '*' && p[pi] == t[ti])) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

/// Why a JWT was refused. Each has the description the client sees
/// (`invalid_grant`, [`JwtError::description`]), which never quotes the token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JwtError {
    TooLarge,
    Malformed,
    AlgorithmRefused,
    UnknownIssuer,
    AlgorithmNotAllowed,
    UnknownKey,
    BadSignature,
    NoExpiry,
    Expired,
    NotYetValid,
    LifetimeTooLong,
    WrongAudience,
    BadJti,
}

impl JwtError {
    pub fn description(self) -> &'static str {
        match self {
            JwtError::TooLarge => "The JWT is larger than 16 KiB.",
            JwtError::Malformed => "The JWT is malformed: a JWS in compact form (three base64url parts) is expected.",
            JwtError::AlgorithmRefused => "The JWT's algorithm is not accepted: RS256, PS256, ES256 or EdDSA only; never none or HMAC.",
            JwtError::UnknownIssuer => "The JWT's issuer (iss) is not a trusted issuer.",
            JwtError::AlgorithmNotAllowed => "The JWT's algorithm is not one its issuer is allowed.",
            JwtError::UnknownKey => "No key of the issuer matches the JWT's kid and algorithm.",
            JwtError::BadSignature => "The JWT's signature is invalid.",
            JwtError::NoExpiry => "The JWT has no exp claim.",
            JwtError::Expired => "The JWT has expired.",
            JwtError::NotYetValid => "The JWT is not valid yet (nbf or iat in the future).",
            JwtError::LifetimeTooLong => "The JWT's lifetime exceeds its issuer's maximum.",
            JwtError::WrongAudience => "The JWT's audience (aud) is not one its issuer accepts.",
            JwtError::BadJti => "The JWT's jti is malformed or too long.",
        }
    }
}

impl fmt::Display for JwtError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.description())
    }
}

impl std::error::Error for JwtError {}

/// A JWT split and decoded, not yet trusted.
#[derive(Clone)]
pub struct Jwt {
    pub alg: Algorithm,
    pub kid: Option<String>,
    pub claims: Map<String, Value>,
    signing_input_len: usize,
    text: String,
    signature: Vec<u8>,
}

impl fmt::Debug for Jwt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Jwt").field("alg", &self.alg).field("kid", &self.kid).field("token", &"<redacted>").finish()
    }
}

impl Jwt {
    /// Splits and decodes a compact JWS. Refuses oversized input first,
    /// then anything whose header's `alg` is not one of the four (`none`,
    /// `HS256`, …), or carries `crit` (no extension is understood).
    pub fn parse(text: &str) -> Result<Jwt, JwtError> {
        if text.len() > MAX_JWT_LEN {
            return Err(JwtError::TooLarge);
        }
        let text = text.trim();
        let mut parts = text.split('.');
        let (Some(h), Some(c), Some(s), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
            return Err(JwtError::Malformed);
        };
        let header: Map<String, Value> =
            URL_SAFE_NO_PAD.decode(h).ok().and_then(|b| serde_json::from_slice(&b).ok()).ok_or(JwtError::Malformed)?;
        let alg = header.get("alg").and_then(Value::as_str).ok_or(JwtError::Malformed)?;
        let alg = Algorithm::parse(alg).ok_or(JwtError::AlgorithmRefused)?;
        if header.contains_key("crit") {
            return Err(JwtError::Malformed);
        }
        let kid = match header.get("kid") {
            None => None,
            Some(Value::String(k)) => Some(k.clone()),
            Some(_) => return Err(JwtError::Malformed),
        };
        let claims: Map<String, Value> =
            URL_SAFE_NO_PAD.decode(c).ok().and_then(|b| serde_json::from_slice(&b).ok()).ok_or(JwtError::Malformed)?;
        let signature = URL_SAFE_NO_PAD.decode(s).map_err(|_| JwtError::Malformed)?;
        Ok(Jwt { alg, kid, claims, signing_input_len: h.len() + 1 + c.len(), text: text.to_owned(), signature })
    }

    /// The `iss` claim.
    pub fn issuer(&self) -> Option<&str> {
        self.claims.get("iss").and_then(Value::as_str)
    }

    fn signing_input(&self) -> &[u8] {
        &self.text.as_bytes()[..self.signing_input_len]
    }

    /// Whether one of `keys` (the issuer's) signed it: only keys whose
    /// `kid` is the token's (when it has one) and whose type fits the
    /// algorithm are tried. `UnknownKey` when there is no such key.
    pub fn verify(&self, keys: &[Jwk]) -> Result<(), JwtError> {
        let mut tried = false;
        for key in keys.iter().filter(|k| self.kid.is_none() || k.kid == self.kid) {
            if let Some(ok) = key.verify(self.alg, self.signing_input(), &self.signature) {
                tried = true;
                if ok {
                    return Ok(());
                }
            }
        }
        Err(if tried { JwtError::BadSignature } else { JwtError::UnknownKey })
    }

    /// The checks of the claims against `issuer` at `now`. The signature is
    /// [`Jwt::verify`]'s.
    pub fn check_claims(&self, issuer: &JwtIssuer, now: UnixTime) -> Result<Checked, JwtError> {
        if self.issuer() != Some(issuer.issuer.as_str()) {
            return Err(JwtError::UnknownIssuer);
        }
        if !issuer.algorithms.contains(&self.alg) {
            return Err(JwtError::AlgorithmNotAllowed);
        }
        let now_s = now.secs();
        let skew = issuer.clock_skew;
        let exp = match self.claims.get("exp") {
            None => return Err(JwtError::NoExpiry),
            Some(v) => numeric_date(v).ok_or(JwtError::NoExpiry)?,
        };
        if exp.saturating_add(skew) <= now_s {
            return Err(JwtError::Expired);
        }
        if let Some(v) = self.claims.get("nbf") {
            let nbf = numeric_date(v).ok_or(JwtError::NotYetValid)?;
            if nbf.saturating_sub(skew) > now_s {
                return Err(JwtError::NotYetValid);
            }
        }
        let iat = match self.claims.get("iat") {
            None => None,
            Some(v) => Some(numeric_date(v).ok_or(JwtError::NotYetValid)?),
        };
        if let Some(iat) = iat
            && iat.saturating_sub(skew) > now_s
        {
            return Err(JwtError::NotYetValid);
        }
        let lifetime = exp.saturating_sub(iat.unwrap_or(now_s));
        if lifetime > issuer.max_lifetime {
            return Err(JwtError::LifetimeTooLong);
        }
        let auds: Vec<&str> = match self.claims.get("aud") {
            Some(Value::String(a)) => vec![a.as_str()],
            Some(Value::Array(list)) => list.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if !auds.iter().any(|a| issuer.audiences.iter().any(|x| x == a)) {
            return Err(JwtError::WrongAudience);
        }
        let replay_key = match self.claims.get("jti") {
            Some(Value::String(j)) if !j.is_empty() && j.len() <= MAX_JTI_LEN && !j.chars().any(char::is_control) => {
                format!("jti:{j}")
            }
            Some(_) => return Err(JwtError::BadJti),
            // No jti: the token itself is its own id, as the digest of what
            // was signed. Not of the signature: an ECDSA signature (r, s) has
            // a twin (r, n - s) that verifies the same input, so a digest of
            // the signature would let a used token be presented once more.
            None => format!("in:{}", crate::hex::encode(&sha256(self.signing_input()))),
        };
        Ok(Checked { expires: UnixTime::from_secs(exp.saturating_add(skew)), replay_key })
    }
}

/// What the claim checks found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checked {
    /// Until when the token could be presented: its replay record is kept so long.
    pub expires: UnixTime,
    /// What makes it single-use: `jti:<jti>`, or without a `jti`, the
    /// digest of its signing input (header and claims as sent).
    pub replay_key: String,
}

fn sha256(b: &[u8]) -> [u8; 32] {
    use sha2::Digest as _;
    sha2::Sha256::digest(b).into()
}

/// A NumericDate: whole or fractional seconds (fractions dropped).
fn numeric_date(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => n.as_i64().or_else(|| n.as_f64().filter(|f| f.is_finite() && f.abs() < 1e15).map(|f| f as i64)),
        _ => None,
    }
}

/// A public key of a JWKS, as far as the four algorithms use it.
#[derive(Clone, PartialEq, Eq)]
pub struct Jwk {
    pub kid: Option<String>,
    /// The key's own `alg`, if it names one.
    pub alg: Option<String>,
    pub material: KeyMaterial,
}

impl fmt::Debug for Jwk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Jwk").field("kid", &self.kid).field("alg", &self.alg).finish_non_exhaustive()
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeyMaterial {
    Rsa {
        n: Vec<u8>,
        e: Vec<u8>,
    },
    /// P-256 as `0x04 || x || y`.
    P256 {
        point: Vec<u8>,
    },
    Ed25519 {
        x: Vec<u8>,
    },
}

impl Jwk {
    /// The keys of a JWKS document (`{"keys": [...]}`) that can sign:
    /// RSA, EC P-256 and OKP Ed25519 keys not marked for encryption. Others
    /// are passed over; a document that is no JWKS is an error.
    pub fn parse_set(json: &[u8]) -> Result<Vec<Jwk>, String> {
        let doc: Value = serde_json::from_slice(json).map_err(|_| "the key set is not JSON".to_owned())?;
        let keys = doc.get("keys").and_then(Value::as_array).ok_or_else(|| "the key set has no \"keys\" array".to_owned())?;
        Ok(keys.iter().filter_map(Jwk::from_json).collect())
    }

    fn from_json(v: &Value) -> Option<Jwk> {
        let s = |k: &str| v.get(k).and_then(Value::as_str);
        let b = |k: &str| s(k).and_then(|t| URL_SAFE_NO_PAD.decode(t).ok());
        if s("use").is_some_and(|u| u != "sig") {
            return None;
        }
        let material = match s("kty")? {
            "RSA" => KeyMaterial::Rsa { n: b("n")?, e: b("e")? },
            "EC" if s("crv") == Some("P-256") => {
                let (x, y) = (b("x")?, b("y")?);
                if x.len() != 32 || y.len() != 32 {
                    return None;
                }
                let mut point = vec![4u8];
                point.extend_from_slice(&x);
                point.extend_from_slice(&y);
                KeyMaterial::P256 { point }
            }
            "OKP" if s("crv") == Some("Ed25519") => KeyMaterial::Ed25519 { x: b("x")? },
            _ => return None,
        };
        Some(Jwk { kid: s("kid").map(str::to_owned), alg: s("alg").map(str::to_owned), material })
    }

    /// `None` if this key cannot be used with `alg`; else whether it verifies.
    fn verify(&self, alg: Algorithm, message: &[u8], signature: &[u8]) -> Option<bool> {
        use ring::signature as sig;
        if self.alg.as_deref().is_some_and(|a| a != alg.as_str()) {
            return None;
        }
        Some(match (&self.material, alg) {
            (KeyMaterial::Rsa { n, e }, Algorithm::RS256) => {
                sig::RsaPublicKeyComponents { n, e }.verify(&sig::RSA_PKCS1_2048_8192_SHA256, message, signature).is_ok()
            }
            (KeyMaterial::Rsa { n, e }, Algorithm::PS256) => {
                sig::RsaPublicKeyComponents { n, e }.verify(&sig::RSA_PSS_2048_8192_SHA256, message, signature).is_ok()
            }
            (KeyMaterial::P256 { point }, Algorithm::ES256) => {
                sig::UnparsedPublicKey::new(&sig::ECDSA_P256_SHA256_FIXED, point).verify(message, signature).is_ok()
            }
            (KeyMaterial::Ed25519 { x }, Algorithm::EdDSA) => {
                sig::UnparsedPublicKey::new(&sig::ED25519, x).verify(message, signature).is_ok()
            }
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b64(v: &serde_json::Value) -> String {
        URL_SAFE_NO_PAD.encode(serde_json::to_vec(v).unwrap())
    }

    fn issuer() -> JwtIssuer {
        JwtIssuer {
            name: "gh".into(),
            issuer: "https://issuer.test".into(),
            keys: KeySource::JwksUrl("https://issuer.test/jwks".into()),
            audiences: vec!["strongroom".into()],
            algorithms: vec![Algorithm::EdDSA],
            clock_skew: 30,
            max_lifetime: 3600,
            created_at: UnixTime::from_secs(0),
        }
    }

    /// An Ed25519-signed token and its key.
    fn signed(claims: serde_json::Value) -> (String, Vec<Jwk>) {
        use ring::signature::{Ed25519KeyPair, KeyPair as _};
        let rng = ring::rand::SystemRandom::new();
        let pkcs8 = Ed25519KeyPair::generate_pkcs8(&rng).unwrap();
        let pair = Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).unwrap();
        let input = format!("{}.{}", b64(&serde_json::json!({"alg": "EdDSA", "kid": "k1"})), b64(&claims));
        let sig = pair.sign(input.as_bytes());
        let jwk = Jwk { kid: Some("k1".into()), alg: None, material: KeyMaterial::Ed25519 { x: pair.public_key().as_ref().to_vec() } };
        (format!("{input}.{}", URL_SAFE_NO_PAD.encode(sig.as_ref())), vec![jwk])
    }

    #[test]
    fn a_good_token_passes_and_its_checks_refuse_the_rest() {
        let now = UnixTime::from_secs(10_000);
        let (t, keys) =
            signed(serde_json::json!({"iss": "https://issuer.test", "aud": ["x", "strongroom"], "exp": 10_600, "iat": 9_990, "jti": "a"}));
        let jwt = Jwt::parse(&t).unwrap();
        jwt.verify(&keys).unwrap();
        let c = jwt.check_claims(&issuer(), now).unwrap();
        assert_eq!(c.replay_key, "jti:a");
        assert_eq!(c.expires, UnixTime::from_secs(10_630));
        let cases = [
            (serde_json::json!({"iss": "https://other", "aud": "strongroom", "exp": 10_600}), JwtError::UnknownIssuer),
            (serde_json::json!({"iss": "https://issuer.test", "aud": "other", "exp": 10_600}), JwtError::WrongAudience),
            (serde_json::json!({"iss": "https://issuer.test", "aud": "strongroom"}), JwtError::NoExpiry),
            (serde_json::json!({"iss": "https://issuer.test", "aud": "strongroom", "exp": 9_960}), JwtError::Expired),
            (serde_json::json!({"iss": "https://issuer.test", "aud": "strongroom", "exp": 10_600, "nbf": 10_100}), JwtError::NotYetValid),
            (serde_json::json!({"iss": "https://issuer.test", "aud": "strongroom", "exp": 20_000}), JwtError::LifetimeTooLong),
            (serde_json::json!({"iss": "https://issuer.test", "aud": "strongroom", "exp": 10_600, "jti": 5}), JwtError::BadJti),
        ];
        for (claims, want) in cases {
            let (t, _) = signed(claims);
            assert_eq!(Jwt::parse(&t).unwrap().check_claims(&issuer(), now), Err(want));
        }
        // Within the skew: accepted.
        let (t, _) = signed(serde_json::json!({"iss": "https://issuer.test", "aud": "strongroom", "exp": 9_990, "nbf": 10_020}));
        assert!(Jwt::parse(&t).unwrap().check_claims(&issuer(), now).unwrap().replay_key.starts_with("in:"));
    }

    #[test]
    fn an_ecdsa_signature_and_its_twin_are_one_token_for_replay() {
        use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair as _};
        let rng = ring::rand::SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng).unwrap();
        let claims = serde_json::json!({"iss": "https://issuer.test", "aud": "strongroom", "exp": 10_600});
        let input = format!("{}.{}", b64(&serde_json::json!({"alg": "ES256"})), b64(&claims));
        let sig = pair.sign(&rng, input.as_bytes()).unwrap();
        let (r, s) = sig.as_ref().split_at(32);
        let twin = [r, &strongroom_testkit::jwt::p256_twin(s)].concat();
        let keys = vec![Jwk { kid: None, alg: None, material: KeyMaterial::P256 { point: pair.public_key().as_ref().to_vec() } }];
        let mut es256 = issuer();
        es256.algorithms = vec![Algorithm::ES256];
        let key_of = |sig: &[u8]| {
            let jwt = Jwt::parse(&format!("{input}.{}", URL_SAFE_NO_PAD.encode(sig))).unwrap();
            jwt.verify(&keys).unwrap();
            jwt.check_claims(&es256, UnixTime::from_secs(10_000)).unwrap().replay_key
        };
        // Both verify (the malleability is real), and both are one token.
        assert_ne!(sig.as_ref(), twin.as_slice());
        assert_eq!(key_of(sig.as_ref()), key_of(&twin));
        assert!(key_of(&twin).starts_with("in:"));
    }

    #[test]
    fn another_key_none_and_hmac_are_refused() {
        let (t, _) = signed(serde_json::json!({"iss": "https://issuer.test"}));
        let (_, other) = signed(serde_json::json!({}));
        assert_eq!(Jwt::parse(&t).unwrap().verify(&other), Err(JwtError::BadSignature));
        let mut unknown = other.clone();
        unknown[0].kid = Some("k2".into());
        assert_eq!(Jwt::parse(&t).unwrap().verify(&unknown), Err(JwtError::UnknownKey));
        let body = b64(&serde_json::json!({"iss": "https://issuer.test"}));
        for alg in ["none", "HS256", "HS512", "RS384", "ES256K"] {
            let t = format!("{}.{body}.", b64(&serde_json::json!({"alg": alg})));
            assert_eq!(Jwt::parse(&t).unwrap_err(), JwtError::AlgorithmRefused, "{alg}");
        }
        assert_eq!(Jwt::parse(&"a".repeat(MAX_JWT_LEN + 1)).unwrap_err(), JwtError::TooLarge);
        assert_eq!(Jwt::parse("a.b").unwrap_err(), JwtError::Malformed);
        assert_eq!(Jwt::parse("a.b.c.d").unwrap_err(), JwtError::Malformed);
        assert!(!format!("{:?}", Jwt::parse(&t).ok()).contains(&body));
    }

    #[test]
    fn globs_and_mappings() {
        assert!(glob("repo:org/*:ref:refs/heads/main", "repo:org/app:ref:refs/heads/main"));
        assert!(glob("a?c", "abc"));
        assert!(!glob("a?c", "abbc"));
        assert!(glob("*", ""));
        assert!(!glob("org/app", "org/app2"));
        assert!(glob("*a*a*a*b", &"a".repeat(40).replace("aaaa", "aaab")));
        let m = Mapping {
            name: "deploy".into(),
            rule: MappingRule::Jwt {
                issuer: "gh".into(),
                conditions: vec![Condition::parse("repository=org/*").unwrap(), Condition::parse("environment=prod").unwrap()],
                identity_claim: "sub".into(),
            },
            client_ids: vec!["ci".into()],
            max_scope: Scope::parse("restricted").unwrap(),
            created_at: UnixTime::from_secs(0),
        };
        let claims = |v: serde_json::Value| v.as_object().unwrap().clone();
        let id =
            m.match_claims(&claims(serde_json::json!({"repository": "org/app", "environment": "prod", "sub": "repo:org/app"}))).unwrap();
        assert_eq!(id.identity(), "jwt+deploy:repo:org/app");
        assert_eq!(mapping_of(&id.identity()), Some("deploy"));
        assert!(m.match_claims(&claims(serde_json::json!({"repository": "org/app", "environment": "dev", "sub": "x"}))).is_none());
        assert!(m.match_claims(&claims(serde_json::json!({"repository": "org/app", "environment": "prod"}))).is_none());
        assert_eq!(Condition::decode(&Condition::encode(&[Condition::parse("a=b=c").unwrap()])).unwrap()[0].pattern, "b=c");
    }
}
