//! `strongroom admin jwt-issuers ...` and `strongroom admin mappings ...`:
//! the JWT grant's trusted issuers, and the mappings of JWT claims or client
//! certificates to machine identities (`jwt+<mapping>:<subject>`,
//! `cert+<mapping>:<name>`).

use anyhow::{Context as _, Result};
use clap::{Args, Subcommand};
use serde_json::json;

use strongroom_app::admin::Admin;
use strongroom_app::admin::machines::{IssuerSpec, MappingSpec};
use strongroom_core::machine::{Algorithm, JwtIssuer, Mapping, MappingRule};

use super::{Rendered, count, time};

#[derive(Debug, Subcommand)]
pub(crate) enum JwtIssuersCommand {
    /// Register (or replace) a trusted JWT issuer.
    ///
    /// Example (GitHub Actions): strongroom admin jwt-issuers set github \
    ///   --issuer https://token.actions.githubusercontent.com --discovery --audience strongroom
    Set {
        name: String,
        /// The tokens' `iss`, exactly.
        #[arg(long)]
        issuer: String,
        /// Keys from a JWKS document at this https:// URL.
        #[arg(long, value_name = "URL")]
        jwks_url: Option<String>,
        /// Keys through OpenID discovery (ISSUER/.well-known/openid-configuration, or --discovery-url).
        #[arg(long)]
        discovery: bool,
        #[arg(long, value_name = "URL")]
        discovery_url: Option<String>,
        /// Keys from a JWKS file on the server (each replica reads its own).
        #[arg(long, value_name = "FILE")]
        jwks_file: Option<String>,
        /// An accepted `aud` (repeat for several).
        #[arg(long = "audience", value_name = "AUD", required = true)]
        audiences: Vec<String>,
        /// Accepted algorithms, comma-separated: RS256, PS256, ES256, EdDSA (default RS256,ES256,EdDSA). Never none or HMAC.
        #[arg(long, value_name = "LIST")]
        algorithms: Option<String>,
        /// Seconds of clock difference allowed on exp, nbf and iat (default 60, at most 300).
        #[arg(long, value_name = "SECONDS")]
        clock_skew: Option<i64>,
        /// The longest token lifetime accepted, exp - iat (default 3600).
        #[arg(long, value_name = "SECONDS")]
        max_lifetime: Option<i64>,
    },
    /// List trusted JWT issuers.
    List,
    /// Remove an issuer no mapping uses.
    Remove { name: String },
}

#[derive(Debug, Args)]
pub(crate) struct MappingArgs {
    /// An API integration the identities may use (repeat for several).
    #[arg(long = "client", value_name = "CLIENT_ID", required = true)]
    clients: Vec<String>,
    /// The most the identities may ask for, e.g. "restricted".
    #[arg(long)]
    scope: String,
}

#[derive(Debug, Subcommand)]
pub(crate) enum MappingsCommand {
    /// Map JWTs of an issuer whose claims match to identities jwt+NAME:<identity claim>.
    ///
    /// Example (GitHub Actions, one repository's production environment):
    ///   strongroom admin mappings set-jwt deploy --issuer github --claim repository=org/app \
    ///   --claim environment=production --identity-claim sub --client ci --scope restricted
    SetJwt {
        name: String,
        /// The issuer's name (admin jwt-issuers).
        #[arg(long)]
        issuer: String,
        /// A condition CLAIM=PATTERN (exact, or a glob with * and ?); repeat: all must hold. At least one.
        #[arg(long = "claim", value_name = "CLAIM=PATTERN")]
        claims: Vec<String>,
        /// The claim whose value names the identity (default sub).
        #[arg(long, default_value = "sub")]
        identity_claim: String,
        #[command(flatten)]
        args: MappingArgs,
    },
    /// Map client certificates of approved CAs to identities cert+NAME:<name>.
    ///
    /// Example: strongroom admin mappings set-cert agents --ca-file ca.pem --identity-from cn --client agent --scope restricted
    SetCert {
        name: String,
        /// The approved issuers: a PEM bundle of CA certificates (stored in the database).
        #[arg(long, value_name = "FILE")]
        ca_file: std::path::PathBuf,
        /// Where the name comes from: cn, email or upn.
        #[arg(long, default_value = "cn")]
        identity_from: String,
        #[command(flatten)]
        args: MappingArgs,
    },
    /// List mappings.
    List,
    /// Remove a mapping: its identities' live grants end at once.
    Remove { name: String },
}

fn issuer_json(j: &JwtIssuer) -> serde_json::Value {
    json!({
        "name": j.name, "issuer": j.issuer, "keys": {"kind": j.keys.kind(), "source": j.keys.location()},
        "audiences": j.audiences, "algorithms": j.algorithms.iter().map(|a| a.as_str()).collect::<Vec<_>>(),
        "clock_skew": j.clock_skew, "max_lifetime": j.max_lifetime, "created": time(j.created_at),
    })
}

fn mapping_json(m: &Mapping) -> serde_json::Value {
    let mut v = json!({
        "name": m.name, "kind": m.kind(), "clients": m.client_ids, "scope": m.max_scope.to_string(), "created": time(m.created_at),
    });
    match &m.rule {
        MappingRule::Jwt { issuer, conditions, identity_claim } => {
            v["issuer"] = json!(issuer);
            v["conditions"] = json!(conditions.iter().map(ToString::to_string).collect::<Vec<_>>());
            v["identity_claim"] = json!(identity_claim);
            v["identity"] = json!(format!("jwt+{}:<{identity_claim}>", m.name));
        }
        MappingRule::Cert { ca_bundle, field } => {
            v["identity_from"] = json!(field.as_str());
            v["cas"] = json!(strongroom_idp::certificate::bundle_certs(ca_bundle).map_or(0, |c| c.len()));
            v["identity"] = json!(format!("cert+{}:<{}>", m.name, field.as_str()));
        }
    }
    v
}

pub(crate) async fn issuers(admin: &Admin, command: JwtIssuersCommand) -> Result<Rendered> {
    Ok(match command {
        JwtIssuersCommand::Set {
            name,
            issuer,
            jwks_url,
            discovery,
            discovery_url,
            jwks_file,
            audiences,
            algorithms,
            clock_skew,
            max_lifetime,
        } => {
            let spec =
                IssuerSpec { name, issuer, jwks_url, discovery_url, discovery, jwks_file, audiences, algorithms, clock_skew, max_lifetime };
            let j = admin.save_jwt_issuer(spec).await?;
            Rendered::done(
                format!("saved JWT issuer {} ({}), keys from {} {}", j.name, j.issuer, j.keys.kind(), j.keys.location()),
                issuer_json(&j),
            )
        }
        JwtIssuersCommand::List => {
            let list = admin.jwt_issuers().await?;
            let rows: Vec<Vec<String>> = list
                .iter()
                .map(|j| {
                    vec![
                        j.name.clone(),
                        j.issuer.clone(),
                        format!("{} {}", j.keys.kind(), j.keys.location()),
                        j.audiences.join(","),
                        Algorithm::list(&j.algorithms),
                        format!("{}s", j.clock_skew),
                        format!("{}s", j.max_lifetime),
                    ]
                })
                .collect();
            Rendered::table(
                &["NAME", "ISSUER", "KEYS", "AUDIENCES", "ALGORITHMS", "SKEW", "MAX LIFETIME"],
                &rows,
                "no JWT issuers",
                json!(list.iter().map(issuer_json).collect::<Vec<_>>()),
            )
        }
        JwtIssuersCommand::Remove { name } => {
            admin.remove_jwt_issuer(&name).await?;
            Rendered::done(format!("removed JWT issuer {name}"), json!({"name": name, "removed": true}))
        }
    })
}

pub(crate) async fn mappings(admin: &Admin, command: MappingsCommand) -> Result<Rendered> {
    Ok(match command {
        MappingsCommand::SetJwt { name, issuer, claims, identity_claim, args } => {
            let spec = MappingSpec { name, clients: args.clients, scope: args.scope };
            let m = admin.save_jwt_mapping(spec, &issuer, &claims, &identity_claim).await?;
            Rendered::done(format!("saved JWT mapping {}: identities jwt+{}:<{identity_claim}>", m.name, m.name), mapping_json(&m))
        }
        MappingsCommand::SetCert { name, ca_file, identity_from, args } => {
            let pem = std::fs::read_to_string(&ca_file).with_context(|| format!("reading {}", ca_file.display()))?;
            let spec = MappingSpec { name, clients: args.clients, scope: args.scope };
            let m = admin.save_cert_mapping(spec, pem, &identity_from).await?;
            Rendered::done(format!("saved certificate mapping {}: identities cert+{}:<{identity_from}>", m.name, m.name), mapping_json(&m))
        }
        MappingsCommand::List => {
            let list = admin.mappings().await?;
            let rows: Vec<Vec<String>> = list
                .iter()
                .map(|m| {
                    let (source, rule) = match &m.rule {
                        MappingRule::Jwt { issuer, conditions, identity_claim } => (
                            format!("issuer {issuer}"),
                            format!(
                                "{} → jwt+{}:<{identity_claim}>",
                                conditions.iter().map(ToString::to_string).collect::<Vec<_>>().join(" "),
                                m.name
                            ),
                        ),
                        MappingRule::Cert { field, .. } => ("CA bundle".to_owned(), format!("cert+{}:<{}>", m.name, field.as_str())),
                    };
                    vec![m.name.clone(), m.kind().to_owned(), source, rule, m.client_ids.join(","), m.max_scope.to_string()]
                })
                .collect();
            Rendered::table(
                &["NAME", "KIND", "SOURCE", "RULE", "CLIENTS", "SCOPE"],
                &rows,
                "no mappings",
                json!(list.iter().map(mapping_json).collect::<Vec<_>>()),
            )
        }
        MappingsCommand::Remove { name } => {
            let n = admin.remove_mapping(&name).await?;
            Rendered::done(
                format!("removed mapping {name}: {} ended", count(n, "grant", "grants")),
                json!({"name": name, "removed": true, "grants_ended": n}),
            )
        }
    })
}
