//! What the unit tests share: the system's randomness, subjects from pairs,
//! a leaf issued for a day.

use strongroom_core::random::Random;

use crate::{CaAlgorithm, Issued, Issuer, Leaf, LeafKey, Sans, SoftwareSigner, create_ca, issue, parse_subject};

#[derive(Debug)]
pub(crate) struct Os;
impl Random for Os {
    fn fill(&self, d: &mut [u8]) {
        ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), d).unwrap();
    }
}

/// A CA of `alg` named `subject` (`CN=…`), made at 1_800_000_000 for ten years: its certificate and its key.
pub(crate) fn software_ca(alg: CaAlgorithm, subject: &str) -> (Vec<u8>, SoftwareSigner) {
    let (der, key) = create_ca(alg, &parse_subject(subject).unwrap(), 1_800_000_000, 3650, &Os).unwrap();
    (der, SoftwareSigner(key))
}

pub(crate) fn leaf_for(issuer: &Issuer<'_>, subject: &[(String, String)], sans: &Sans, key: &LeafKey) -> Issued {
    issue(issuer, &Leaf { subject, sans, key, not_before: 1_800_000_000, not_after: 1_800_086_400, crl_url: "http://x/crl" }, &Os).unwrap()
}

pub(crate) fn subject(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
}
