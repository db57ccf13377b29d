//! A CA's key in a PKCS#11 token as a certificate authority's signer
//! ([`TokenCaSigner`], strongroom-pki's `CaSigner`): rcgen signs through it
//! (`KeyPair::from_remote`), hashing here and signing the digest there:
//! `CKM_ECDSA`, the signature turned from the token's `r || s` into X.509's
//! DER, or `CKM_RSA_PKCS` over the SHA-256 `DigestInfo`
//! (sha256WithRSAEncryption). Its calls block, as the token's do.

use std::fmt;

use rcgen::{KeyPair, SignatureAlgorithm};
use strongroom_pki::{CaAlgorithm, CaSigner, PkiError, ecdsa_der};

use crate::{SigningAlgorithm, TokenSigner};

/// The algorithm of a CA's key made in a token.
impl From<CaAlgorithm> for SigningAlgorithm {
    fn from(a: CaAlgorithm) -> SigningAlgorithm {
        match a {
            CaAlgorithm::P256 => SigningAlgorithm::P256,
            CaAlgorithm::P384 => SigningAlgorithm::P384,
            CaAlgorithm::Rsa(b) => SigningAlgorithm::Rsa(b),
        }
    }
}

/// A CA key in a PKCS#11 token (see the module's head).
pub struct TokenCaSigner {
    pub signer: TokenSigner,
    pub algorithm: SigningAlgorithm,
}

impl fmt::Debug for TokenCaSigner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokenCaSigner").field("key", &self.signer.key_name()).field("algorithm", &self.algorithm).finish()
    }
}

struct TokenKey {
    signer: TokenSigner,
    algorithm: SigningAlgorithm,
    public: Vec<u8>,
}

impl rcgen::RemoteKeyPair for TokenKey {
    fn public_key(&self) -> &[u8] {
        &self.public
    }

    fn sign(&self, msg: &[u8]) -> Result<Vec<u8>, rcgen::Error> {
        use SigningAlgorithm as A;
        let digest = match self.algorithm {
            A::P256 | A::Rsa(_) => ring::digest::digest(&ring::digest::SHA256, msg),
            A::P384 => ring::digest::digest(&ring::digest::SHA384, msg),
        };
        let raw = self.signer.sign_digest(digest.as_ref()).map_err(|e| {
            tracing::error!(error = %e, "the token did not sign");
            rcgen::Error::RemoteKeyError
        })?;
        match self.algorithm {
            A::Rsa(_) => Ok(raw),
            A::P256 | A::P384 => ecdsa_der(&raw).ok_or(rcgen::Error::RemoteKeyError),
        }
    }

    fn algorithm(&self) -> &'static SignatureAlgorithm {
        use SigningAlgorithm as A;
        match self.algorithm {
            A::P256 => &rcgen::PKCS_ECDSA_P256_SHA256,
            A::P384 => &rcgen::PKCS_ECDSA_P384_SHA384,
            A::Rsa(_) => &rcgen::PKCS_RSA_SHA256,
        }
    }
}

fn internal(e: rcgen::Error) -> PkiError {
    PkiError::Internal(format!("the CA's key in its token: {e}"))
}

impl CaSigner for TokenCaSigner {
    fn key_pair(&self) -> Result<KeyPair, PkiError> {
        let public = self.signer.public_key().map_err(|e| PkiError::Internal(format!("the CA's key in its token: {e}")))?;
        let key = TokenKey { signer: self.signer.clone(), algorithm: self.algorithm, public };
        KeyPair::from_remote(Box::new(key)).map_err(internal)
    }

    fn sign(&self, msg: &[u8]) -> Result<Vec<u8>, PkiError> {
        use rcgen::RemoteKeyPair as _;
        let key = TokenKey { signer: self.signer.clone(), algorithm: self.algorithm, public: Vec::new() };
        key.sign(msg).map_err(internal)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cas_algorithm_is_a_tokens_signing_algorithm() {
        assert_eq!(SigningAlgorithm::from(CaAlgorithm::P256), SigningAlgorithm::P256);
        assert_eq!(SigningAlgorithm::from(CaAlgorithm::P384), SigningAlgorithm::P384);
        assert_eq!(SigningAlgorithm::from(CaAlgorithm::Rsa(3072)), SigningAlgorithm::Rsa(3072));
    }
}
