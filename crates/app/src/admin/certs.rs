//! `strongroom admin ca …` and `admin policy …` (issue 33): issuing CAs and
//! folder certificate policies, on the store.
//!
//! A CA is a key of the key ring's making (its PKCS#8 sealed under the
//! current data key of the default named key; a PKCS#11 CA key is for
//! later, through `pki::CaSigner`) with its self-signed certificate, shown
//! in the tree as the folder `\VED\Policy\CA Templates\NAME`: its DN is what
//! clients see (`CertificateAuthority`, `CADN`). Its `validity_days` is the
//! product's CA template `Validity Period`: how long the certificates it
//! issues last (a folder policy's validity wins); its own certificate lasts
//! ten years.

use strongroom_core::cert::{CA_FOLDER, Curve, Policy, Setting};
use strongroom_core::event::EventKind;
use strongroom_core::tree::lineage_with_guids;
use strongroom_core::vault::FolderPath;
use strongroom_store::CaRecord;

use super::{Admin, AdminError};
use crate::pki::{self, CaAlgorithm, CertFacts};
use crate::service::certificates::{self as svc, CertError};

/// How long a CA's own certificate lasts.
pub const CA_CERT_DAYS: i64 = 3650;

/// A CA as shown.
#[derive(Clone, Debug)]
pub struct CaInfo {
    pub name: String,
    pub dn: String,
    pub algorithm: String,
    pub subject: String,
    pub validity_days: i64,
    pub cert_der: Vec<u8>,
    pub facts: CertFacts,
    /// Where its key is: `sealed by NAME` (a key ring key) or `in the token of NAME`.
    pub key: String,
}

impl CaInfo {
    pub fn pem(&self) -> String {
        pki::pem("CERTIFICATE", &self.cert_der).replace("\r\n", "\n")
    }
}

fn info(ca: &CaRecord) -> Result<CaInfo, AdminError> {
    Ok(CaInfo {
        name: ca.name.clone(),
        dn: ca.dn.clone(),
        algorithm: ca.algorithm.clone(),
        subject: ca.subject.clone(),
        validity_days: ca.validity_days,
        cert_der: ca.cert_der.clone(),
        facts: pki::cert_facts(&ca.cert_der).map_err(|e| AdminError::Invalid(e.to_string()))?,
        key: if ca.key_id == svc::TOKEN_KEY_ID { format!("in the token of {}", ca.key_name) } else { format!("sealed by {}", ca.key_name) },
    })
}

impl From<CertError> for AdminError {
    fn from(e: CertError) -> Self {
        match e {
            CertError::Store(s) => AdminError::Store(s),
            other => AdminError::Invalid(other.to_string()),
        }
    }
}

fn valid_ca_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= 64 && name.trim() == name && name.chars().all(|c| c.is_ascii_alphanumeric() || " ._-".contains(c))
}

/// What `admin policy set` changes; `None` leaves a value as it is.
#[derive(Clone, Debug, Default)]
pub struct PolicyChange {
    pub ca: Option<String>,
    pub key_algorithm: Option<String>,
    pub key_size: Option<u32>,
    pub curve: Option<String>,
    pub domains: Option<Vec<String>>,
    pub wildcards: Option<bool>,
    pub organization: Option<String>,
    pub organizational_unit: Option<Vec<String>>,
    pub city: Option<String>,
    pub state: Option<String>,
    pub country: Option<String>,
    pub validity_days: Option<u32>,
    /// Every value given here is locked (a policy); otherwise each is a default.
    pub locked: bool,
}

impl Admin {
    /// Creates CA `name`: a new key (P-256 by default) and its self-signed
    /// certificate. The key is sealed by the key ring, or, with `token_key`
    /// (a configured PKCS#11 key's name), made in that key's token as a
    /// signing key that never leaves it (ECDSA: P-256 or P-384).
    pub async fn create_ca(
        &self,
        name: &str,
        algorithm: &str,
        subject: Option<&str>,
        validity_days: Option<i64>,
        token_key: Option<&str>,
    ) -> Result<CaInfo, AdminError> {
        if !valid_ca_name(name) {
            return Err(AdminError::Invalid("CA names are 1-64 letters, digits, spaces or ._-".into()));
        }
        let alg = CaAlgorithm::parse(algorithm)
            .ok_or_else(|| AdminError::Invalid(format!("algorithm {algorithm:?}: p256, p384, rsa2048, rsa3072 or rsa4096")))?;
        let days = validity_days.unwrap_or(svc::DEFAULT_VALIDITY_DAYS);
        if !(1..=3650).contains(&days) {
            return Err(AdminError::Invalid("--validity-days is 1 to 3650".into()));
        }
        let subject_text = subject.map_or_else(|| format!("CN={name}"), str::to_owned);
        let subject = pki::parse_subject(&subject_text).map_err(|e| AdminError::Invalid(e.to_string()))?;
        let folder = FolderPath::parse(&format!("{CA_FOLDER}\\{name}")).map_err(|e| AdminError::Invalid(e.to_string()))?;
        if self.store.cert_authorities().await?.iter().any(|c| c.name.eq_ignore_ascii_case(name)) {
            return Err(AdminError::Exists(format!("CA {name}")));
        }
        if self.store.folder_object(folder.key().to_owned()).await?.is_some() {
            return Err(AdminError::Exists(format!("folder {folder}")));
        }
        let now = self.clock.now();
        let (cert_der, key_name, key_id, key_sealed) = match token_key {
            Some(token_key) => {
                let curve = alg
                    .token_curve()
                    .ok_or_else(|| AdminError::Invalid("a CA key in a token is an ECDSA key: --algorithm p256 or p384".into()))?;
                let label = svc::token_label(name);
                let (key_name, _) = self
                    .keyring
                    .create_signing_key(token_key, &label, curve)
                    .await
                    .map_err(|e| AdminError::Invalid(format!("the CA key in {token_key}: {e}")))?;
                let signer = self.keyring.signer(&key_name, &label).map_err(|e| AdminError::Invalid(e.to_string()))?;
                let (rng, subject) = (self.rng.clone(), subject.clone());
                let cert_der = tokio::task::spawn_blocking(move || {
                    pki::self_signed_ca(&pki::TokenCaSigner { signer, curve }, &subject, now.secs(), CA_CERT_DAYS, &*rng)
                })
                .await
                .map_err(|e| AdminError::Invalid(format!("signing the CA certificate: {e}")))?
                .map_err(|e| AdminError::Invalid(e.to_string()))?;
                (cert_der, key_name, svc::TOKEN_KEY_ID, label.into_bytes())
            }
            None => {
                let (cert_der, key) = {
                    let rng = self.rng.clone();
                    let subject = subject.clone();
                    tokio::task::spawn_blocking(move || pki::create_ca(alg, &subject, now.secs(), CA_CERT_DAYS, &*rng))
                        .await
                        .map_err(|e| AdminError::Invalid(format!("key generation: {e}")))?
                        .map_err(|e| AdminError::Invalid(e.to_string()))?
                };
                let (key_name, key_id, key_sealed) = svc::seal_ca_key(&*self.store, &self.keyring, &*self.rng, now, name, &key).await?;
                (cert_der, key_name, key_id, key_sealed)
            }
        };
        let ca = CaRecord {
            name: name.to_owned(),
            dn: folder.as_str().to_owned(),
            algorithm: alg.as_str(),
            subject: subject_text,
            cert_der,
            key_name,
            key_id,
            key_sealed,
            validity_days: days,
            created_at: now,
        };
        let facts = pki::cert_facts(&ca.cert_der).map_err(|e| AdminError::Invalid(e.to_string()))?;
        let event = self
            .event(EventKind::CaCreated)
            .object(folder.as_str())
            .detail(format!("ca={name} algorithm={} serial={} thumbprint={}", ca.algorithm, facts.serial, facts.thumbprint));
        if !self.store.insert_ca(ca.clone(), lineage_with_guids(&folder, &*self.rng), event).await? {
            return Err(AdminError::Exists(format!("CA {name}")));
        }
        info(&ca)
    }

    pub async fn cas(&self) -> Result<Vec<CaInfo>, AdminError> {
        self.store.cert_authorities().await?.iter().map(info).collect()
    }

    /// CA `name` (or its DN).
    pub async fn ca(&self, name: &str) -> Result<CaInfo, AdminError> {
        let cas = self.store.cert_authorities().await?;
        svc::find_ca(&cas, name).map(info).unwrap_or_else(|| Err(AdminError::NotFound(format!("CA {name}"))))
    }

    /// Changes folder `folder`'s own policy; answers it.
    pub async fn set_cert_policy(&self, folder: &str, change: PolicyChange) -> Result<Policy, AdminError> {
        let f = FolderPath::parse(folder).map_err(|e| AdminError::Invalid(e.to_string()))?;
        if !(f.key() == "\\ved\\policy" || f.key().starts_with("\\ved\\policy\\")) {
            return Err(AdminError::Invalid("policies are set on folders under \\VED\\Policy".into()));
        }
        let all = svc::policies(&*self.store).await?;
        let mut p = all.get(f.key()).cloned().unwrap_or_default();
        let set = |v| Some(Setting { value: v, locked: change.locked });
        if let Some(ca) = &change.ca {
            let cas = self.store.cert_authorities().await?;
            let found = svc::find_ca(&cas, ca).ok_or_else(|| AdminError::NotFound(format!("CA {ca}")))?;
            p.ca = Some(Setting { value: found.dn.clone(), locked: change.locked });
        }
        if let Some(a) = &change.key_algorithm {
            let a = a.trim().to_ascii_uppercase();
            let a = if a == "EC" || a == "ECDSA" { "ECC".to_owned() } else { a };
            p.key_algorithm = set(a);
        }
        if let Some(s) = change.key_size {
            p.key_size = Some(Setting { value: s, locked: change.locked });
        }
        if let Some(c) = &change.curve {
            let curve = Curve::parse(c).ok_or_else(|| AdminError::Invalid(format!("curve {c:?}: P256, P384 or P521")))?;
            p.curve = Some(Setting { value: curve, locked: change.locked });
        }
        if let Some(d) = change.domains.clone() {
            p.domains = Some(d.into_iter().map(|x| x.trim().to_ascii_lowercase()).filter(|x| !x.is_empty()).collect());
        }
        if let Some(w) = change.wildcards {
            p.wildcards = Some(w);
        }
        if let Some(o) = change.organization.clone() {
            p.organization = set(o);
        }
        if let Some(ou) = change.organizational_unit.clone() {
            p.organizational_unit = Some(Setting { value: ou, locked: change.locked });
        }
        if let Some(x) = change.city.clone() {
            p.city = set(x);
        }
        if let Some(x) = change.state.clone() {
            p.state = set(x);
        }
        if let Some(x) = change.country.clone() {
            p.country = set(x.to_ascii_uppercase());
        }
        if let Some(v) = change.validity_days {
            if !(1..=3650).contains(&v) {
                return Err(AdminError::Invalid("--validity-days is 1 to 3650".into()));
            }
            p.validity_days = Some(v);
        }
        p.check().map_err(AdminError::Invalid)?;
        let text = serde_json::to_string(&p).map_err(|e| AdminError::Invalid(e.to_string()))?;
        let event = self.event(EventKind::CertPolicySet).object(f.as_str()).detail(format!("policy={text}"));
        if !self.store.set_cert_policy(f.clone(), Some(text), event).await? {
            return Err(AdminError::NotFound(format!("folder {f}")));
        }
        Ok(p)
    }

    /// Folder `folder`'s own policy and the one in force there.
    pub async fn cert_policy(&self, folder: &str) -> Result<(Policy, Policy), AdminError> {
        let f = FolderPath::parse(folder).map_err(|e| AdminError::Invalid(e.to_string()))?;
        if f.key() != "\\ved\\policy" && self.store.folder_object(f.key().to_owned()).await?.is_none() {
            return Err(AdminError::NotFound(format!("folder {f}")));
        }
        let all = svc::policies(&*self.store).await?;
        Ok((all.get(f.key()).cloned().unwrap_or_default(), svc::effective_policy(&all, &f)))
    }
}
