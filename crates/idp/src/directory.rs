//! An LDAP or Active Directory identity provider (`[ldap]`): people sign in
//! with their directory password, and their directory groups become groups
//! of the rights model.
//!
//! A sign-in binds with the service account, finds the person by the
//! login attribute under the user base (the name escaped per RFC 4515, so
//! `*)(uid=*` is a name like any other), refuses an entry the disabled
//! filter matches, then binds as the person's DN with the password typed (an
//! empty password is refused before any bind: LDAP reads it as an
//! anonymous bind, which succeeds). Groups: the `memberOf` values and, for
//! the LDAP profile, a group search (`member=<dn>`), followed upwards through
//! nested groups to a bounded depth; the AD profile asks the in-chain rule
//! (1.2.840.113556.1.4.1941) first. The stable id is `entryUUID` (LDAP) or
//! `objectGUID` (AD, 16 bytes in Microsoft's mixed-endian order); the
//! identity is `LDAP+<name>:{<id>}` or `AD+<name>:{<id>}`.
//!
//! Every connection has a connect timeout and every operation a timeout
//! (`ldap.timeout_secs`): a directory out of reach is an answer within that
//! bound (`DirectoryError::Unavailable`), never a hang, and local users are
//! not affected.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use ldap3::{LdapConnAsync, LdapConnSettings, Scope, SearchEntry, ldap_escape};
use rustls::ClientConfig;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject as _;

use strongroom_core::secret::Secret;

/// Which directory's conventions the defaults follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    /// OpenLDAP and its kin: `uid`, `entryUUID`, `groupOfNames`.
    Ldap,
    /// Active Directory: `sAMAccountName`, `objectGUID`, `memberOf`, nested
    /// groups through the in-chain rule, `userAccountControl`.
    Ad,
}

impl Profile {
    /// The identity prefix's provider part: `LDAP` or `AD`.
    pub fn prefix(self) -> &'static str {
        match self {
            Profile::Ldap => "LDAP",
            Profile::Ad => "AD",
        }
    }
}

/// `[ldap]`, validated (the bind password is read when the server starts).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LdapConfig {
    /// `ldaps://host:636`, or `ldap://host:389` with `starttls`.
    pub url: String,
    pub starttls: bool,
    /// PEM CA certificates the directory's certificate must chain to; unset: the web PKI roots.
    pub ca_file: Option<PathBuf>,
    pub profile: Profile,
    /// The provider's name in identities and user names: `corp` in `AD+corp:…` and `corp\alice`.
    pub name: String,
    pub bind_dn: String,
    pub bind_password_file: Option<PathBuf>,
    pub bind_password_env: Option<String>,
    pub user_base: String,
    /// Which entries are people (ANDed with the login attribute's match).
    pub user_filter: String,
    /// The attribute people sign in with (`uid`, `sAMAccountName`, `userPrincipalName`).
    pub login_attribute: String,
    pub id_attribute: String,
    pub name_attribute: String,
    pub full_name_attribute: String,
    pub mail_attribute: String,
    /// Where groups are searched (`member=<dn>`); unset: `memberOf` only.
    pub group_base: Option<String>,
    pub group_filter: String,
    /// Entries this matches are disabled or locked in the directory: refused.
    pub disabled_filter: Option<String>,
    pub timeout: Duration,
}

impl LdapConfig {
    /// `LDAP+corp` or `AD+corp`.
    pub fn prefix(&self) -> String {
        format!("{}+{}", self.profile.prefix(), self.name)
    }

    /// The defaults of a profile for the attributes not given.
    pub fn defaults(profile: Profile) -> ProfileDefaults {
        match profile {
            Profile::Ldap => ProfileDefaults {
                user_filter: "(objectClass=inetOrgPerson)",
                login_attribute: "uid",
                id_attribute: "entryUUID",
                name_attribute: "uid",
                full_name_attribute: "cn",
                group_filter: "(|(objectClass=groupOfNames)(objectClass=groupOfUniqueNames))",
                disabled_filter: Some("(pwdAccountLockedTime=*)"),
            },
            Profile::Ad => ProfileDefaults {
                user_filter: "(&(objectCategory=person)(objectClass=user))",
                login_attribute: "sAMAccountName",
                id_attribute: "objectGUID",
                name_attribute: "sAMAccountName",
                full_name_attribute: "displayName",
                group_filter: "(objectClass=group)",
                // ACCOUNTDISABLE (2) or LOCKOUT (16) in userAccountControl.
                disabled_filter: Some("(|(userAccountControl:1.2.840.113556.1.4.803:=2)(userAccountControl:1.2.840.113556.1.4.803:=16))"),
            },
        }
    }
}

/// What a profile sets when the configuration does not.
#[derive(Debug, Clone, Copy)]
pub struct ProfileDefaults {
    pub user_filter: &'static str,
    pub login_attribute: &'static str,
    pub id_attribute: &'static str,
    pub name_attribute: &'static str,
    pub full_name_attribute: &'static str,
    pub group_filter: &'static str,
    pub disabled_filter: Option<&'static str>,
}

#[derive(Debug, thiserror::Error)]
pub enum DirectoryError {
    /// No such person, a wrong password, or an empty one.
    #[error("wrong user name or password")]
    Invalid,
    /// The directory says the account is disabled or locked.
    #[error("the directory account is disabled or locked")]
    Disabled,
    /// Out of reach, too slow, or refusing the service account.
    #[error("the directory cannot be reached: {0}")]
    Unavailable(String),
    /// The configuration cannot work (a CA file, a password file).
    #[error("{0}")]
    Config(String),
}

/// A person as the directory describes them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirectoryPerson {
    /// The stable id, as a lower-case UUID.
    pub id: String,
    /// The login name as the directory spells it.
    pub name: String,
    pub full_name: String,
    pub mail: String,
    pub dn: String,
    /// Every group, nested ones included, by name (their `cn`), with their DN.
    pub groups: Vec<DirectoryGroup>,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct DirectoryGroup {
    pub name: String,
    pub dn: String,
}

/// How deep nested groups are followed, and how many groups at most.
const MAX_GROUP_DEPTH: usize = 8;
const MAX_GROUPS: usize = 512;

/// The provider: its settings and TLS configuration. The service
/// account's password is read at each bind (from its file, else its
/// variable), so a new one is taken without a restart and it never sits in
/// a long-lived structure.
pub struct Directory {
    pub config: LdapConfig,
    tls: Result<Arc<ClientConfig>, String>,
}

impl std::fmt::Debug for Directory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Directory").field("url", &self.config.url).field("prefix", &self.config.prefix()).finish_non_exhaustive()
    }
}

type Conn = ldap3::Ldap;

impl Directory {
    /// Reads the CA file; a problem with it is reported at start-up and at
    /// every sign-in through the directory, which it stops.
    pub fn new(config: LdapConfig) -> Directory {
        let tls = tls_config(config.ca_file.as_ref()).map(Arc::new).map_err(|e| e.to_string());
        if let Err(e) = &tls {
            tracing::error!(error = %e, "the directory's TLS configuration cannot work: sign-ins through it will fail");
        }
        Directory { config, tls }
    }

    fn bind_password(&self) -> Result<Secret, DirectoryError> {
        match (&self.config.bind_password_file, &self.config.bind_password_env) {
            (Some(path), _) => {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| DirectoryError::Config(format!("ldap.bind_password_file {}: {e}", path.display())))?;
                Ok(Secret::new(text.trim_end_matches(['\r', '\n']).to_owned()))
            }
            (None, Some(var)) => {
                std::env::var(var).map(Secret::new).map_err(|_| DirectoryError::Config(format!("ldap.bind_password_env: {var} is not set")))
            }
            (None, None) => Ok(Secret::new(String::new())),
        }
    }

    async fn connect(&self) -> Result<Conn, DirectoryError> {
        let tls = self.tls.clone().map_err(DirectoryError::Config)?;
        let settings = LdapConnSettings::new().set_conn_timeout(self.config.timeout).set_starttls(self.config.starttls).set_config(tls);
        let (conn, ldap) = LdapConnAsync::with_settings(settings, &self.config.url).await.map_err(unavailable)?;
        tokio::spawn(async move {
            if let Err(e) = conn.drive().await {
                tracing::debug!(error = %e, "directory connection ended");
            }
        });
        Ok(ldap)
    }

    /// A connection bound as the service account.
    async fn service(&self) -> Result<Conn, DirectoryError> {
        let mut ldap = self.connect().await?;
        let t = self.config.timeout;
        let password = self.bind_password()?;
        let r = ldap.with_timeout(t).simple_bind(&self.config.bind_dn, password.expose()).await.map_err(unavailable)?;
        if r.rc != 0 {
            return Err(DirectoryError::Unavailable(format!("the service account's bind was refused (result {})", r.rc)));
        }
        Ok(ldap)
    }

    fn user_attributes(&self) -> Vec<String> {
        let c = &self.config;
        let mut a = vec![
            c.id_attribute.clone(),
            c.name_attribute.clone(),
            c.full_name_attribute.clone(),
            c.mail_attribute.clone(),
            "memberOf".to_owned(),
        ];
        a.dedup();
        a
    }

    /// Signs `login` in with `password`: the person, their groups.
    pub async fn authenticate(&self, login: &str, password: &Secret) -> Result<DirectoryPerson, DirectoryError> {
        if password.expose().is_empty() || login.is_empty() || login.len() > 256 {
            return Err(DirectoryError::Invalid);
        }
        let mut ldap = self.service().await?;
        let filter = format!("(&{}({}={}))", self.config.user_filter, self.config.login_attribute, ldap_escape(login));
        let entry = self.one_entry(&mut ldap, &filter).await?.ok_or(DirectoryError::Invalid)?;
        if self.is_disabled(&mut ldap, &entry.dn).await? {
            return Err(DirectoryError::Disabled);
        }
        // The person's own bind, on a connection of its own.
        let mut own = self.connect().await?;
        let r = own.with_timeout(self.config.timeout).simple_bind(&entry.dn, password.expose()).await.map_err(unavailable)?;
        let _ = own.unbind().await;
        match r.rc {
            0 => {}
            // invalidCredentials; AD's locked or expired accounts answer 49 too.
            49 | 53 | 50 => {
                ldap_done(ldap).await;
                return Err(DirectoryError::Invalid);
            }
            rc => {
                ldap_done(ldap).await;
                return Err(DirectoryError::Unavailable(format!("the directory answered the bind with result {rc}")));
            }
        }
        let person = self.person(&mut ldap, entry).await;
        ldap_done(ldap).await;
        person
    }

    /// The person whose stable id is `id` (a lower-case UUID), as the
    /// directory describes them now: `Ok(None)` when gone or disabled. No
    /// password: this re-reads standing and groups at a refresh.
    pub async fn lookup(&self, id: &str) -> Result<Option<DirectoryPerson>, DirectoryError> {
        let mut ldap = self.service().await?;
        let value = match self.config.profile {
            Profile::Ldap => ldap_escape(id).into_owned(),
            Profile::Ad => guid_filter_value(id).ok_or(DirectoryError::Invalid)?,
        };
        let filter = format!("(&{}({}={}))", self.config.user_filter, self.config.id_attribute, value);
        let Some(entry) = self.one_entry(&mut ldap, &filter).await? else {
            ldap_done(ldap).await;
            return Ok(None);
        };
        if self.is_disabled(&mut ldap, &entry.dn).await? {
            ldap_done(ldap).await;
            return Ok(None);
        }
        let person = self.person(&mut ldap, entry).await;
        ldap_done(ldap).await;
        person.map(Some)
    }

    /// The one entry `filter` finds under the user base (none, or more than
    /// one: nobody).
    async fn one_entry(&self, ldap: &mut Conn, filter: &str) -> Result<Option<SearchEntry>, DirectoryError> {
        let (found, _) = ldap
            .with_timeout(self.config.timeout)
            .search(&self.config.user_base, Scope::Subtree, filter, self.user_attributes())
            .await
            .map_err(unavailable)?
            .success()
            .map_err(unavailable)?;
        let mut entries: Vec<SearchEntry> = found.into_iter().map(SearchEntry::construct).collect();
        if entries.len() != 1 {
            return Ok(None);
        }
        Ok(entries.pop())
    }

    async fn is_disabled(&self, ldap: &mut Conn, dn: &str) -> Result<bool, DirectoryError> {
        let Some(filter) = &self.config.disabled_filter else { return Ok(false) };
        let (found, _) = ldap
            .with_timeout(self.config.timeout)
            .search(dn, Scope::Base, filter, vec!["1.1"])
            .await
            .map_err(unavailable)?
            .success()
            .map_err(unavailable)?;
        Ok(!found.is_empty())
    }

    async fn person(&self, ldap: &mut Conn, entry: SearchEntry) -> Result<DirectoryPerson, DirectoryError> {
        let c = &self.config;
        let id = stable_id(&entry, &c.id_attribute, c.profile)
            .ok_or_else(|| DirectoryError::Unavailable(format!("the entry has no usable {}", c.id_attribute)))?;
        let first = |a: &str| entry.attrs.iter().find(|(k, _)| k.eq_ignore_ascii_case(a)).and_then(|(_, v)| v.first().cloned());
        let name = first(&c.name_attribute).unwrap_or_default();
        let full_name = first(&c.full_name_attribute).unwrap_or_else(|| name.clone());
        let mail = first(&c.mail_attribute).unwrap_or_default();
        let groups = self.groups(ldap, &entry).await?;
        Ok(DirectoryPerson { id, name, full_name, mail, dn: entry.dn, groups })
    }

    /// Every group of the entry, nested ones included: `memberOf`, the AD
    /// in-chain search, the group search, then upwards from each group found.
    async fn groups(&self, ldap: &mut Conn, entry: &SearchEntry) -> Result<Vec<DirectoryGroup>, DirectoryError> {
        let t = self.config.timeout;
        let mut found: BTreeMap<String, String> = BTreeMap::new(); // dn (lower-case) → dn
        let mut frontier: Vec<String> = member_of(entry);
        if self.config.profile == Profile::Ad
            && let Some(base) = self.config.group_base.as_ref().or(Some(&self.config.user_base))
        {
            let filter = format!("(&{}(member:1.2.840.113556.1.4.1941:={}))", self.config.group_filter, ldap_escape(&entry.dn));
            // A directory without the rule (OpenLDAP) answers nothing or an error: the walk below still runs.
            if let Ok(r) = ldap.with_timeout(t).search(base, Scope::Subtree, &filter, vec!["cn"]).await
                && let Ok((es, _)) = r.success()
            {
                frontier.extend(es.into_iter().map(|e| SearchEntry::construct(e).dn));
            }
        }
        let mut depth = 0;
        let mut next_dn = vec![entry.dn.clone()];
        while depth <= MAX_GROUP_DEPTH && found.len() < MAX_GROUPS {
            // Groups that list one of `next_dn` as a member.
            if let Some(base) = &self.config.group_base {
                for dn in &next_dn {
                    let filter = format!("(&{}(|(member={dn})(uniqueMember={dn})))", self.config.group_filter, dn = ldap_escape(dn));
                    let (es, _) = ldap
                        .with_timeout(t)
                        .search(base, Scope::Subtree, &filter, vec!["memberOf"])
                        .await
                        .map_err(unavailable)?
                        .success()
                        .map_err(unavailable)?;
                    for e in es {
                        let e = SearchEntry::construct(e);
                        frontier.extend(member_of(&e));
                        frontier.push(e.dn);
                    }
                }
            }
            let fresh: Vec<String> = frontier.drain(..).filter(|dn| !found.contains_key(&dn.to_lowercase())).collect();
            if fresh.is_empty() {
                break;
            }
            next_dn.clear();
            for dn in fresh {
                if found.len() >= MAX_GROUPS {
                    break;
                }
                if found.insert(dn.to_lowercase(), dn.clone()).is_none() {
                    // The group's own memberOf (AD, or slapd's memberof overlay).
                    if self.config.group_base.is_none() {
                        let (es, _) = ldap
                            .with_timeout(t)
                            .search(&dn, Scope::Base, "(objectClass=*)", vec!["memberOf"])
                            .await
                            .map_err(unavailable)?
                            .success()
                            .map_err(unavailable)?;
                        for e in es {
                            frontier.extend(member_of(&SearchEntry::construct(e)));
                        }
                    }
                    next_dn.push(dn);
                }
            }
            depth += 1;
        }
        let mut groups: Vec<DirectoryGroup> = found.into_values().map(|dn| DirectoryGroup { name: rdn_value(&dn), dn }).collect();
        groups.sort();
        groups.dedup_by(|a, b| a.name.eq_ignore_ascii_case(&b.name));
        Ok(groups)
    }
}

async fn ldap_done(mut ldap: Conn) {
    let _ = ldap.unbind().await;
}

fn unavailable(e: ldap3::LdapError) -> DirectoryError {
    DirectoryError::Unavailable(e.to_string())
}

fn member_of(e: &SearchEntry) -> Vec<String> {
    e.attrs.iter().filter(|(k, _)| k.eq_ignore_ascii_case("memberOf")).flat_map(|(_, v)| v.iter().cloned()).collect()
}

/// The value of a DN's first RDN: `admins` of `cn=admins,ou=groups,dc=x`.
pub fn rdn_value(dn: &str) -> String {
    let first = dn.split(',').next().unwrap_or(dn);
    first.split_once('=').map_or(first, |(_, v)| v).trim().to_owned()
}

/// The entry's stable id as a lower-case UUID: `entryUUID`'s text, or
/// `objectGUID`'s 16 bytes (the first three fields little-endian).
fn stable_id(e: &SearchEntry, attribute: &str, profile: Profile) -> Option<String> {
    if let Some(bytes) = e.bin_attrs.iter().find(|(k, _)| k.eq_ignore_ascii_case(attribute)).and_then(|(_, v)| v.first()) {
        return guid_from_bytes(bytes);
    }
    let text = e.attrs.iter().find(|(k, _)| k.eq_ignore_ascii_case(attribute)).and_then(|(_, v)| v.first())?;
    match profile {
        Profile::Ad if text.len() == 16 => guid_from_bytes(text.as_bytes()),
        _ => uuid_text(text),
    }
}

fn uuid_text(s: &str) -> Option<String> {
    let t = s.trim().trim_start_matches('{').trim_end_matches('}');
    let hex: String = t.chars().filter(|c| *c != '-').collect();
    if hex.len() != 32 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    let h = hex.to_lowercase();
    Some(format!("{}-{}-{}-{}-{}", &h[..8], &h[8..12], &h[12..16], &h[16..20], &h[20..]))
}

/// Microsoft's GUID byte order: Data1, Data2 and Data3 little-endian.
pub fn guid_from_bytes(b: &[u8]) -> Option<String> {
    let b: [u8; 16] = b.try_into().ok()?;
    let order = [3, 2, 1, 0, 5, 4, 7, 6, 8, 9, 10, 11, 12, 13, 14, 15];
    let hex: String = order.iter().map(|i| format!("{:02x}", b[*i])).collect();
    uuid_text(&hex)
}

/// An `objectGUID` filter value for a GUID: its 16 bytes, each `\xx`.
pub fn guid_filter_value(guid: &str) -> Option<String> {
    let t = uuid_text(guid)?;
    let hex: String = t.chars().filter(|c| *c != '-').collect();
    let bytes: Vec<u8> = (0..16).map(|i| u8::from_str_radix(&hex[i * 2..i * 2 + 2], 16).unwrap_or(0)).collect();
    let order = [3, 2, 1, 0, 5, 4, 7, 6, 8, 9, 10, 11, 12, 13, 14, 15];
    Some(order.iter().map(|i| format!("\\{:02x}", bytes[*i])).collect())
}

fn tls_config(ca_file: Option<&PathBuf>) -> Result<ClientConfig, DirectoryError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    match ca_file {
        Some(path) => {
            let certs = CertificateDer::pem_file_iter(path)
                .and_then(|it| it.collect::<Result<Vec<_>, _>>())
                .map_err(|e| DirectoryError::Config(format!("ldap.ca_file {}: {e}", path.display())))?;
            if certs.is_empty() {
                return Err(DirectoryError::Config(format!("ldap.ca_file {} holds no certificate", path.display())));
            }
            for c in certs {
                roots.add(c).map_err(|e| DirectoryError::Config(format!("ldap.ca_file {}: {e}", path.display())))?;
            }
        }
        None => roots.roots = webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    }
    Ok(ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| DirectoryError::Config(format!("ldap TLS: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth())
}

/// How a typed user name names a directory person: `corp\alice`,
/// `LDAP+corp:alice` / `AD+corp:alice` (the provider's name in any case).
/// `None`: not this directory's form.
pub fn directory_login<'a>(typed: &'a str, config: &LdapConfig) -> Option<&'a str> {
    let t = typed.trim();
    if let Some((domain, user)) = t.split_once('\\') {
        return domain.eq_ignore_ascii_case(&config.name).then_some(user);
    }
    if let Some((prefix, user)) = t.split_once(':') {
        return prefix.eq_ignore_ascii_case(&config.prefix()).then_some(user);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guids_read_in_microsofts_order_and_back() {
        let bytes = [0x78, 0x56, 0x34, 0x12, 0x34, 0x12, 0x78, 0x56, 0x9a, 0xbc, 0xde, 0xf0, 0x12, 0x34, 0x56, 0x78];
        assert_eq!(guid_from_bytes(&bytes).as_deref(), Some("12345678-1234-5678-9abc-def012345678"));
        assert_eq!(
            guid_filter_value("12345678-1234-5678-9abc-def012345678").as_deref(),
            Some("\\78\\56\\34\\12\\34\\12\\78\\56\\9a\\bc\\de\\f0\\12\\34\\56\\78")
        );
        assert_eq!(guid_from_bytes(&[1, 2, 3]), None);
        assert_eq!(uuid_text("{0B8F7F8E-1111-4222-8333-444455556666}").as_deref(), Some("0b8f7f8e-1111-4222-8333-444455556666"));
        assert_eq!(uuid_text("not-a-uuid"), None);
    }

    #[test]
    fn names_in_a_filter_are_escaped() {
        assert_eq!(ldap_escape("*)(uid=*"), "\\2a\\29\\28uid=\\2a");
        assert_eq!(ldap_escape("a\\b\0"), "a\\5cb\\00");
    }

    #[test]
    fn typed_names_name_the_directory_by_domain_or_prefix() {
        let mut c = config(Profile::Ad);
        c.name = "corp".into();
        assert_eq!(directory_login("CORP\\alice", &c), Some("alice"));
        assert_eq!(directory_login("AD+corp:alice", &c), Some("alice"));
        assert_eq!(directory_login("ad+CORP:alice", &c), Some("alice"));
        assert_eq!(directory_login("other\\alice", &c), None);
        assert_eq!(directory_login("local:alice", &c), None);
        assert_eq!(directory_login("alice", &c), None);
        assert_eq!(rdn_value("cn=Ops Team,ou=groups,dc=example,dc=org"), "Ops Team");
    }

    pub(crate) fn config(profile: Profile) -> LdapConfig {
        let d = LdapConfig::defaults(profile);
        LdapConfig {
            url: "ldaps://127.0.0.1:636".into(),
            starttls: false,
            ca_file: None,
            profile,
            name: "dir".into(),
            bind_dn: "cn=reader,dc=example,dc=org".into(),
            bind_password_file: None,
            bind_password_env: None,
            user_base: "ou=people,dc=example,dc=org".into(),
            user_filter: d.user_filter.into(),
            login_attribute: d.login_attribute.into(),
            id_attribute: d.id_attribute.into(),
            name_attribute: d.name_attribute.into(),
            full_name_attribute: d.full_name_attribute.into(),
            mail_attribute: "mail".into(),
            group_base: None,
            group_filter: d.group_filter.into(),
            disabled_filter: d.disabled_filter.map(str::to_owned),
            timeout: Duration::from_secs(5),
        }
    }
}
