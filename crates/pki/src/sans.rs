//! Subject alternative names, by kind (DNS, IP, Email, URI, UPN): each name
//! checked as it is added (`strongroom_core::cert::names`) from a request or a
//! CSR, kept as the certificate's rows store them (serde), and written as
//! rcgen's names, a UPN as an otherName.

use std::net::IpAddr;

use rcgen::SanType;

use strongroom_core::cert::names;

use crate::PkiError;
use crate::der::read_tlv;

/// Subject alternative names, by kind.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Sans {
    #[serde(rename = "DNS", default, skip_serializing_if = "Vec::is_empty")]
    pub dns: Vec<String>,
    #[serde(rename = "IP", default, skip_serializing_if = "Vec::is_empty")]
    pub ip: Vec<String>,
    #[serde(rename = "Email", default, skip_serializing_if = "Vec::is_empty")]
    pub email: Vec<String>,
    #[serde(rename = "URI", default, skip_serializing_if = "Vec::is_empty")]
    pub uri: Vec<String>,
    /// User principal names: otherName 1.3.6.1.4.1.311.20.2.3, a UTF8String.
    #[serde(rename = "UPN", default, skip_serializing_if = "Vec::is_empty")]
    pub upn: Vec<String>,
}

/// The OID of a UPN otherName (Microsoft's szOID_NT_PRINCIPAL_NAME).
pub(crate) const UPN_OID: [u64; 10] = [1, 3, 6, 1, 4, 1, 311, 20, 2, 3];

impl Sans {
    fn add(list: &mut Vec<String>, v: &str) {
        if !list.iter().any(|x| x.eq_ignore_ascii_case(v)) {
            list.push(v.to_owned());
        }
    }

    pub fn merge(&mut self, other: &Sans) {
        for v in &other.dns {
            Sans::add(&mut self.dns, v);
        }
        for v in &other.ip {
            Sans::add(&mut self.ip, v);
        }
        for v in &other.email {
            Sans::add(&mut self.email, v);
        }
        for v in &other.uri {
            Sans::add(&mut self.uri, v);
        }
        for v in &other.upn {
            Sans::add(&mut self.upn, v);
        }
    }

    /// The kinds of names present, as policies name them: `DNS`, `IP`, `Email`, `URI`, `UPN`.
    pub fn kinds(&self) -> Vec<&'static str> {
        [("DNS", &self.dns), ("IP", &self.ip), ("Email", &self.email), ("URI", &self.uri), ("UPN", &self.upn)]
            .into_iter()
            .filter(|(_, v)| !v.is_empty())
            .map(|(k, _)| k)
            .collect()
    }

    /// One name as clients send it: `Type` 0 UPN, 1 email, 2 DNS, 6 URI, 7 IP, or `TypeName`
    /// `UPN` (or `OtherName`), `DNS`, `Email`, `IPAddress`, `URI`. The name is taken exactly as
    /// given and must be one of its kind ([`names`]: a DNS name a host name, and so on).
    pub fn push(&mut self, kind: &str, name: &str) -> Result<(), PkiError> {
        let k = kind.trim().to_ascii_lowercase();
        match k.as_str() {
            "2" | "dns" => {
                names::host_name(name).map_err(PkiError::Invalid)?;
                Sans::add(&mut self.dns, name);
            }
            "1" | "email" | "rfc822" => {
                names::email(name).map_err(PkiError::Invalid)?;
                Sans::add(&mut self.email, name);
            }
            "6" | "uri" => {
                names::uri(name).map_err(PkiError::Invalid)?;
                Sans::add(&mut self.uri, name);
            }
            "0" | "upn" | "othername" => {
                if name.is_empty() || name.len() > 1024 || name.chars().any(char::is_control) || name.trim() != name {
                    return Err(PkiError::Invalid(format!("{} is not a user principal name.", names::shown(name))));
                }
                Sans::add(&mut self.upn, name);
            }
            "7" | "ip" | "ipaddress" => {
                name.parse::<IpAddr>().map_err(|_| PkiError::Invalid(format!("{} is not an IP address.", names::shown(name))))?;
                Sans::add(&mut self.ip, name);
            }
            _ => return Err(PkiError::Invalid(format!("Subject alternative names of type {} are not issued.", names::shown(kind)))),
        }
        Ok(())
    }

    /// The names as rcgen writes them in a certificate.
    pub(crate) fn rcgen(&self) -> Result<Vec<SanType>, PkiError> {
        let ia5 = |s: &str| rcgen::Ia5String::try_from(s).map_err(|_| PkiError::Invalid(format!("{s:?} is not an ASCII name.")));
        let mut out = Vec::new();
        for d in &self.dns {
            out.push(SanType::DnsName(ia5(d)?));
        }
        for i in &self.ip {
            out.push(SanType::IpAddress(i.parse().map_err(|_| PkiError::Invalid(format!("{i:?} is not an IP address.")))?));
        }
        for e in &self.email {
            out.push(SanType::Rfc822Name(ia5(e)?));
        }
        for u in &self.uri {
            out.push(SanType::URI(ia5(u)?));
        }
        for u in &self.upn {
            out.push(SanType::OtherName((UPN_OID.to_vec(), rcgen::OtherNameValue::Utf8String(u.clone()))));
        }
        Ok(out)
    }
}

/// The UTF8String of an otherName's value (`[0] EXPLICIT UTF8String`).
pub(crate) fn other_name_utf8(value: &[u8]) -> Option<&str> {
    let (tag, inner, rest) = read_tlv(value)?;
    let (tag2, text, rest2) = read_tlv(inner)?;
    if tag != 0xA0 || tag2 != 0x0C || !rest.is_empty() || !rest2.is_empty() {
        return None;
    }
    std::str::from_utf8(text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{CertificateParams, KeyPair};
    use strongroom_core::cert::{Curve, KeySpec};

    use crate::facts::parse_cert;
    use crate::subject::distinguished_name;
    use crate::testing::{Os, leaf_for, software_ca, subject};
    use crate::{CaAlgorithm, Issuer, generate_key, parse_csr, public_of};

    /// A UPN from the request or a CSR is an otherName 1.3.6.1.4.1.311.20.2.3 UTF8String in the leaf.
    #[test]
    fn upn_names_are_issued() {
        use x509_parser::extensions::{GeneralName, ParsedExtension};
        let (ca_der, signer) = software_ca(CaAlgorithm::P256, "CN=UPN CA");
        let issuer = Issuer { cert_der: &ca_der, signer: &signer };
        let mut sans = Sans::default();
        sans.push("0", "alice@corp.example").unwrap();
        sans.push("UPN", "alice@corp.example").unwrap();
        sans.push("dns", "alice.example.com").unwrap();
        assert_eq!(sans.upn, vec!["alice@corp.example"]);
        assert_eq!(sans.kinds(), vec!["DNS", "UPN"]);
        assert!(sans.push("0", "").is_err());
        assert!(sans.push("0", "a\nb").is_err());
        let json = serde_json::to_string(&sans).unwrap();
        assert!(json.contains(r#""UPN":["alice@corp.example"]"#), "{json}");
        assert_eq!(serde_json::from_str::<Sans>(r#"{"DNS":["a"]}"#).unwrap().upn, Vec::<String>::new(), "rows before UPN read");

        let key = generate_key(KeySpec::Ec(Curve::P256), &Os).unwrap();
        let issued = leaf_for(&issuer, &subject(&[("CN", "alice")]), &sans, &public_of(&key).unwrap());
        let cert = parse_cert(&issued.der).unwrap();
        let names: Vec<String> = cert
            .iter_extensions()
            .filter_map(|e| match e.parsed_extension() {
                ParsedExtension::SubjectAlternativeName(s) => Some(s.general_names.clone()),
                _ => None,
            })
            .flatten()
            .filter_map(|g| match g {
                GeneralName::OtherName(oid, v) => {
                    assert_eq!(oid.to_id_string(), "1.3.6.1.4.1.311.20.2.3");
                    other_name_utf8(v).map(str::to_owned)
                }
                _ => None,
            })
            .collect();
        assert_eq!(names, vec!["alice@corp.example"]);

        // A CSR's UPN is read.
        let kp = KeyPair::generate().unwrap();
        let mut p = CertificateParams::default();
        p.distinguished_name = distinguished_name(&subject(&[("CN", "bob")]));
        p.subject_alt_names = vec![SanType::OtherName((UPN_OID.to_vec(), rcgen::OtherNameValue::Utf8String("bob@corp.example".into())))];
        let csr = parse_csr(&p.serialize_request(&kp).unwrap().pem().unwrap()).unwrap();
        assert_eq!(csr.sans.upn, vec!["bob@corp.example"]);
    }
}
