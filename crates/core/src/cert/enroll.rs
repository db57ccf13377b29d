//! The decision on a certificate request (a Request, a Renew, an approval), with no I/O: what the
//! request asks (read from its body and its CSR by the caller), the policy in force at its folder
//! and the CAs decide, at `now`, the certificate's subject, names, key, CA and validity, and
//! whether it waits for an approver; or why it is refused, in the words clients show. The
//! application reads the context in one call, asks this, then makes the key, signs and writes.

use super::{Asked, Curve, KeySpec, Policy, judge, judge_csr, names};

/// The leaf validity when neither the policy nor the CA says (days).
pub const DEFAULT_VALIDITY_DAYS: i64 = 90;

/// What a request asks, as read from its body and its CSR; no policy applied yet.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ask {
    /// The subject it brings: its CSR's, or a central request's `Subject` (as CN) and subject
    /// fields, each without the spaces around it (`CN`, `O`, `L`, `ST`, `C`, then each `OU`).
    pub subject: Vec<(String, String)>,
    /// The CSR's key, when it brings one.
    pub csr_key: Option<KeySpec>,
    /// Its DNS names (the CSR's and `SubjectAltNames`), and the kinds of all its names
    /// (`DNS`, `IP`, `Email`, `URI`, `UPN`).
    pub dns: Vec<String>,
    pub san_kinds: Vec<String>,
    /// What it asks of the subject, for the policy's locked values: the CSR's fields, or the
    /// body's as sent.
    pub organization: Option<String>,
    pub organizational_unit: Vec<String>,
    pub city: Option<String>,
    pub state: Option<String>,
    pub country: Option<String>,
    /// A central request's key: `KeyAlgorithm`, `KeyBitSize`, `EllipticCurve`, `PkixParameterSet`.
    pub key_algorithm: Option<String>,
    pub key_bit_size: Option<u32>,
    pub elliptic_curve: Option<String>,
    pub pkix_parameter_set: Option<String>,
    /// `CADN`.
    pub ca: Option<String>,
    /// For a renewal, the CA the object was issued by (its name key).
    pub renewed_by: Option<String>,
    /// `Specific End Date`, as given.
    pub end_date: Option<String>,
}

/// A CA as a request is decided on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CaView {
    pub name: String,
    /// `\VED\Policy\CA Templates\NAME`.
    pub dn: String,
    /// The default validity of what it issues (0: none).
    pub validity_days: i64,
    pub manual_approval: bool,
    /// Its certificate's end; `None`: not installed yet (an intermediate waiting for it).
    pub not_after: Option<i64>,
}

/// What is issued (or kept waiting for an approver).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    /// The certificate's subject: the request's, with the policy's values for what it lacks.
    pub subject: Vec<(String, String)>,
    /// Its DNS names: the request's, with a CN that is a host name first.
    pub dns: Vec<String>,
    pub key: KeySpec,
    /// Which of the CAs issues it.
    pub ca: usize,
    pub not_after: i64,
    /// A CA's or the policy's `Manual Approval`: nothing is issued until an approver says so.
    pub wait_for_approval: bool,
}

/// Why a request is refused: bad input or a policy it breaks (400), or what this server does
/// not do (an external CA: 400 too, said so).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refused {
    Invalid(String),
    Unsupported(String),
}

impl From<String> for Refused {
    fn from(s: String) -> Self {
        Refused::Invalid(s)
    }
}

/// A CA named by its DN (`\VED\Policy\CA Templates\NAME`) or its name, in any case.
pub fn find_ca<'a>(cas: &'a [CaView], name_or_dn: &str) -> Option<(usize, &'a CaView)> {
    let t = name_or_dn.trim();
    cas.iter().enumerate().find(|(_, c)| c.dn.eq_ignore_ascii_case(t) || c.name.eq_ignore_ascii_case(t))
}

/// The subject of the certificate: `given`, with the policy's values for the fields it lacks (a
/// locked value was judged already), and the policy's OUs, every one, when it has none.
pub fn subject_with_policy(given: &[(String, String)], policy: &Policy) -> Vec<(String, String)> {
    let mut s = given.to_vec();
    for (k, v) in [("O", &policy.organization), ("L", &policy.city), ("ST", &policy.state), ("C", &policy.country)] {
        if let Some(v) = v.as_ref().map(|x| &x.value).filter(|v| !v.is_empty())
            && !s.iter().any(|(t, _)| t == k)
        {
            s.push((k.to_owned(), v.clone()));
        }
    }
    if !s.iter().any(|(t, _)| t == "OU") {
        for ou in policy.organizational_unit.iter().flat_map(|x| &x.value).filter(|v| !v.is_empty()) {
            s.push(("OU".to_owned(), ou.clone()));
        }
    }
    s
}

/// The key a central request asks for: its `PkixParameterSet`, else its key fields, else the
/// policy's algorithm (its curve, or its size; RSA 2048 when it says nothing).
pub fn central_key(ask: &Ask, policy: &Policy) -> Result<KeySpec, String> {
    if let Some(oid) = ask.pkix_parameter_set.as_ref().filter(|o| !o.trim().is_empty()) {
        return KeySpec::from_pkix_oid(oid).ok_or_else(|| format!("PkixParameterSet {oid:?} is not a known key."));
    }
    let asked = KeySpec::from_fields(ask.key_algorithm.as_deref(), ask.key_bit_size, ask.elliptic_curve.as_deref())?;
    Ok(asked.unwrap_or_else(|| match policy.key_algorithm.as_ref().map(|a| a.value.as_str()) {
        Some("ECC") => KeySpec::Ec(policy.curve.as_ref().map_or(Curve::P256, |c| c.value)),
        _ => KeySpec::Rsa(policy.key_size.as_ref().map_or(2048, |s| s.value)),
    }))
}

/// A `Specific End Date`: RFC 3339 (`2027-01-01T00:00:00+02:00`, Go) or `%Y-%m-%d %H:%M:%S` UTC
/// (Python); seconds since the epoch.
pub fn parse_end_date(s: &str) -> Option<i64> {
    let s = s.trim();
    let num = |a: usize, b: usize| s.get(a..b).and_then(|x| x.parse::<i64>().ok());
    let (y, mo, d) = (num(0, 4)?, num(5, 7)?, num(8, 10)?);
    let (h, mi, se) = if s.len() >= 19 { (num(11, 13)?, num(14, 16)?, num(17, 19)?) } else { (0, 0, 0) };
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || se > 60 {
        return None;
    }
    let mut rest = s.get(19..).unwrap_or("");
    if let Some(r) = rest.strip_prefix('.') {
        rest = r.trim_start_matches(|c: char| c.is_ascii_digit());
    }
    let offset = match rest {
        "" | "Z" | "z" => 0,
        r if r.len() == 6 && (r.starts_with('+') || r.starts_with('-')) => {
            let oh: i64 = r.get(1..3)?.parse().ok()?;
            let om: i64 = r.get(4..6)?.parse().ok()?;
            let v = oh * 3600 + om * 60;
            if r.starts_with('-') { -v } else { v }
        }
        _ => return None,
    };
    Some(crate::time::days_from_civil(y, u32::try_from(mo).ok()?, u32::try_from(d).ok()?) * 86_400 + h * 3600 + mi * 60 + se - offset)
}

/// The CA a request is issued by: its `CADN`, else (a renewal) the one that issued the object,
/// else the policy's; a locked CA binds.
fn choose_ca(policy: &Policy, ask: &Ask, cas: &[CaView]) -> Result<usize, Refused> {
    let asked = ask.ca.as_ref().filter(|x| !x.trim().is_empty());
    let wanted =
        asked.cloned().or_else(|| ask.renewed_by.clone().filter(|k| !k.is_empty())).or_else(|| policy.ca.as_ref().map(|s| s.value.clone()));
    let Some(wanted) = wanted else { return Err(Refused::Invalid("Need a certificate authority (CADN).".into())) };
    if let (Some(locked), Some(asked)) = (policy.ca.as_ref().filter(|s| s.locked), asked)
        && find_ca(cas, &locked.value).map(|(i, _)| i) != find_ca(cas, asked).map(|(i, _)| i)
    {
        return Err(Refused::Invalid(format!("The certificate authority is locked to {} by policy.", locked.value)));
    }
    let Some((i, ca)) = find_ca(cas, &wanted) else {
        return Err(Refused::Unsupported(format!(
            "{wanted} is not a certificate authority of this server (external CAs are not supported)."
        )));
    };
    if ca.not_after.is_none() {
        return Err(Refused::Invalid(format!(
            "The certificate authority {} cannot issue yet: its certificate is not installed (strongroom admin ca install).",
            ca.dn
        )));
    }
    Ok(i)
}

/// The end of the certificate: the policy's validity, else the CA's, else
/// [`DEFAULT_VALIDITY_DAYS`]; earlier with a `Specific End Date`; never after its CA's.
fn not_after(policy: &Policy, ask: &Ask, ca: &CaView, now: i64) -> Result<i64, Refused> {
    let days = i64::from(policy.validity_days.unwrap_or(0)).max(0);
    let days = if days > 0 {
        days
    } else if ca.validity_days > 0 {
        ca.validity_days
    } else {
        DEFAULT_VALIDITY_DAYS
    };
    let mut end = now + days * 86_400;
    if let Some(given) = ask.end_date.as_ref().filter(|e| !e.trim().is_empty()) {
        let at = parse_end_date(given).ok_or_else(|| Refused::Invalid(format!("Specific End Date {given:?} is not a date.")))?;
        if at <= now {
            return Err(Refused::Invalid("Specific End Date is in the past.".into()));
        }
        end = end.min(at);
    }
    Ok(end.min(ca.not_after.unwrap_or(end)))
}

/// Decides a request: see the [module docs](self). Names that are not names are refused before
/// the policy judges anything.
pub fn decide(policy: &Policy, ask: &Ask, cas: &[CaView], now: i64) -> Result<Decision, Refused> {
    let subject = subject_with_policy(&ask.subject, policy);
    names::subject(&subject)?;
    let cn = subject.iter().find(|(t, _)| t == "CN").map(|(_, v)| v.clone());
    if cn.is_none() && ask.san_kinds.is_empty() {
        return Err(Refused::Invalid("The request has neither a CN nor a subject alternative name.".into()));
    }
    // A CN that is a host name is a DNS name too (clients verify names against the SANs only),
    // unless the policy prohibits DNS names.
    let mut dns = ask.dns.clone();
    if let Some(n) = cn.as_ref().filter(|n| n.contains('.') && !n.contains(' ') && !n.contains('@'))
        && policy.san_allowed("DNS")
        && !dns.iter().any(|d| d.eq_ignore_ascii_case(n))
        && n.parse::<std::net::IpAddr>().is_err()
    {
        dns.insert(0, n.clone());
    }
    let key = match ask.csr_key {
        Some(k) => k,
        None => central_key(ask, policy)?,
    };
    let asked = Asked {
        common_name: cn,
        dns: dns.clone(),
        san_types: ask.san_kinds.clone(),
        organization: ask.organization.clone(),
        organizational_unit: ask.organizational_unit.clone(),
        city: ask.city.clone(),
        state: ask.state.clone(),
        country: ask.country.clone(),
        key,
    };
    judge_csr(policy, ask.csr_key.is_some())?;
    judge(policy, &asked)?;
    let ca = choose_ca(policy, ask, cas)?;
    let not_after = not_after(policy, ask, &cas[ca], now)?;
    let wait_for_approval = cas[ca].manual_approval || policy.manual_approval.as_ref().is_some_and(|s| s.value);
    Ok(Decision { subject, dns, key, ca, not_after, wait_for_approval })
}

#[cfg(test)]
mod tests {
    use super::super::Setting;
    use super::*;

    const NOW: i64 = 1_800_000_000;

    fn ca(name: &str, days: i64, manual: bool, installed: bool) -> CaView {
        CaView {
            name: name.into(),
            dn: format!("\\VED\\Policy\\CA Templates\\{name}"),
            validity_days: days,
            manual_approval: manual,
            not_after: installed.then_some(NOW + 365 * 86_400),
        }
    }

    fn ask(cn: &str) -> Ask {
        Ask { subject: vec![("CN".into(), cn.into())], key_algorithm: Some("ECC".into()), ..Ask::default() }
    }

    fn policy_with_ca(name: &str, locked: bool) -> Policy {
        Policy { ca: Some(Setting { value: name.into(), locked }), ..Policy::default() }
    }

    #[test]
    fn a_request_gets_the_policys_subject_ca_and_validity() {
        let p = Policy {
            organization: Some(Setting { value: "Acme".into(), locked: false }),
            organizational_unit: Some(Setting { value: vec!["Web".into(), "Ops".into()], locked: false }),
            validity_days: Some(30),
            ..policy_with_ca("Issuing CA", false)
        };
        let cas = [ca("Other", 0, false, true), ca("Issuing CA", 0, false, true)];
        let d = decide(&p, &ask("www.example.com"), &cas, NOW).unwrap();
        assert_eq!(d.ca, 1);
        assert_eq!(d.not_after, NOW + 30 * 86_400);
        assert_eq!(d.dns, ["www.example.com"], "the CN is a DNS name too");
        assert_eq!(d.key, KeySpec::Ec(Curve::P256));
        let keys: Vec<&str> = d.subject.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["CN", "O", "OU", "OU"]);
        assert!(!d.wait_for_approval);
    }

    #[test]
    fn the_ca_is_the_requests_then_the_renewed_objects_then_the_policys_and_a_locked_one_binds() {
        let cas = [ca("A", 10, false, true), ca("B", 20, false, true), ca("Gated", 0, true, true), ca("Pending", 0, false, false)];
        let open = policy_with_ca("A", false);
        let by = |a: Ask| decide(&open, &a, &cas, NOW);
        assert_eq!(by(Ask { ca: Some("\\ved\\policy\\ca templates\\b".into()), ..ask("x.example.com") }).unwrap().ca, 1);
        assert_eq!(by(Ask { renewed_by: Some("b".into()), ..ask("x.example.com") }).unwrap().ca, 1);
        let d = by(ask("x.example.com")).unwrap();
        assert_eq!((d.ca, d.not_after), (0, NOW + 10 * 86_400), "the CA's validity when the policy has none");
        assert!(by(Ask { ca: Some("Gated".into()), ..ask("x.example.com") }).unwrap().wait_for_approval);
        let locked = policy_with_ca("A", true);
        let e = decide(&locked, &Ask { ca: Some("B".into()), ..ask("x.example.com") }, &cas, NOW).unwrap_err();
        assert_eq!(e, Refused::Invalid("The certificate authority is locked to A by policy.".into()));
        assert!(matches!(by(Ask { ca: Some("Microsoft".into()), ..ask("x.example.com") }), Err(Refused::Unsupported(_))));
        assert!(
            matches!(by(Ask { ca: Some("Pending".into()), ..ask("x.example.com") }), Err(Refused::Invalid(m)) if m.contains("not installed"))
        );
        assert_eq!(
            decide(&Policy::default(), &ask("x.example.com"), &cas, NOW).unwrap_err(),
            Refused::Invalid("Need a certificate authority (CADN).".into())
        );
    }

    #[test]
    fn validity_ends_at_the_earliest_of_the_policy_the_end_date_and_the_ca() {
        let cas = [ca("A", 0, false, true)];
        let p = policy_with_ca("A", false);
        let d = decide(&p, &ask("x.example.com"), &cas, NOW).unwrap();
        assert_eq!(d.not_after, NOW + DEFAULT_VALIDITY_DAYS * 86_400);
        let end = Ask { end_date: Some("2027-01-16 08:00:00".into()), ..ask("x.example.com") };
        assert_eq!(decide(&p, &end, &cas, NOW).unwrap().not_after, parse_end_date("2027-01-16T08:00:00Z").unwrap());
        let long = Policy { validity_days: Some(3650), ..p.clone() };
        assert_eq!(decide(&long, &ask("x.example.com"), &cas, NOW).unwrap().not_after, NOW + 365 * 86_400, "never after its CA");
        for (bad, why) in [("tomorrow", "is not a date"), ("2001-01-01T00:00:00Z", "in the past")] {
            let e = decide(&p, &Ask { end_date: Some(bad.into()), ..ask("x.example.com") }, &cas, NOW).unwrap_err();
            assert!(matches!(&e, Refused::Invalid(m) if m.contains(why)), "{bad}: {e:?}");
        }
        assert_eq!(parse_end_date("2027-01-01T00:00:00+02:00"), Some(parse_end_date("2026-12-31T22:00:00Z").unwrap()));
    }

    #[test]
    fn names_are_checked_before_the_policy_and_a_request_names_something() {
        let cas = [ca("A", 0, false, true)];
        let p = Policy { domains: Some(vec!["example.com".into()]), ..policy_with_ca("A", false) };
        let e = decide(&p, &ask("www.evil.com\0.example.com"), &cas, NOW).unwrap_err();
        assert!(matches!(&e, Refused::Invalid(m) if m.contains("control character")), "{e:?}");
        let e = decide(&p, &ask("evil.com/.example.com"), &cas, NOW).unwrap_err();
        assert!(matches!(&e, Refused::Invalid(m) if m.contains("not a host name")), "{e:?}");
        let e = decide(&p, &ask("www.evil.com"), &cas, NOW).unwrap_err();
        assert!(matches!(&e, Refused::Invalid(m) if m.contains("not in the domains")), "{e:?}");
        let nothing = Ask { subject: vec![("O".into(), "Acme".into())], ..Ask::default() };
        let e = decide(&p, &nothing, &cas, NOW).unwrap_err();
        assert_eq!(e, Refused::Invalid("The request has neither a CN nor a subject alternative name.".into()));
        let no_dns = Policy { prohibited_san_types: Some(vec!["DNS".into()]), ..policy_with_ca("A", false) };
        assert!(decide(&no_dns, &ask("x.example.com"), &cas, NOW).unwrap().dns.is_empty(), "no DNS name where they are prohibited");
        let ip = decide(&policy_with_ca("A", false), &ask("10.0.0.1"), &cas, NOW).unwrap();
        assert!(ip.dns.is_empty(), "an IP address is no DNS name");
    }

    #[test]
    fn a_central_key_comes_from_the_request_then_the_policy() {
        let p = Policy {
            key_algorithm: Some(Setting { value: "ECC".into(), locked: false }),
            curve: Some(Setting { value: Curve::P384, locked: false }),
            ..Policy::default()
        };
        let none = Ask::default();
        assert_eq!(central_key(&none, &p), Ok(KeySpec::Ec(Curve::P384)));
        assert_eq!(central_key(&none, &Policy::default()), Ok(KeySpec::Rsa(2048)));
        let oid = Ask { pkix_parameter_set: Some("1.3.6.1.4.1.28783.10.1.1.3072".into()), ..Ask::default() };
        assert_eq!(central_key(&oid, &p), Ok(KeySpec::Rsa(3072)));
        assert!(central_key(&Ask { pkix_parameter_set: Some("1.2.3".into()), ..Ask::default() }, &p).is_err());
        assert_eq!(central_key(&Ask { key_bit_size: Some(4096), ..Ask::default() }, &p), Ok(KeySpec::Rsa(4096)));
    }
}
