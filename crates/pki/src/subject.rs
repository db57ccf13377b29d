//! Subjects, as (type, value) pairs in order (CN, O, OU, L, ST, C): read from
//! the command line, written as rcgen's `DistinguishedName` (one value per
//! type) or as DER with every attribute (for a subject that repeats a type,
//! which rcgen cannot write), and read back from a parsed name.

use rcgen::{DistinguishedName, DnType, DnValue};

use crate::PkiError;
use crate::der::{seq, tlv};

/// A subject as written on the command line: `CN=Issuing CA, O=Acme, C=FR`
/// (CN, O, OU, L, ST, C; commas inside values are not supported).
pub fn parse_subject(s: &str) -> Result<Vec<(String, String)>, PkiError> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let Some((k, v)) = part.split_once('=') else {
            return Err(PkiError::Invalid(format!("{part:?} is not TYPE=VALUE.")));
        };
        let k = k.trim().to_ascii_uppercase();
        if !["CN", "O", "OU", "L", "ST", "C"].contains(&k.as_str()) {
            return Err(PkiError::Invalid(format!("{k} is not one of CN, O, OU, L, ST, C.")));
        }
        let v = v.trim();
        if v.is_empty() || v.len() > 64 {
            return Err(PkiError::Invalid(format!("{k} must be 1 to 64 characters.")));
        }
        out.push((k, v.to_owned()));
    }
    if !out.iter().any(|(k, _)| k == "CN") {
        return Err(PkiError::Invalid("The subject needs a CN.".into()));
    }
    Ok(out)
}

fn dn_type(k: &str) -> Option<DnType> {
    Some(match k {
        "CN" => DnType::CommonName,
        "O" => DnType::OrganizationName,
        "OU" => DnType::OrganizationalUnitName,
        "L" => DnType::LocalityName,
        "ST" => DnType::StateOrProvinceName,
        "C" => DnType::CountryName,
        _ => return None,
    })
}

/// `entries` as rcgen's name: a country as a PrintableString where it can be one.
pub(crate) fn distinguished_name(entries: &[(String, String)]) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    for (k, v) in entries {
        if let Some(t) = dn_type(k) {
            if t == DnType::CountryName {
                match rcgen::PrintableString::try_from(v.as_str()) {
                    Ok(p) => dn.push(t, DnValue::PrintableString(p)),
                    Err(_) => dn.push(t, v.as_str()),
                }
            } else {
                dn.push(t, v.as_str());
            }
        }
    }
    dn
}

/// A subject (Name, DER) with every attribute given, in order, one per RDN: UTF8String values, a
/// country as a PrintableString (as rcgen writes them).
pub(crate) fn name_der(entries: &[(String, String)]) -> Vec<u8> {
    let mut rdns = Vec::new();
    for (k, v) in entries {
        let oid: u8 = match k.as_str() {
            "CN" => 3,
            "C" => 6,
            "L" => 7,
            "ST" => 8,
            "O" => 10,
            "OU" => 11,
            _ => continue,
        };
        let printable = |v: &str| v.chars().all(|c| c.is_ascii_alphanumeric() || " '()+,-./:=?".contains(c));
        let tag = if k == "C" && printable(v) { 0x13 } else { 0x0C };
        let attr = seq(&[&[0x06, 0x03, 0x55, 0x04, oid][..], &tlv(tag, v.as_bytes())]);
        rdns.push(tlv(0x31, &attr));
    }
    seq(&rdns.iter().map(Vec::as_slice).collect::<Vec<_>>())
}

/// The CN, O, OU, L, ST and C attributes of `name`, in order (a value that is not text is left out).
pub(crate) fn subject_of(name: &x509_parser::x509::X509Name<'_>) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for a in name.iter_attributes() {
        let k = match a.attr_type().to_id_string().as_str() {
            "2.5.4.3" => "CN",
            "2.5.4.10" => "O",
            "2.5.4.11" => "OU",
            "2.5.4.7" => "L",
            "2.5.4.8" => "ST",
            "2.5.4.6" => "C",
            _ => continue,
        };
        if let Ok(v) = a.as_str() {
            out.push((k.to_owned(), v.to_owned()));
        }
    }
    out
}
