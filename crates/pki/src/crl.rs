//! Certificate revocation lists: the revoked serials a CA signs, as of the
//! time the caller passes, valid for [`CRL_VALIDITY_SECS`].

use rcgen::{CertificateRevocationListParams, RevocationReason, RevokedCertParams, SerialNumber};

use crate::ca::Issuer;
use crate::{PkiError, at, internal};

/// A revoked serial for a CRL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Revoked {
    pub serial_hex: String,
    pub at: i64,
    pub reason: i64,
}

fn reason(r: i64) -> Option<RevocationReason> {
    Some(match r {
        1 => RevocationReason::KeyCompromise,
        2 => RevocationReason::CaCompromise,
        3 => RevocationReason::AffiliationChanged,
        4 => RevocationReason::Superseded,
        5 => RevocationReason::CessationOfOperation,
        _ => return None,
    })
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len() / 2).filter_map(|i| u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok()).collect()
}

/// How long a CRL is valid: its `nextUpdate` is this after it was signed.
/// A revocation stays on the CRL this long after its certificate expired, so
/// that it appears on one regularly scheduled CRL issued after the
/// certificate's end (RFC 5280 §3.3), then leaves it.
pub const CRL_VALIDITY_SECS: i64 = 86_400;

/// A CRL of the CA, signed now, valid [`CRL_VALIDITY_SECS`] (DER).
pub fn crl(issuer: &Issuer<'_>, revoked: &[Revoked], now: i64) -> Result<Vec<u8>, PkiError> {
    let ca = issuer.certificate()?;
    let key = issuer.signer.key_pair()?;
    let mut list = Vec::with_capacity(revoked.len());
    for r in revoked {
        list.push(RevokedCertParams {
            serial_number: SerialNumber::from_slice(&unhex(&r.serial_hex)),
            revocation_time: at(r.at)?,
            reason_code: reason(r.reason),
            invalidity_date: None,
        });
    }
    let params = CertificateRevocationListParams {
        this_update: at(now - 60)?,
        next_update: at(now + CRL_VALIDITY_SECS)?,
        crl_number: SerialNumber::from(now.max(1) as u64),
        issuing_distribution_point: None,
        revoked_certs: list,
        // The CA certificate's subject key identifier (an offline root's SHA-1, say), as its leaves name it.
        key_identifier_method: ca.params().key_identifier_method.clone(),
    };
    Ok(params.signed_by(&ca, &key).map_err(internal("signing the CRL"))?.der().to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;
    use strongroom_core::cert::{Curve, KeySpec};

    use crate::testing::{Os, software_ca};
    use crate::{CaAlgorithm, Leaf, Sans, encrypt_pkcs8, generate_key, issue, pem, public_of};

    #[test]
    fn a_ca_issues_for_a_generated_key_and_signs_a_crl() {
        let (ca_der, signer) = software_ca(CaAlgorithm::P256, "CN=Test CA, O=Acme, C=FR");
        assert!(!ca_der.is_empty());
        let issuer = Issuer { cert_der: &ca_der, signer: &signer };
        let key = generate_key(KeySpec::Ec(Curve::P384), &Os).unwrap();
        let leaf_key = public_of(&key).unwrap();
        let sans = Sans { dns: vec!["www.example.com".into()], ..Sans::default() };
        let leaf_subject = vec![("CN".to_owned(), "www.example.com".to_owned())];
        let issued = issue(
            &issuer,
            &Leaf {
                subject: &leaf_subject,
                sans: &sans,
                key: &leaf_key,
                not_before: 1_800_000_000,
                not_after: 1_800_086_400,
                crl_url: "https://x/crl",
            },
            &Os,
        )
        .unwrap();
        assert_eq!(issued.serial.len(), 32);
        assert_eq!(issued.thumbprint.len(), 40);
        let listed = [Revoked { serial_hex: issued.serial.clone(), at: 1_800_000_100, reason: 1 }];
        let der = crl(&issuer, &listed, 1_800_000_200).unwrap();
        assert!(der.len() > 100);
        // ECDSA's signatures are randomized: the same CRL signed twice in one second differs,
        // which is how the server's tests tell a kept CRL from one signed again.
        assert_ne!(crl(&issuer, &listed, 1_800_000_200).unwrap(), der);
        assert!(encrypt_pkcs8(&key, "", &Os).is_err());
        let enc = encrypt_pkcs8(&key, "pw", &Os).unwrap();
        assert_eq!(enc[0], 0x30);
        assert!(pem("X", &[1, 2, 3]).contains("\r\n"));
    }
}
