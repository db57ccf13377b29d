//! `strongroom admin ca ...`, `strongroom admin policy ...` and
//! `strongroom admin fields ...`: issuing CAs, folder certificate
//! policies and custom fields, on the store.

use anyhow::Result;
use clap::Subcommand;
use serde_json::json;

use strongroom_app::admin::Admin;
use strongroom_app::admin::certs::{CaInfo, FieldSpec, PolicyChange};
use strongroom_core::cert::{Policy, Setting};
use strongroom_core::time::UnixTime;

use super::{Rendered, time};

#[derive(Debug, Subcommand)]
pub(crate) enum CaCommand {
    /// Create an issuing CA: a new key sealed by the key ring (or made in a
    /// token with --key) and its self-signed certificate (ten years); with
    /// --intermediate, no certificate yet but a CSR for an offline root to
    /// sign (then `ca install`). Prints its DN
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
        /// PKCS11:hsm) as a signing key that never leaves it (any --algorithm), instead of
        /// sealing it by the key ring.
        #[arg(long, value_name = "PKCS11_KEY")]
        key: Option<String>,
        /// An intermediate CA: no self-signed certificate; its CSR goes to --csr-out for an
        /// offline root to sign, and it issues nothing until `ca install` gives it the
        /// certificate.
        #[arg(long, requires = "csr_out")]
        intermediate: bool,
        /// With --intermediate: where to write the CA's CSR (PEM).
        #[arg(long, value_name = "FILE", requires = "intermediate")]
        csr_out: Option<std::path::PathBuf>,
        /// The CA template's Manual Approval: what it would issue waits for an approver
        /// (`admin certificates approve`).
        #[arg(long)]
        manual_approval: bool,
    },
    /// Change a CA: its Manual Approval (what it would issue waits for an approver, `admin
    /// certificates pending`/`approve`/`reject`).
    ///
    /// Example: strongroom admin ca set 'Issuing CA' --manual-approval true
    Set {
        name: String,
        #[arg(long, value_name = "BOOL", action = clap::ArgAction::Set, required = true)]
        manual_approval: bool,
    },
    /// Write a CA's CSR (PEM) again, signed by its key, for its subject: for an offline root to
    /// sign (`ca install` takes what it signs).
    ///
    /// Example: strongroom admin ca csr 'Issuing CA' --out issuing.csr
    Csr {
        name: String,
        /// The file (default: standard output).
        #[arg(long, value_name = "FILE")]
        out: Option<std::path::PathBuf>,
    },
    /// Install a CA's certificate signed by another CA (an offline root), with the certificates
    /// above it. Checked first: it holds the CA's key, it is a CA certificate with keyCertSign
    /// and cRLSign, it is valid now, and the chain reaches a self-signed root with every
    /// signature verified. Retrieve's IncludeChain then answers the leaf, this CA and the
    /// chain up to the root.
    ///
    /// Example: strongroom admin ca install 'Issuing CA' --cert issuing.pem --chain root.pem
    Install {
        name: String,
        /// The CA's certificate (PEM or DER; further certificates in the file count as --chain).
        #[arg(long, value_name = "FILE")]
        cert: std::path::PathBuf,
        /// The certificates above it up to the self-signed root, in any order (PEM or DER).
        #[arg(long, value_name = "FILE")]
        chain: Option<std::path::PathBuf>,
    },
    /// List the CAs.
    List,
    /// Show a CA; with --pem, only its certificate in PEM (for trust bundles, openssl verify);
    /// with --chain, its certificate and those above it up to the root.
    ///
    /// Example: strongroom admin ca show 'Issuing CA' --pem > ca.pem
    Show {
        name: String,
        #[arg(long, conflicts_with = "chain")]
        pem: bool,
        #[arg(long)]
        chain: bool,
    },
}

#[derive(Debug, Subcommand)]
pub(crate) enum PolicyCommand {
    /// Set values of a folder's certificate policy (inherited by the folders
    /// below it); values not given stay as they are. With --locked, every
    /// value given is locked (a request must meet it); otherwise each is a
    /// default. Domains and wildcards always bind.
    ///
    /// Example: strongroom admin policy set '\VED\Policy\Web' --issuing-ca 'Issuing CA' --domains example.com --wildcards false
    Set(Box<PolicySet>),
    /// Show a folder's own policy and the one in force there.
    Show { folder: String },
}

/// The refusal of `policy set --ca NAME` (the old spelling of --issuing-ca).
pub(crate) const CA_IS_A_TRUST_FILE: &str = "--ca is the trust file of `admin --server` (a PEM file for the connection), not a \
     certificate policy's CA: name the CA with --issuing-ca NAME; nothing was changed";

/// What `policy set` is given.
#[derive(Debug, clap::Args)]
pub(crate) struct PolicySet {
    folder: String,
    /// The CA (its name or DN). (Not `--ca`, which is always the --server trust file.)
    #[arg(long = "issuing-ca", value_name = "CA")]
    issuing_ca: Option<String>,
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
    /// Manual Approval: requests here and below wait for an approver (`admin certificates
    /// approve`) before anything is issued.
    #[arg(long, value_name = "BOOL")]
    manual_approval: Option<bool>,
    /// SAN types requests may not have, comma-separated: DNS, IP, Email, URI, UPN ("" for none).
    #[arg(long, value_delimiter = ',')]
    prohibited_san_types: Option<Vec<String>>,
    /// Lock every value given in this command.
    #[arg(long)]
    locked: bool,
}

fn ca_json(c: &CaInfo) -> serde_json::Value {
    let f = c.facts.as_ref();
    json!({
        "name": c.name, "dn": c.dn, "algorithm": c.algorithm, "subject": c.subject, "kind": c.kind(),
        "validity_days": c.validity_days, "manual_approval": c.manual_approval, "serial": f.map(|f| &f.serial), "thumbprint": f.map(|f| &f.thumbprint), "key": c.key,
        "issuer": f.map(|f| &f.issuer),
        "not_before": f.map(|f| time(UnixTime::from_secs(f.not_before))), "not_after": f.map(|f| time(UnixTime::from_secs(f.not_after))),
    })
}

fn read(path: &std::path::Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| anyhow::anyhow!("reading {}: {e}", path.display()))
}

fn csr_pem(der: &[u8]) -> String {
    strongroom_app::pki::pem("CERTIFICATE REQUEST", der).replace("\r\n", "\n")
}

pub(crate) async fn ca(admin: &Admin, command: CaCommand) -> Result<Rendered> {
    Ok(match command {
        CaCommand::Create { name, algorithm, subject, validity_days, key, intermediate, csr_out, manual_approval } => {
            let mut c = admin.create_ca(&name, &algorithm, subject.as_deref(), validity_days, key.as_deref(), intermediate).await?;
            if manual_approval {
                c = admin.set_ca_manual_approval(&c.name, true).await?;
            }
            let mut j = ca_json(&c);
            if let Some(out) = csr_out {
                let pem = csr_pem(&admin.ca_csr(&c.name).await?);
                std::fs::write(&out, &pem).map_err(|e| anyhow::anyhow!("writing {}: {e}", out.display()))?;
                j["csr"] = json!(pem);
            }
            Rendered::done(c.dn.clone(), j)
        }
        CaCommand::Csr { name, out } => {
            let pem = csr_pem(&admin.ca_csr(&name).await?);
            match out {
                Some(out) => {
                    std::fs::write(&out, &pem).map_err(|e| anyhow::anyhow!("writing {}: {e}", out.display()))?;
                    Rendered::done(format!("CSR of {name} written to {}", out.display()), json!({"csr": pem}))
                }
                None => Rendered::done(pem.trim_end().to_owned(), json!({"csr": pem})),
            }
        }
        CaCommand::Install { name, cert, chain } => {
            let chain = chain.as_deref().map(read).transpose()?;
            let c = admin.install_ca(&name, &read(&cert)?, chain.as_deref()).await?;
            let issuer = c.facts.as_ref().map(|f| f.issuer.clone()).unwrap_or_default();
            Rendered::done(format!("installed: {} (issued by {issuer}; {} certificates up to the root)", c.dn, c.chain.len()), ca_json(&c))
        }
        CaCommand::Set { name, manual_approval } => {
            let c = admin.set_ca_manual_approval(&name, manual_approval).await?;
            let how = if c.manual_approval { "wait for an approver" } else { "are issued at once" };
            Rendered::done(format!("CA {}: what it issues {how} (Manual Approval {})", c.name, c.manual_approval), ca_json(&c))
        }
        CaCommand::List => {
            let cas = admin.cas().await?;
            let rows: Vec<Vec<String>> = cas
                .iter()
                .map(|c| {
                    let not_after = c.facts.as_ref().map_or_else(|| "-".to_owned(), |f| time(UnixTime::from_secs(f.not_after)));
                    vec![c.name.clone(), c.kind().to_owned(), c.algorithm.clone(), c.subject.clone(), not_after, c.dn.clone()]
                })
                .collect();
            Rendered::table(
                &["NAME", "KIND", "ALGORITHM", "SUBJECT", "NOT AFTER", "DN"],
                &rows,
                "no CAs",
                json!(cas.iter().map(ca_json).collect::<Vec<_>>()),
            )
        }
        CaCommand::Show { name, pem, chain } => {
            let c = admin.ca(&name).await?;
            if pem || chain {
                let text = if chain { c.chain_pem() } else { c.pem() };
                if text.is_empty() {
                    anyhow::bail!("CA {} has no certificate yet: install the one its root signed (strongroom admin ca install)", c.name);
                }
                Rendered::done(text.trim_end().to_owned(), json!({"pem": text}))
            } else {
                let f = c.facts.as_ref();
                let or_none = |v: Option<String>| v.unwrap_or_else(|| "- (not installed: strongroom admin ca install)".into());
                let text = format!(
                    "name:        {}\ndn:          {}\nkind:        {}\nalgorithm:   {}\nsubject:     {}\nissuer:      {}\nserial:      {}\nthumbprint:  {}\nnot before:  {}\nnot after:   {}\nissues for:  {} days\nkey:         {}\napproval:    {}\n",
                    c.name,
                    c.dn,
                    c.kind(),
                    c.algorithm,
                    c.subject,
                    or_none(f.map(|f| f.issuer.clone())),
                    or_none(f.map(|f| f.serial.clone())),
                    or_none(f.map(|f| f.thumbprint.clone())),
                    or_none(f.map(|f| time(UnixTime::from_secs(f.not_before)))),
                    or_none(f.map(|f| time(UnixTime::from_secs(f.not_after)))),
                    c.validity_days,
                    c.key,
                    if c.manual_approval { "manual (requests wait for an approver)" } else { "none" }
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
        "  ca:                  {}\n  key algorithm:       {}\n  key size:            {}\n  curve:               {}\n  domains:             {}\n  wildcards:           {}\n  organization:        {}\n  organizational unit: {}\n  city:                {}\n  state:               {}\n  country:             {}\n  validity days:       {}\n  prohibited SANs:     {}\n  manual approval:     {}\n",
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
        p.prohibited_san_types.as_ref().filter(|d| !d.is_empty()).map_or("none".into(), |d| d.join(", ")),
        setting(&p.manual_approval),
    )
}

pub(crate) async fn policy(admin: &Admin, command: PolicyCommand) -> Result<Rendered> {
    Ok(match command {
        PolicyCommand::Set(set) => {
            let folder = set.folder;
            let change = PolicyChange {
                ca: set.issuing_ca,
                key_algorithm: set.key_algorithm,
                key_size: set.key_size,
                curve: set.curve,
                domains: set.domains,
                wildcards: set.wildcards,
                organization: set.organization,
                organizational_unit: set.organizational_unit,
                city: set.city,
                state: set.state,
                country: set.country,
                validity_days: set.validity_days,
                manual_approval: set.manual_approval,
                prohibited_san_types: set.prohibited_san_types,
                locked: set.locked,
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

#[derive(Debug, Subcommand)]
pub(crate) enum FieldsCommand {
    /// Define a custom field of certificate objects: clients set it by its name
    /// (Certificates/Request's CustomFields, vcert --field "NAME=VALUE") or by the GUID it is
    /// given (Metadata/Set). Names are unique whatever the case. Prints its GUID.
    ///
    /// Example: strongroom admin fields create 'Cost Center'
    /// Example: strongroom admin fields create Environment --type list --value Staging --value UAT
    Create {
        name: String,
        /// text (any values, the default) or list (only the --value values).
        #[arg(long = "type", default_value = "text")]
        kind: String,
        /// An allowed value of a list field (repeat for each).
        #[arg(long = "value", value_name = "VALUE")]
        values: Vec<String>,
        /// A class it applies to: "X509 Certificate" (every certificate, the default) or
        /// "X509 Server Certificate" (repeat for more).
        #[arg(long = "class", value_name = "CLASS")]
        classes: Vec<String>,
    },
    /// List the custom fields.
    List,
    /// Remove a custom field, with every certificate object's values of it.
    ///
    /// Example: strongroom admin fields remove 'Cost Center'
    Remove { name: String },
}

fn field_json(f: &strongroom_store::CertField) -> serde_json::Value {
    json!({
        "name": f.name,
        "guid": f.guid,
        "type": strongroom_core::cert::fields::type_name(f.kind).to_ascii_lowercase(),
        "values": f.allowed,
        "classes": f.classes,
        "created_at": f.created_at.iso8601(),
    })
}

pub(crate) async fn fields(admin: &Admin, command: FieldsCommand) -> Result<Rendered> {
    Ok(match command {
        FieldsCommand::Create { name, kind, values, classes } => {
            let f = admin.create_cert_field(FieldSpec { name, kind, allowed: values, classes }).await?;
            Rendered::done(format!("field {} created: {}", f.name, f.guid), field_json(&f))
        }
        FieldsCommand::List => {
            let all = admin.cert_fields().await?;
            let rows: Vec<Vec<String>> = all
                .iter()
                .map(|f| {
                    vec![
                        f.name.clone(),
                        strongroom_core::cert::fields::type_name(f.kind).to_ascii_lowercase(),
                        f.allowed.join(", "),
                        f.classes.join(", "),
                        f.guid.clone(),
                    ]
                })
                .collect();
            Rendered::table(
                &["NAME", "TYPE", "VALUES", "CLASSES", "GUID"],
                &rows,
                "no custom fields",
                json!(all.iter().map(field_json).collect::<Vec<_>>()),
            )
        }
        FieldsCommand::Remove { name } => {
            admin.remove_cert_field(&name).await?;
            Rendered::done(format!("field {} removed", name.trim()), json!({"removed": name.trim()}))
        }
    })
}

#[derive(Debug, Subcommand)]
pub(crate) enum CertificatesCommand {
    /// List the certificate requests waiting for approval (a CA's or a folder policy's Manual
    /// Approval holds them), and the rejected ones until a Reset or Retry.
    Pending,
    /// Approve the request waiting at a certificate DN: the certificate is issued now, as
    /// requested, judged by the policy in force (one write: two approvals issue once).
    ///
    /// Example: strongroom admin certificates approve '\VED\Policy\Web\www.example.com'
    Approve {
        dn: String,
        /// Approve only if the request is still this version (`pending --json` shows it).
        #[arg(long)]
        version: Option<i64>,
    },
    /// Reject the request waiting at a certificate DN: nothing is issued, and the requester's
    /// Retrieve answers the product's failed shape with the reason until a Reset or Retry.
    ///
    /// Example: strongroom admin certificates reject '\VED\Policy\Web\www.example.com' --reason 'not ours'
    Reject {
        dn: String,
        /// Why (the requester sees it in Status).
        #[arg(long)]
        reason: String,
        /// Reject only if the request is still this version.
        #[arg(long)]
        version: Option<i64>,
    },
}

fn pending_json(p: &strongroom_store::PendingRecord) -> serde_json::Value {
    json!({
        "dn": p.path.as_str(), "guid": p.guid.braced(), "ca": p.ca_key, "renewal": p.renewal, "requested_by": p.requested_by,
        "requested_at": time(p.requested_at), "state": if p.rejected { "rejected" } else { "waiting" }, "status": p.status,
        "version": p.version,
    })
}

/// `admin certificates …`; `public_url`: the server's, named in the CRL distribution point of
/// what an approval issues.
pub(crate) async fn certificates(admin: &Admin, public_url: &str, command: CertificatesCommand) -> Result<Rendered> {
    Ok(match command {
        CertificatesCommand::Pending => {
            let all = admin.pending_certificates().await?;
            let rows: Vec<Vec<String>> = all
                .iter()
                .map(|p| {
                    vec![
                        p.path.as_str().to_owned(),
                        p.ca_key.clone(),
                        if p.rejected { "rejected".into() } else { "waiting".into() },
                        p.requested_by.clone(),
                        time(p.requested_at),
                        p.version.to_string(),
                    ]
                })
                .collect();
            Rendered::table(
                &["DN", "CA", "STATE", "REQUESTED BY", "AT", "VERSION"],
                &rows,
                "no certificate requests waiting or rejected",
                json!(all.iter().map(pending_json).collect::<Vec<_>>()),
            )
        }
        CertificatesCommand::Approve { dn, version } => {
            let r = admin.approve_certificate(public_url, &dn, version).await?;
            Rendered::done(format!("approved: {} is issued", r.dn), json!({"dn": r.dn, "guid": r.guid.braced(), "approved": true}))
        }
        CertificatesCommand::Reject { dn, reason, version } => {
            admin.reject_certificate(&dn, &reason, version).await?;
            Rendered::done(format!("rejected: {dn}"), json!({"dn": dn, "rejected": true, "reason": reason}))
        }
    })
}
