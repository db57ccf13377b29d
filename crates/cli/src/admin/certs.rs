//! `strongroom admin ca ...` and `strongroom admin policy ...` (issue 33):
//! issuing CAs and folder certificate policies, on the store.

use anyhow::Result;
use clap::Subcommand;
use serde_json::json;

use strongroom_app::admin::Admin;
use strongroom_app::admin::certs::{CaInfo, PolicyChange};
use strongroom_core::cert::{Policy, Setting};
use strongroom_core::time::UnixTime;

use super::{Rendered, time};

#[derive(Debug, Subcommand)]
pub(crate) enum CaCommand {
    /// Create an issuing CA: a new key sealed by the key ring and its
    /// self-signed certificate (ten years). Prints its DN
    /// (\VED\Policy\CA Templates\NAME), which policies and requests name.
    ///
    /// Example: strongroom admin ca create 'Issuing CA' --subject 'CN=Issuing CA, O=Acme'
    Create {
        name: String,
        /// The CA key: p256 (default), p384, rsa2048, rsa3072 or rsa4096.
        #[arg(long, default_value = "p256")]
        algorithm: String,
        /// The CA's subject (CN, O, OU, L, ST, C); default CN=NAME.
        #[arg(long)]
        subject: Option<String>,
        /// How long the certificates it issues last, unless a folder policy says (the CA
        /// template's Validity Period; default 90).
        #[arg(long)]
        validity_days: Option<i64>,
        /// Make the key in the token of this configured PKCS#11 key ([[keys.pkcs11]], e.g.
        /// PKCS11:hsm) as a signing key that never leaves it (p256 or p384), instead of
        /// sealing it by the key ring.
        #[arg(long, value_name = "PKCS11_KEY")]
        key: Option<String>,
    },
    /// List the CAs.
    List,
    /// Show a CA; with --pem, only its certificate in PEM (for trust bundles, openssl verify).
    ///
    /// Example: strongroom admin ca show 'Issuing CA' --pem > ca.pem
    Show {
        name: String,
        #[arg(long)]
        pem: bool,
    },
}

#[derive(Debug, Subcommand)]
pub(crate) enum PolicyCommand {
    /// Set values of a folder's certificate policy (inherited by the folders
    /// below it); values not given stay as they are. With --locked, every
    /// value given is locked (a request must meet it); otherwise each is a
    /// default. Domains and wildcards always bind.
    ///
    /// Example: strongroom admin policy set '\VED\Policy\Web' --ca 'Issuing CA' --domains example.com --wildcards false
    Set(Box<PolicySet>),
    /// Show a folder's own policy and the one in force there.
    Show { folder: String },
}

/// What `policy set` is given.
#[derive(Debug, clap::Args)]
pub(crate) struct PolicySet {
    folder: String,
    /// The CA (its name or DN). Read through `admin`'s global `--ca` (the
    /// --server trust file of other commands): `policy set` runs on the store
    /// only, so the option is this one's here (see `main`).
    #[arg(skip)]
    pub(crate) ca: Option<String>,
    /// RSA or ECC.
    #[arg(long)]
    key_algorithm: Option<String>,
    /// RSA: 2048, 3072, 4096 or 8192 (locked: the least accepted).
    #[arg(long)]
    key_size: Option<u32>,
    /// P256, P384 or P521.
    #[arg(long)]
    curve: Option<String>,
    /// Domains CNs and DNS names must fall under, comma-separated ("" for any).
    #[arg(long, value_delimiter = ',')]
    domains: Option<Vec<String>>,
    #[arg(long)]
    wildcards: Option<bool>,
    #[arg(long)]
    organization: Option<String>,
    #[arg(long, value_delimiter = ',')]
    organizational_unit: Option<Vec<String>>,
    #[arg(long)]
    city: Option<String>,
    #[arg(long)]
    state: Option<String>,
    #[arg(long)]
    country: Option<String>,
    /// How long the certificates issued here last.
    #[arg(long)]
    validity_days: Option<u32>,
    /// Lock every value given in this command.
    #[arg(long)]
    locked: bool,
}

fn ca_json(c: &CaInfo) -> serde_json::Value {
    json!({
        "name": c.name, "dn": c.dn, "algorithm": c.algorithm, "subject": c.subject,
        "validity_days": c.validity_days, "serial": c.facts.serial, "thumbprint": c.facts.thumbprint, "key": c.key,
        "not_before": time(UnixTime::from_secs(c.facts.not_before)), "not_after": time(UnixTime::from_secs(c.facts.not_after)),
    })
}

pub(crate) async fn ca(admin: &Admin, command: CaCommand) -> Result<Rendered> {
    Ok(match command {
        CaCommand::Create { name, algorithm, subject, validity_days, key } => {
            let c = admin.create_ca(&name, &algorithm, subject.as_deref(), validity_days, key.as_deref()).await?;
            Rendered::done(c.dn.clone(), ca_json(&c))
        }
        CaCommand::List => {
            let cas = admin.cas().await?;
            let rows: Vec<Vec<String>> = cas
                .iter()
                .map(|c| {
                    vec![c.name.clone(), c.algorithm.clone(), c.subject.clone(), time(UnixTime::from_secs(c.facts.not_after)), c.dn.clone()]
                })
                .collect();
            Rendered::table(&["NAME", "ALGORITHM", "SUBJECT", "NOT AFTER", "DN"], &rows, json!(cas.iter().map(ca_json).collect::<Vec<_>>()))
        }
        CaCommand::Show { name, pem } => {
            let c = admin.ca(&name).await?;
            if pem {
                Rendered::done(c.pem(), json!({"pem": c.pem()}))
            } else {
                let text = format!(
                    "name:        {}\ndn:          {}\nalgorithm:   {}\nsubject:     {}\nserial:      {}\nthumbprint:  {}\nnot before:  {}\nnot after:   {}\nissues for:  {} days\nkey:         {}\n",
                    c.name,
                    c.dn,
                    c.algorithm,
                    c.subject,
                    c.facts.serial,
                    c.facts.thumbprint,
                    time(UnixTime::from_secs(c.facts.not_before)),
                    time(UnixTime::from_secs(c.facts.not_after)),
                    c.validity_days,
                    c.key
                );
                let mut j = ca_json(&c);
                j["pem"] = json!(c.pem());
                Rendered::done(text, j)
            }
        }
    })
}

fn setting<T: std::fmt::Display>(s: &Option<Setting<T>>) -> String {
    match s {
        Some(x) if x.locked => format!("{} (locked)", x.value),
        Some(x) => format!("{} (default)", x.value),
        None => "-".into(),
    }
}

fn policy_text(p: &Policy) -> String {
    let ou = p.organizational_unit.as_ref().map(|s| Setting { value: s.value.join(","), locked: s.locked });
    let curve = p.curve.as_ref().map(|s| Setting { value: s.value.as_str(), locked: s.locked });
    format!(
        "  ca:                  {}\n  key algorithm:       {}\n  key size:            {}\n  curve:               {}\n  domains:             {}\n  wildcards:           {}\n  organization:        {}\n  organizational unit: {}\n  city:                {}\n  state:               {}\n  country:             {}\n  validity days:       {}\n",
        setting(&p.ca),
        setting(&p.key_algorithm),
        setting(&p.key_size),
        setting(&curve),
        p.domains.as_ref().filter(|d| !d.is_empty()).map_or("any".into(), |d| d.join(", ")),
        p.wildcards.map_or("allowed".into(), |w| if w { "allowed".into() } else { "not allowed".to_owned() }),
        setting(&p.organization),
        setting(&ou),
        setting(&p.city),
        setting(&p.state),
        setting(&p.country),
        p.validity_days.map_or("-".into(), |v| v.to_string()),
    )
}

pub(crate) async fn policy(admin: &Admin, command: PolicyCommand) -> Result<Rendered> {
    Ok(match command {
        PolicyCommand::Set(set) => {
            let PolicySet {
                folder,
                ca,
                key_algorithm,
                key_size,
                curve,
                domains,
                wildcards,
                organization,
                organizational_unit,
                city,
                state,
                country,
                validity_days,
                locked,
            } = *set;
            let change = PolicyChange {
                ca,
                key_algorithm,
                key_size,
                curve,
                domains,
                wildcards,
                organization,
                organizational_unit,
                city,
                state,
                country,
                validity_days,
                locked,
            };
            let p = admin.set_cert_policy(&folder, change).await?;
            Rendered::done(format!("policy of {folder}:\n{}", policy_text(&p)), json!({"folder": folder, "policy": p}))
        }
        PolicyCommand::Show { folder } => {
            let (own, effective) = admin.cert_policy(&folder).await?;
            Rendered::done(
                format!("set on {folder}:\n{}in force:\n{}", policy_text(&own), policy_text(&effective)),
                json!({"folder": folder, "policy": own, "effective": effective}),
            )
        }
    })
}
