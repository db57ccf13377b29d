//! `admin jwt-issuers` and `admin mappings`: trusted JWT issuers, and the
//! mappings that bind JWT claims or client certificates to machine
//! identities. Stored in the database, so every replica sees them at once.

use strongroom_core::event::EventKind;
use strongroom_core::identity::{User, UserId};
use strongroom_core::machine::{
    Algorithm, CertField, Condition, JwtIssuer, KeySource, Mapping, MappingRule, mapping_of, valid_claim_name, valid_mapping_name,
};
use strongroom_core::scope::Scope;
use strongroom_store::IssuerRemoval;

use super::{Admin, AdminError};

/// What `admin jwt-issuers set` gives.
#[derive(Debug, Clone, Default)]
pub struct IssuerSpec {
    pub name: String,
    pub issuer: String,
    pub jwks_url: Option<String>,
    /// OpenID discovery: the document's URL, or `None` with `discovery` for `<issuer>/.well-known/openid-configuration`.
    pub discovery_url: Option<String>,
    pub discovery: bool,
    pub jwks_file: Option<String>,
    pub audiences: Vec<String>,
    pub algorithms: Option<String>,
    pub clock_skew: Option<i64>,
    pub max_lifetime: Option<i64>,
}

/// What `admin mappings set-jwt` and `set-cert` give.
#[derive(Debug, Clone, Default)]
pub struct MappingSpec {
    pub name: String,
    pub clients: Vec<String>,
    pub scope: String,
}

fn invalid(m: impl Into<String>) -> AdminError {
    AdminError::Invalid(m.into())
}

fn https(what: &str, url: &str) -> Result<String, AdminError> {
    let u = url.trim();
    if !u.starts_with("https://") || u.len() < 10 || u.contains(char::is_whitespace) {
        return Err(invalid(format!("{what} must be an https:// URL (keys are fetched over HTTPS only)")));
    }
    Ok(u.to_owned())
}

impl Admin {
    /// Creates or replaces a trusted JWT issuer.
    pub async fn save_jwt_issuer(&self, spec: IssuerSpec) -> Result<JwtIssuer, AdminError> {
        if !valid_mapping_name(&spec.name) {
            return Err(invalid("issuer names are 1-64 lower-case letters, digits or .-_"));
        }
        let issuer = spec.issuer.trim().to_owned();
        if issuer.is_empty() || issuer.len() > 512 {
            return Err(invalid("--issuer is the tokens' iss claim, exactly (1-512 characters)"));
        }
        let keys = match (spec.jwks_url, spec.discovery || spec.discovery_url.is_some(), spec.jwks_file) {
            (Some(u), false, None) => KeySource::JwksUrl(https("--jwks-url", &u)?),
            (None, true, None) => {
                let u = spec.discovery_url.unwrap_or_else(|| format!("{}/.well-known/openid-configuration", issuer.trim_end_matches('/')));
                KeySource::Discovery(https("the discovery URL", &u)?)
            }
            (None, false, Some(f)) => {
                let path = std::path::absolute(&f).map_err(|e| invalid(format!("--jwks-file {f}: {e}")))?;
                let doc = std::fs::read(&path).map_err(|e| invalid(format!("--jwks-file {}: {e}", path.display())))?;
                strongroom_core::machine::Jwk::parse_set(&doc).map_err(|e| invalid(format!("--jwks-file {}: {e}", path.display())))?;
                KeySource::JwksFile(path.display().to_string())
            }
            _ => return Err(invalid("give exactly one key source: --jwks-url URL, --discovery [--discovery-url URL] or --jwks-file FILE")),
        };
        let audiences: Vec<String> = spec.audiences.iter().map(|a| a.trim().to_owned()).filter(|a| !a.is_empty()).collect();
        if audiences.is_empty() || audiences.iter().any(|a| a.contains('\n')) {
            return Err(invalid("give at least one --audience (a token's aud must name one of them)"));
        }
        let algorithms = Algorithm::parse_list(spec.algorithms.as_deref().unwrap_or("RS256,ES256,EdDSA")).map_err(invalid)?;
        let clock_skew = spec.clock_skew.unwrap_or(60);
        if !(0..=300).contains(&clock_skew) {
            return Err(invalid("--clock-skew is 0 to 300 seconds"));
        }
        let max_lifetime = spec.max_lifetime.unwrap_or(3600);
        if !(1..=86_400).contains(&max_lifetime) {
            return Err(invalid("--max-lifetime is 1 to 86400 seconds"));
        }
        let j = JwtIssuer { name: spec.name, issuer, keys, audiences, algorithms, clock_skew, max_lifetime, created_at: self.clock.now() };
        let event = self.event(EventKind::JwtIssuerSaved).object(j.name.as_str()).detail(format!(
            "iss={} keys={}:{} aud={} alg={} skew={} max_lifetime={}",
            j.issuer,
            j.keys.kind(),
            j.keys.location(),
            j.audiences.join(","),
            Algorithm::list(&j.algorithms),
            j.clock_skew,
            j.max_lifetime
        ));
        match self.store.save_jwt_issuer(j.clone(), event).await {
            Ok(()) => Ok(j),
            Err(strongroom_store::StoreError::Conflict) => Err(AdminError::Exists(format!("an issuer with iss {}", j.issuer))),
            Err(e) => Err(e.into()),
        }
    }

    pub async fn jwt_issuers(&self) -> Result<Vec<JwtIssuer>, AdminError> {
        Ok(self.store.jwt_issuers().await?)
    }

    pub async fn remove_jwt_issuer(&self, name: &str) -> Result<(), AdminError> {
        match self.store.remove_jwt_issuer(name.to_owned(), self.event(EventKind::JwtIssuerRemoved).object(name)).await? {
            IssuerRemoval::Removed => Ok(()),
            IssuerRemoval::NotFound => Err(AdminError::NotFound(format!("issuer {name}"))),
            IssuerRemoval::InUse(n) => Err(invalid(format!("issuer {name} is used by {n} mapping(s): remove them first"))),
        }
    }

    async fn check_mapping(&self, spec: &MappingSpec) -> Result<Scope, AdminError> {
        if !valid_mapping_name(&spec.name) {
            return Err(invalid("mapping names are 1-64 lower-case letters, digits or .-_"));
        }
        if spec.clients.is_empty() {
            return Err(invalid("give at least one --client (an API integration the mapping's identities may use)"));
        }
        for c in &spec.clients {
            if self.store.integration(c.clone()).await?.is_none() {
                return Err(AdminError::NotFound(format!("integration {c}")));
            }
        }
        Scope::parse(&spec.scope).map_err(|e| invalid(format!("--scope: {e}")))
    }

    async fn save_mapping(&self, spec: MappingSpec, max_scope: Scope, rule: MappingRule, detail: String) -> Result<Mapping, AdminError> {
        let mut clients = spec.clients;
        clients.sort();
        clients.dedup();
        let m = Mapping { name: spec.name, rule, client_ids: clients, max_scope, created_at: self.clock.now() };
        let event = self.event(EventKind::MappingSaved).object(m.name.as_str()).detail(format!(
            "{detail} clients={} scope={}",
            m.client_ids.join(","),
            m.max_scope
        ));
        self.store.save_mapping(m.clone(), event).await?;
        Ok(m)
    }

    /// Creates or replaces a JWT mapping.
    pub async fn save_jwt_mapping(
        &self,
        spec: MappingSpec,
        issuer: &str,
        conditions: &[String],
        identity_claim: &str,
    ) -> Result<Mapping, AdminError> {
        let scope = self.check_mapping(&spec).await?;
        if !self.store.jwt_issuers().await?.iter().any(|j| j.name == issuer) {
            return Err(AdminError::NotFound(format!("issuer {issuer}")));
        }
        let conditions = conditions.iter().map(|c| Condition::parse(c)).collect::<Result<Vec<_>, _>>().map_err(invalid)?;
        if conditions.is_empty() {
            // GitHub's issuer signs tokens for every repository in the world: a mapping without
            // conditions would give all of them an identity. `--claim sub=*` says so on purpose.
            return Err(invalid(
                "give at least one --claim CLAIM=PATTERN (e.g. repository=acme/app): without one, every token of the issuer \
                 would map (for GitHub's, every repository's); --claim 'sub=*' if that is meant",
            ));
        }
        if !valid_claim_name(identity_claim) {
            return Err(invalid("--identity-claim is a claim name (1-64 characters)"));
        }
        let detail = format!(
            "kind=jwt issuer={issuer} conditions={} identity_claim={identity_claim}",
            conditions.iter().map(ToString::to_string).collect::<Vec<_>>().join(";")
        );
        let rule = MappingRule::Jwt { issuer: issuer.to_owned(), conditions, identity_claim: identity_claim.to_owned() };
        self.save_mapping(spec, scope, rule, detail).await
    }

    /// Creates or replaces a certificate mapping; `ca_pem` is the approved CAs' bundle.
    pub async fn save_cert_mapping(&self, spec: MappingSpec, ca_pem: String, field: &str) -> Result<Mapping, AdminError> {
        let scope = self.check_mapping(&spec).await?;
        let field = CertField::parse(field).ok_or_else(|| invalid("--identity-from is cn, email or upn"))?;
        let n = strongroom_idp::certificate::bundle_certs(&ca_pem).map_err(|e| invalid(format!("--ca-file: {e}")))?.len();
        let detail = format!("kind=cert cas={n} identity_from={}", field.as_str());
        self.save_mapping(spec, scope, MappingRule::Cert { ca_bundle: ca_pem, field }, detail).await
    }

    pub async fn mappings(&self) -> Result<Vec<Mapping>, AdminError> {
        Ok(self.store.mappings().await?)
    }

    /// Removes a mapping; the live grants of its identities are revoked. The grants revoked.
    pub async fn remove_mapping(&self, name: &str) -> Result<u64, AdminError> {
        let event = self.event(EventKind::MappingRemoved).object(name);
        self.store.remove_mapping(name.to_owned(), event).await?.ok_or_else(|| AdminError::NotFound(format!("mapping {name}")))
    }

    /// Gives a machine identity (`jwt+<mapping>:<subject>`, `cert+…`) of an
    /// existing mapping its row. False: `identity` names no such mapping.
    pub async fn machine_identity(&self, identity: &str) -> Result<bool, AdminError> {
        let Some(mapping) = mapping_of(identity) else { return Ok(false) };
        let Some(m) = self.store.mappings().await?.into_iter().find(|m| m.name == mapping) else { return Ok(false) };
        let expected = m.kind() == if identity.starts_with(strongroom_core::machine::JWT_PREFIX) { "jwt" } else { "cert" };
        if !expected {
            return Ok(false);
        }
        let id = UserId::from_stored(identity.to_owned());
        let user =
            User { id, name: identity.to_owned(), disabled: false, master_admin: false, created_at: self.clock.now(), signed_in_at: None };
        let event = self.event(EventKind::MachineIdentityAdded).object(identity).detail(format!("mapping={mapping}"));
        if !self.store.add_machine_identity(user, mapping.to_owned(), event).await? {
            return Err(AdminError::Exists(format!("a user named {identity} (in another case)")));
        }
        Ok(true)
    }
}
