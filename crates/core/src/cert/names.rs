//! The names a certificate may carry, checked before any policy judges them: DNS names are host
//! names (RFC 1123 labels, RFC 5280's preferred name syntax, an optional leading `*.`), subject
//! attributes hold no control characters and stay within RFC 5280's upper bounds, e-mail
//! addresses and URIs are ASCII without spaces. A name that passes here is judged by the folder's
//! policy ([`super::judge`]); one that does not is refused with a text naming it, and nothing is
//! issued. Every text shows the name through [`shown`]: escaped and cut short, so a refusal of a
//! 100,000-character name is a line, not a page.

/// The longest host name (RFC 1035 §2.3.4: 255 octets on the wire, 253 characters as text).
pub const MAX_HOST_NAME: usize = 253;
/// The longest label of a host name (RFC 1035 §2.3.4).
pub const MAX_LABEL: usize = 63;
/// The longest common name: RFC 5280's `ub-common-name` (characters).
pub const MAX_COMMON_NAME: usize = 64;
/// The longest e-mail address in a certificate (RFC 5321 §4.5.3.1.3's path, less its brackets).
pub const MAX_EMAIL: usize = 254;
/// The longest URI in a certificate (no RFC bound; longer than any a client names a service by).
pub const MAX_URI: usize = 2048;

/// The upper bound RFC 5280 (Appendix A.1) sets on a subject attribute's value, in characters.
pub fn max_attribute(kind: &str) -> Option<usize> {
    Some(match kind {
        "CN" => MAX_COMMON_NAME,
        "O" | "OU" => 64,
        "L" | "ST" => 128,
        "C" => 2,
        _ => return None,
    })
}

/// How a name appears in a refusal: `{:?}`-escaped (a NUL shows as `\0`), and past 64
/// characters cut short with its length.
pub fn shown(name: &str) -> String {
    const SHOWN: usize = 64;
    let n = name.chars().count();
    if n <= SHOWN {
        return format!("{name:?}");
    }
    let head: String = name.chars().take(SHOWN).collect();
    format!("{head:?}… ({n} characters)")
}

/// Why `label` (one part of a host name) is not a label, if it is not.
fn label_fault(label: &str) -> Option<&'static str> {
    if label.is_empty() {
        return Some("an empty label (two dots, or a dot at an end)");
    }
    if label.len() > MAX_LABEL {
        return Some("a label longer than 63 characters");
    }
    if !label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
        return Some("a label may hold only letters, digits and hyphens (an international name in its xn-- form)");
    }
    if label.starts_with('-') || label.ends_with('-') {
        return Some("a label may not begin or end with a hyphen");
    }
    None
}

/// Whether `name` is a host name as a DNS subject alternative name carries it: labels of letters,
/// digits and hyphens (RFC 1123 §2.1), at most [`MAX_LABEL`] each and [`MAX_HOST_NAME`] in all,
/// the last not all digits (that is an IP address's shape), no dot at either end; a wildcard only
/// as a whole leading label (`*.example.com`), which the policy then allows or refuses.
pub fn host_name(name: &str) -> Result<(), String> {
    let fault = |why: &str| Err(format!("{} is not a host name: {why}.", shown(name)));
    if name.is_empty() {
        return fault("it is empty");
    }
    if name.len() > MAX_HOST_NAME {
        return fault("longer than 253 characters");
    }
    let rest = name.strip_prefix("*.").unwrap_or(name);
    if rest.contains('*') {
        return fault("a wildcard may only be its whole first label (*.example.com)");
    }
    for label in rest.split('.') {
        if let Some(why) = label_fault(label) {
            return fault(why);
        }
    }
    if rest.rsplit('.').next().is_some_and(|last| last.bytes().all(|b| b.is_ascii_digit())) {
        return fault("its last label is all digits (an IP address goes in an IP name)");
    }
    Ok(())
}

/// Whether a common name is meant as a host name: it is one (and then judged as one) when it has
/// a dot or a `*`, no space and no `@`, and is not an IP address. `Jane Doe`, `WEB01` and
/// `ops@example.com` are not.
pub fn is_host_like(cn: &str) -> bool {
    (cn.contains('.') || cn.contains('*'))
        && !cn.chars().any(char::is_whitespace)
        && !cn.contains('@')
        && cn.parse::<std::net::IpAddr>().is_err()
}

/// Whether a subject attribute's value may be issued: no control character (a NUL among them),
/// no space at either end, within its RFC 5280 bound; a common name that is host-like
/// ([`is_host_like`]) a host name.
pub fn attribute(kind: &str, value: &str) -> Result<(), String> {
    let what = match kind {
        "CN" => "The common name",
        "O" => "The organization",
        "OU" => "The organizational unit",
        "L" => "The city",
        "ST" => "The state",
        "C" => "The country",
        _ => "A subject attribute",
    };
    if value.chars().any(char::is_control) {
        return Err(format!("{what} {} holds a control character.", shown(value)));
    }
    if value.trim() != value {
        return Err(format!("{what} {} has spaces at its start or end.", shown(value)));
    }
    if let Some(max) = max_attribute(kind)
        && value.chars().count() > max
    {
        return Err(format!("{what} {} is longer than {max} characters (RFC 5280's bound).", shown(value)));
    }
    if kind == "CN" && is_host_like(value) {
        return host_name(value);
    }
    Ok(())
}

/// Every attribute of a subject ([`attribute`]).
pub fn subject(attributes: &[(String, String)]) -> Result<(), String> {
    attributes.iter().try_for_each(|(k, v)| attribute(k, v))
}

/// What an e-mail name and a URI must both be: at most `max` characters of ASCII without
/// spaces or control characters. The refusal names `what` it is not.
fn ascii_name(name: &str, what: &str, max: usize) -> Result<(), String> {
    let why = if name.len() > max {
        format!("longer than {max} characters")
    } else if !name.bytes().all(|b| b.is_ascii_graphic()) {
        "only ASCII letters, digits and marks, no spaces (percent-encode the rest of a URI)".to_owned()
    } else {
        return Ok(());
    };
    Err(format!("{} is not {what}: {why}.", shown(name)))
}

/// Whether `name` is an e-mail address a certificate may carry: `local@host`, ASCII, no space
/// or control character, the host a host name (no wildcard).
pub fn email(name: &str) -> Result<(), String> {
    let what = "an e-mail address";
    ascii_name(name, what, MAX_EMAIL)?;
    let why = match name.rsplit_once('@') {
        None => "it has no @",
        Some((local, _)) if local.is_empty() || local.contains('@') => "one @, with a name before it",
        Some((_, host)) if host.starts_with('*') || host_name(host).is_err() => "what follows the @ is not a host name",
        Some(_) => return Ok(()),
    };
    Err(format!("{} is not {what}: {why}.", shown(name)))
}

/// Whether `name` is a URI a certificate may carry: a scheme, then ASCII without spaces or
/// control characters, at most [`MAX_URI`] characters.
pub fn uri(name: &str) -> Result<(), String> {
    ascii_name(name, "a URI", MAX_URI)?;
    let scheme = name.split_once(':').map_or("", |(s, _)| s);
    let mut chars = scheme.chars();
    let starts = chars.next().is_some_and(|c| c.is_ascii_alphabetic());
    if !starts || !chars.all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c)) {
        return Err(format!("{} is not a URI: it has no scheme (spiffe://…, https://…).", shown(name)));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_names_are_rfc_1123_labels() {
        for ok in
            ["example.com", "www.example.com", "a-b.example.com", "xn--bcher-kva.example", "localhost", "1.example.com", "*.example.com"]
        {
            assert_eq!(host_name(ok), Ok(()), "{ok}");
        }
        let long_label = format!("{}.example.com", "a".repeat(64));
        let long_name = format!("{}example.com", "abcdefghi.".repeat(25));
        for (bad, why) in [
            ("www.evil.com\0.example.com", "letters, digits and hyphens"),
            (".example.com", "empty label"),
            ("a..example.com", "empty label"),
            ("example.com.", "empty label"),
            ("evil.com/.example.com", "letters, digits and hyphens"),
            ("www.example.com ", "letters, digits and hyphens"),
            (" www.example.com", "letters, digits and hyphens"),
            ("under_score.example.com", "letters, digits and hyphens"),
            ("bücher.example", "xn--"),
            ("-a.example.com", "hyphen"),
            ("a-.example.com", "hyphen"),
            (long_label.as_str(), "63"),
            (long_name.as_str(), "253"),
            ("a.*.example.com", "wildcard"),
            ("w*.example.com", "wildcard"),
            ("*", "wildcard"),
            ("*.", "empty label"),
            ("1.2.3.4", "all digits"),
            ("", "empty"),
        ] {
            let e = host_name(bad).unwrap_err();
            assert!(e.contains(why), "{bad:?}: {e}");
        }
        // 253 characters is the most.
        let max = format!("{}.{}.{}.{}", "a".repeat(63), "b".repeat(63), "c".repeat(63), "d".repeat(61));
        assert_eq!(max.len(), 253);
        assert_eq!(host_name(&max), Ok(()));
    }

    #[test]
    fn refusals_show_names_escaped_and_short() {
        let e = host_name("www.evil.com\0.example.com").unwrap_err();
        assert!(e.starts_with(r#""www.evil.com\0.example.com" is not a host name"#), "{e}");
        let huge = "a".repeat(100_000);
        let e = attribute("CN", &huge).unwrap_err();
        assert!(e.len() < 200, "{e}");
        assert!(e.contains("(100000 characters)") && e.contains("longer than 64"), "{e}");
    }

    #[test]
    fn subject_attributes_are_bounded_and_clean() {
        assert_eq!(attribute("CN", "Jane Doe"), Ok(()));
        assert_eq!(attribute("CN", "WEB01"), Ok(()));
        assert_eq!(attribute("CN", "10.0.0.1"), Ok(()));
        assert_eq!(attribute("CN", "ops@example.com"), Ok(()));
        assert_eq!(attribute("CN", &"a".repeat(64)), Ok(()));
        assert!(attribute("CN", &"a".repeat(65)).unwrap_err().contains("longer than 64"));
        assert!(attribute("CN", "evil.com/.example.com").unwrap_err().contains("not a host name"));
        assert!(attribute("CN", "www.example.com\0").unwrap_err().contains("control character"));
        assert!(attribute("CN", "www.example.com ").unwrap_err().contains("spaces"));
        assert!(attribute("O", "Acme\u{7}").unwrap_err().contains("control character"));
        assert!(attribute("O", &"o".repeat(65)).is_err());
        assert_eq!(attribute("L", &"l".repeat(128)), Ok(()));
        assert!(attribute("C", "USA").is_err());
        assert_eq!(subject(&[("CN".into(), "a.example.com".into()), ("O".into(), "Acme, Inc.".into())]), Ok(()));
    }

    #[test]
    fn emails_and_uris_are_ascii_without_spaces() {
        assert_eq!(email("ops@example.com"), Ok(()));
        for bad in ["ops", "@example.com", "ops@", "ops@*.example.com", "a@b@example.com", "ops@example.com\0", "o ps@example.com"] {
            assert!(email(bad).is_err(), "{bad:?}");
        }
        assert_eq!(uri("spiffe://example.org/ns/prod/sa/web"), Ok(()));
        assert_eq!(uri("https://example.com/a?b=c"), Ok(()));
        for bad in ["example.com/path", "://x", "https://exa mple.com", "https://example.com/\0", "1http://x"] {
            assert!(uri(bad).is_err(), "{bad:?}");
        }
        assert!(uri(&format!("https://example.com/{}", "a".repeat(3000))).is_err());
    }
}
