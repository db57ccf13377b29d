//! Entry points of the fuzz targets in `fuzz/` (cargo-fuzz, nightly) and of
//! the stable runner that replays their corpus on every test run
//! (`tests/fuzz_corpus.rs`). Each takes arbitrary bytes, drives one reader
//! the server runs on what clients send, and checks what must hold of any
//! input; a panic is the finding.
//!
//! Depends on `proto`, `core`, the certificate part of `idp` and `pki`
//! only, so cargo-fuzz builds a small graph (no HTTP framework, store or
//! network stack): the readers live below the edge for that reason.

#![forbid(unsafe_code)]

use strongroom_proto::read::{self, SdkBody};
use strongroom_proto::vedauth::{DeviceRequest, OAuthRequest, TokenRequest};

/// Keys the `/vedsdk` handlers ask for.
const SDK_KEYS: &[&str] = &["VaultID", "VaultType", "Name", "StringValue", "IntValue", "DateValue", "Owner", "Base64Data", "Keyname"];

/// The `/vedsdk` body reader: parse, then read every field as each type.
pub fn sdk_body(data: &[u8]) {
    if let Ok(body) = SdkBody::parse(data) {
        for key in SDK_KEYS {
            let _ = body.has(&[key]);
            let _ = body.string(&[key]);
            let i64v = body.int64(&[key]);
            let i32v = body.int32(&[key]);
            // An int32 is an int64 that fits.
            if let Ok(Some(v)) = i32v {
                assert_eq!(i64v, Ok(Some(i64::from(v))), "int32 and int64 disagree");
            }
        }
    }
}

/// The form-or-JSON extractor of `/vedauth`: the first byte picks the
/// content type (JSON, form, something else), the rest is the body, read as
/// each request type.
pub fn form_or_json(data: &[u8]) {
    let Some((&selector, body)) = data.split_first() else { return };
    let ct = match selector % 3 {
        0 => "application/json; charset=utf-8",
        1 => "application/x-www-form-urlencoded",
        _ => "text/plain",
    };
    let kind = read::body_kind(Some(ct));
    if selector % 3 == 2 {
        assert_eq!(kind, None);
    }
    let device = read::form_or_json::<DeviceRequest>(kind, body);
    let _ = read::form_or_json::<TokenRequest>(kind, body);
    let _ = read::form_or_json::<OAuthRequest>(kind, body);
    if kind.is_none() {
        assert!(device.is_err(), "an unknown content type is refused");
    }
}

/// The token parsers: the `Bearer` and `Basic` header readers and the
/// shape checks and user-code normaliser that run before anything is hashed.
pub fn token(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    if let Some(t) = read::bearer(&text) {
        assert!(!t.is_empty() && t.trim() == t, "a bearer token is trimmed and non-empty");
    }
    if let Some(id) = read::basic_client_id(&text) {
        assert!(!id.is_empty(), "a Basic header names a client or none");
    }
    let _ = strongroom_core::token::looks_like_token(&text);
    let _ = strongroom_core::token::looks_like_device_code(&text);
    if let Some(code) = strongroom_core::token::normalize_user_code(&text) {
        assert_eq!(code.len(), 8, "a canonical user code has eight letters");
        assert_eq!(strongroom_core::token::normalize_user_code(&code).as_deref(), Some(code.as_str()), "normalising is idempotent");
        let shown = strongroom_core::token::display_user_code(&code);
        assert_eq!(strongroom_core::token::normalize_user_code(&shown).as_deref(), Some(code.as_str()), "the shown form reads back");
    }
}

/// The vault date parser: whatever parses formats back to a date that
/// parses to the same instant.
pub fn date(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    if let Some(ticks) = strongroom_proto::time::parse_date(&text) {
        let formatted = strongroom_proto::time::format_date(ticks);
        assert_eq!(strongroom_proto::time::parse_date(&formatted), Some(ticks), "{formatted} does not read back");
    }
}

/// The JWT grant's parsing and checks (`core::machine`), and the certificate
/// grant's readers: any text as a JWT (parsed; what parses is verified
/// against keys, its claims checked and matched against a mapping), as a
/// JWKS document, as a proxy's certificate header, and the bytes as a
/// certificate's DER, matched against a certificate mapping.
pub fn jwt(data: &[u8]) {
    use strongroom_core::machine::{Algorithm, CertField, Condition, Jwk, Jwt, JwtIssuer, KeySource, MAX_JWT_LEN, Mapping, MappingRule};
    use strongroom_core::scope::Scope;
    use strongroom_core::time::UnixTime;
    let text = String::from_utf8_lossy(data);
    let keys = Jwk::parse_set(data).unwrap_or_default();
    let now = UnixTime::from_secs(1_800_000_000);
    let issuer = JwtIssuer {
        name: "f".into(),
        issuer: "https://issuer.test".into(),
        keys: KeySource::JwksUrl("https://issuer.test/jwks".into()),
        audiences: vec!["a".into()],
        algorithms: Algorithm::ALL.to_vec(),
        clock_skew: 60,
        max_lifetime: 3600,
        created_at: now,
    };
    let scope = Scope::parse("restricted").unwrap_or_default();
    let conditions =
        ["repository=org/*", "ref=refs/heads/?ain", "environment=*prod*"].iter().filter_map(|c| Condition::parse(c).ok()).collect();
    let jwt_mapping = Mapping {
        name: "m".into(),
        rule: MappingRule::Jwt { issuer: "f".into(), conditions, identity_claim: "sub".into() },
        client_ids: vec!["c".into()],
        max_scope: scope.clone(),
        created_at: now,
    };
    if let Ok(jwt) = Jwt::parse(&text) {
        assert!(text.len() <= MAX_JWT_LEN, "an oversized JWT is refused");
        let _ = jwt.verify(&keys);
        let _ = jwt.check_claims(&issuer, now);
        if let Some(id) = jwt_mapping.match_claims(&jwt.claims) {
            assert!(id.is_machine(), "a mapping's identity is a machine identity");
        }
    }
    let cert_mapping = Mapping {
        name: "c".into(),
        rule: MappingRule::Cert { ca_bundle: String::new(), field: CertField::Upn },
        client_ids: vec!["c".into()],
        max_scope: scope,
        created_at: now,
    };
    if let Some(chain) = strongroom_idp::certificate::chain_from_header(&text) {
        let _ = strongroom_idp::certificate::match_mappings(&chain, std::slice::from_ref(&cert_mapping), &[], now);
    }
    let _ = strongroom_idp::certificate::match_mappings(&[data.to_vec()], std::slice::from_ref(&cert_mapping), &[], now);
}

/// The CSR reader (`strongroom_pki::parse_csr`) on the bytes as the text a
/// client sends (PEM or bare base64), and as the DER in a PEM block. A
/// request that reads has only subject types the reader keeps and only names
/// a request's own checks take (the same names, each kind's added again one
/// by one), and its DER reads again as the same request.
pub fn csr(data: &[u8]) {
    use strongroom_pki::{Sans, parse_csr, pem};
    let text = String::from_utf8_lossy(data);
    for input in [text.into_owned(), pem("CERTIFICATE REQUEST", data)] {
        let Ok(csr) = parse_csr(&input) else { continue };
        for (k, _) in &csr.subject {
            assert!(["CN", "O", "OU", "L", "ST", "C"].contains(&k.as_str()), "the reader kept a subject attribute of type {k}");
        }
        let mut again = Sans::default();
        let kinds =
            [("dns", &csr.sans.dns), ("ip", &csr.sans.ip), ("email", &csr.sans.email), ("uri", &csr.sans.uri), ("upn", &csr.sans.upn)];
        for (kind, names) in kinds {
            for name in names {
                assert!(again.push(kind, name).is_ok(), "the {kind} name {name:?} a CSR gave is refused when a request gives it");
            }
        }
        assert_eq!(again, csr.sans, "a CSR's names are those a request with them would have");
        let reread = parse_csr(&pem("CERTIFICATE REQUEST", &csr.der));
        assert!(
            reread.is_ok_and(|r| r.subject == csr.subject && r.sans == csr.sans && r.key == csr.key),
            "a CSR's own DER reads as the same request"
        );
    }
}
