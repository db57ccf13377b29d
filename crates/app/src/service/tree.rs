//! The `\VED` tree: `Config/*` over folders and local
//! identities, and `Permissions/Object/…` over folders' explicit entries.
//! Knows nothing of HTTP: a refusal is a [`TreeError`], which
//! `http::respond` turns into the product's answer (HTTP 200 with a
//! `Result` for `Config`, an HTTP status for `Permissions`).
//!
//! Who sees what: the roots (`\VED`, `\VED\Policy`, `\VED\Identity`) and
//! the local identities are visible to every caller the scope admits (the
//! Identity calls show the same identities to the same callers); a folder
//! is visible to a Master Admin and to whoever holds View on it (granted
//! there or above; Create implies View). A folder the caller may not see
//! is answered as if it did not exist (`Result` 400), so that existence
//! does not leak; an object the caller sees but may not change is
//! `Result` 7.

use strongroom_core::grant::AccessContext;
use strongroom_core::identity::{Group, IdentityRef, LOCAL_PREFIX, User, UserId};
use strongroom_core::tree::{
    self, Dn, IDENTITY_DN, IDENTITY_GUID, ObjectGuid, POLICY_DN, POLICY_GUID, VED_DN, VED_GUID, class, pattern_matches, result,
};
use strongroom_core::vault::{FolderPath, Permissions, Rights};
use strongroom_store::{FolderObject, Holder, RightsChange, StoreError};

use super::Origin;
use crate::App;
use crate::admin::{Actor, Admin, AdminError};
use crate::service::identity::{Found, resolve};

/// Why a tree call did not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum TreeError {
    /// `Config/*`: answered HTTP 200 with this `Result` code and text.
    #[error("result {0}: {1}")]
    Result(i32, String),
    /// `Permissions/*`: the request is wrong, or names no principal.
    #[error("{0}")]
    BadRequest(String),
    /// `Permissions/*`: the caller lacks ManagePermissions.
    #[error("{0}")]
    Forbidden(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Conflict(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<AdminError> for TreeError {
    fn from(e: AdminError) -> Self {
        match e {
            AdminError::Store(s) => TreeError::Store(s),
            // Bad input is the caller's, never a 500.
            AdminError::Invalid(why) => TreeError::BadRequest(why),
            // A Master Admin deleting their own user: refused like any act they may not do.
            AdminError::OwnAccount(why) => TreeError::Result(result::INSUFFICIENT_PRIVILEGES, why),
            other => TreeError::Store(StoreError::other(other.to_string())),
        }
    }
}

fn refuse<T>(code: i32, text: impl Into<String>) -> Result<T, TreeError> {
    Err(TreeError::Result(code, text.into()))
}

fn absent<T>() -> Result<T, TreeError> {
    refuse(result::OBJECT_DOES_NOT_EXIST, "Object does not exist.")
}

/// What an object of the tree is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    Root,
    IdentityRoot,
    /// A folder (`\VED\Policy` and any folder under `\VED`).
    Folder(FolderPath),
    User(User),
    Group(Group),
}

/// An object of the tree as `Config` shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    pub dn: String,
    pub guid: ObjectGuid,
    pub class: &'static str,
    /// The object's `Revision`: when it was created (Unix seconds; 0 for a root).
    pub revision: i64,
    pub kind: Kind,
}

impl Node {
    pub fn name(&self) -> &str {
        if self.dn == VED_DN { "VED" } else { tree::name_of(&self.dn) }
    }

    pub fn parent(&self) -> String {
        tree::parent_of(&self.dn).unwrap_or_default()
    }

    fn root(dn: &str, guid: &str, class: &'static str, kind: Kind) -> Node {
        Node { dn: dn.to_owned(), guid: ObjectGuid::from_stored(guid.to_owned()), class, revision: 0, kind }
    }

    fn folder(f: FolderObject) -> Node {
        let class = if f.path.key() == "\\ved" { class::TOP } else { class::POLICY };
        Node { dn: f.path.as_str().to_owned(), guid: f.guid, class, revision: f.created_at.secs(), kind: Kind::Folder(f.path) }
    }

    fn user(u: User) -> Node {
        Node {
            dn: format!("{IDENTITY_DN}\\{}", u.name),
            guid: ObjectGuid::from_stored(u.id.as_str().to_owned()),
            class: class::USER,
            revision: u.created_at.secs(),
            kind: Kind::User(u),
        }
    }

    fn group(g: Group) -> Node {
        Node {
            dn: format!("{IDENTITY_DN}\\{}", g.name),
            guid: ObjectGuid::from_stored(g.id.as_str().to_owned()),
            class: class::GROUP,
            revision: g.created_at.secs(),
            kind: Kind::Group(g),
        }
    }
}

/// A local user: one `\VED\Identity` holds (not a directory's or a machine's).
fn local_user(u: &User) -> bool {
    u.id.prefix() == LOCAL_PREFIX && !u.id.is_machine()
}

fn local_group(g: &Group) -> bool {
    g.prefix() == LOCAL_PREFIX
}

/// What the caller may do where: their rights read now (one read).
pub async fn caller_rights(app: &App, ctx: &AccessContext) -> Result<Permissions, StoreError> {
    let grants = if ctx.master_admin { Vec::new() } else { app.store.rights_of(ctx.grant.user_id.clone()).await? };
    Ok(Permissions { master_admin: ctx.master_admin, grants })
}

/// The rights `perms` holds on `f`, with what they imply.
fn held(perms: &Permissions, f: &FolderPath) -> Rights {
    perms.effective(f).implied()
}

fn visible(perms: &Permissions, node: &Node) -> bool {
    match &node.kind {
        Kind::Folder(f) => node.guid.as_str() == POLICY_GUID || node.guid.as_str() == VED_GUID || held(perms, f).contains(Rights::VIEW),
        _ => true,
    }
}

/// The object `dn` names, if it exists (whoever may see it).
pub async fn node_by_dn(app: &App, dn: &Dn) -> Result<Option<Node>, StoreError> {
    Ok(match dn {
        Dn::Root => Some(match app.store.folder_object("\\ved".into()).await? {
            Some(f) => Node::folder(f),
            None => Node::root(VED_DN, VED_GUID, class::TOP, Kind::Folder(FolderPath::ved())),
        }),
        Dn::IdentityRoot => Some(Node::root(IDENTITY_DN, IDENTITY_GUID, class::IDENTITY_ROOT, Kind::IdentityRoot)),
        Dn::Identity(name) => identity_by_name(app, name).await?,
        Dn::Folder(f) => match app.store.folder_object(f.key().to_owned()).await? {
            Some(o) => Some(Node::folder(o)),
            None if f.key() == "\\ved\\policy" => Some(Node::root(POLICY_DN, POLICY_GUID, class::POLICY, Kind::Folder(f.clone()))),
            None => None,
        },
    })
}

async fn identity_by_name(app: &App, name: &str) -> Result<Option<Node>, StoreError> {
    if let Some((u, _)) = app.store.user_by_name(name.to_owned()).await?
        && local_user(&u)
    {
        return Ok(Some(Node::user(u)));
    }
    Ok(app.store.group_by_name(name.to_owned()).await?.filter(local_group).map(Node::group))
}

/// The object of GUID `guid`, if it exists.
pub async fn node_by_guid(app: &App, guid: &ObjectGuid) -> Result<Option<Node>, StoreError> {
    match guid.as_str() {
        VED_GUID => return node_by_dn(app, &Dn::Root).await,
        POLICY_GUID => return node_by_dn(app, &Dn::Folder(FolderPath::policy_root())).await,
        IDENTITY_GUID => return node_by_dn(app, &Dn::IdentityRoot).await,
        _ => {}
    }
    if let Some(f) = app.store.folder_object_by_guid(guid.clone()).await? {
        return Ok(Some(Node::folder(f)));
    }
    if let Some(u) = app.store.user_by_id(UserId::from_stored(guid.as_str().to_owned())).await?
        && local_user(&u)
    {
        return Ok(Some(Node::user(u)));
    }
    Ok(app
        .store
        .group_by_id(strongroom_core::identity::GroupId::from_stored(guid.as_str().to_owned()))
        .await?
        .filter(local_group)
        .map(Node::group))
}

/// Reads a DN, or answers `Result` 405 (a name the tree cannot hold) / 400.
fn parse_dn(dn: &str) -> Result<Dn, TreeError> {
    match Dn::parse(dn) {
        Ok(d) => Ok(d),
        Err(tree::DnError::NotUnderVed) => absent(),
        Err(e) => refuse(result::OBJECT_INVALID_NAME, format!("{e}.")),
    }
}

/// The object a DN or GUID names, if the caller may see it (else `Result` 400).
pub async fn find(app: &App, perms: &Permissions, dn: Option<&str>, guid: Option<&str>) -> Result<Node, TreeError> {
    let node = match (dn, guid) {
        (Some(d), _) => node_by_dn(app, &parse_dn(d)?).await?,
        (None, Some(g)) => match ObjectGuid::parse(g) {
            Some(g) => node_by_guid(app, &g).await?,
            None => return absent(),
        },
        (None, None) => return refuse(result::OBJECT_DOES_NOT_EXIST, "ObjectDN or ObjectGUID is required."),
    };
    match node {
        Some(n) if visible(perms, &n) => Ok(with_certificate_class(app, n).await?),
        _ => absent(),
    }
}

/// A folder that is a certificate object or an issuing CA shows that class.
async fn with_certificate_class(app: &App, mut n: Node) -> Result<Node, StoreError> {
    if let Kind::Folder(f) = &n.kind
        && f.key().starts_with("\\ved\\policy\\")
    {
        if let Some(r) = app.store.certificate(f.key().to_owned()).await? {
            // One made with Config/Create shows the class it was made as.
            n.class = if r.template.is_empty() { strongroom_core::cert::CERTIFICATE_CLASS } else { strongroom_core::cert::CREATED_CLASS };
        } else if f.key().starts_with(&format!("{}\\", strongroom_core::cert::CA_FOLDER.to_lowercase()))
            && app.store.cert_authorities().await?.iter().any(|c| c.dn.eq_ignore_ascii_case(f.as_str()))
        {
            n.class = strongroom_core::cert::CA_CLASS;
        }
    }
    Ok(n)
}

/// The handle whose acts name the caller, and whose changes of
/// permissions are re-checked against what the caller holds at the write.
pub fn admin_for(app: &App, ctx: &AccessContext, origin: &Origin) -> Admin {
    Admin {
        store: app.store.clone(),
        clock: app.clock.clone(),
        rng: app.rng.clone(),
        keyring: app.keyring.clone(),
        actor: Actor::cli(),
        on_behalf_of: None,
    }
    .acting_as(Actor { identity: ctx.grant.user_id.identity(), source: origin.addr.clone(), request_id: origin.request_id.clone() })
    .on_behalf_of(ctx.grant.user_id.clone())
}

/// The certificate calls' caller for a `Config` call (its rights read by [`caller_rights`]).
fn caller_of(ctx: &AccessContext, perms: Permissions, origin: &Origin) -> crate::service::caller::Caller {
    crate::service::caller::Caller {
        user_id: ctx.grant.user_id.clone(),
        grant_id: ctx.grant.id.clone(),
        perms,
        client_id: ctx.grant.client_id.clone(),
        origin: origin.clone(),
        current_keys: Vec::new(),
        entry: None,
    }
}

/// `Config/Write`: `Disabled` of a certificate object (VenafiPS's Disable), as
/// `PUT Certificates/{guid}` writes it; anything else is `Result` 5, nothing written.
pub async fn write(
    app: &App,
    ctx: &AccessContext,
    origin: &Origin,
    dn: &str,
    attributes: &[(String, Vec<String>)],
) -> Result<(), TreeError> {
    use crate::service::certificates::{self as certs, CertError};
    let perms = caller_rights(app, ctx).await?;
    let node = find(app, &perms, Some(dn), None).await?;
    let caller = caller_of(ctx, perms, origin);
    let r = match &node.kind {
        Kind::Folder(f) => app.store.certificate(f.key().to_owned()).await?,
        _ => None,
    };
    let Some(r) = r else {
        return refuse(
            NOT_IMPLEMENTED,
            format!("Config/Write writes Disabled of certificate objects only; {} is a {}.", node.dn, node.class),
        );
    };
    let mut disabled = None;
    for (name, values) in attributes {
        if !name.trim().eq_ignore_ascii_case("Disabled") {
            return refuse(NOT_IMPLEMENTED, format!("Config/Write writes Disabled of certificate objects only, not {:?}.", name.trim()));
        }
        disabled = Some(match values.first().map(|v| v.trim().to_ascii_lowercase()).as_deref() {
            Some("1") | Some("true") => true,
            Some("0") | Some("false") | None => false,
            Some(v) => return refuse(INVALID_ARGUMENT, format!("Disabled is \"0\" or \"1\", not {v:?}.")),
        });
    }
    let Some(disabled) = disabled else { return Ok(()) };
    match certs::set_disabled(app, &caller, &r, disabled).await {
        Ok(()) => Ok(()),
        Err(CertError::Denied(why)) => refuse(result::INSUFFICIENT_PRIVILEGES, why),
        Err(CertError::NoCertificate(_)) => absent(),
        Err(CertError::Store(e)) => Err(TreeError::Store(e)),
        Err(CertError::Invalid(m) | CertError::Unsupported(m) | CertError::NoPolicy(m) | CertError::NoKey(m)) => {
            refuse(INVALID_ARGUMENT, m)
        }
        Err(e @ (CertError::Pending { .. } | CertError::Failed { .. } | CertError::Busy { .. })) => refuse(INVALID_ARGUMENT, e.to_string()),
        Err(e @ CertError::Internal(_)) => Err(TreeError::Store(StoreError::other(e.to_string()))),
    }
}

/// `Config` results `InvalidArgument` and `NotImplemented`.
const INVALID_ARGUMENT: i32 = strongroom_core::cert::RESULT_INVALID_ARGUMENT;
const NOT_IMPLEMENTED: i32 = 5;

/// `Config/Create` without attributes.
pub async fn create(app: &App, ctx: &AccessContext, origin: &Origin, dn: &str, class_name: &str) -> Result<Node, TreeError> {
    create_with(app, ctx, origin, dn, class_name, &[]).await
}

/// `Config/Create` with its `NameAttributeList` (`(Name, Values)`), which only a certificate object
/// (class `X509 Certificate`) keeps; the other classes read and ignore it.
pub async fn create_with(
    app: &App,
    ctx: &AccessContext,
    origin: &Origin,
    dn: &str,
    class_name: &str,
    attributes: &[(String, Vec<String>)],
) -> Result<Node, TreeError> {
    let perms = caller_rights(app, ctx).await?;
    let dn = parse_dn(dn)?;
    if strongroom_core::cert::is_certificate_class(class_name) {
        let Dn::Folder(path) = &dn else {
            return refuse(result::OBJECT_INVALID_CONTAINMENT, "A certificate is created in a policy folder under \\VED\\Policy.");
        };
        let r = match crate::service::certificates::create_object(app, &caller_of(ctx, perms, origin), path, attributes).await? {
            Ok(r) => r,
            Err(e) => return Err(TreeError::Result(e.code, e.text)),
        };
        return Ok(Node {
            dn: r.path.as_str().to_owned(),
            guid: r.guid,
            class: strongroom_core::cert::CREATED_CLASS,
            revision: r.created_at.secs(),
            kind: Kind::Folder(r.path),
        });
    }
    let admin = admin_for(app, ctx, origin);
    if class_name.eq_ignore_ascii_case(class::POLICY) {
        let Dn::Folder(f) = &dn else {
            return match dn {
                Dn::Root | Dn::IdentityRoot => refuse(result::OBJECT_ALREADY_EXISTS, "Object already exists."),
                _ => refuse(result::OBJECT_INVALID_CONTAINMENT, "A Policy object cannot be created under \\VED\\Identity."),
            };
        };
        let parent_dn = dn.parent().unwrap_or_else(|| VED_DN.to_owned());
        let parent = match node_by_dn(app, &parse_dn(&parent_dn)?).await? {
            Some(p) if visible(&perms, &p) => p,
            _ => return refuse(result::OBJECT_DOES_NOT_EXIST, format!("The parent {parent_dn} does not exist.")),
        };
        let Kind::Folder(pf) = &parent.kind else {
            return refuse(result::OBJECT_INVALID_CONTAINMENT, "A Policy object is created under a folder.");
        };
        if let Some(existing) = node_by_dn(app, &dn).await? {
            return if visible(&perms, &existing) {
                refuse(result::OBJECT_ALREADY_EXISTS, "Object already exists.")
            } else {
                refuse(result::INSUFFICIENT_PRIVILEGES, "Insufficient privileges to create an object here.")
            };
        }
        if !held(&perms, pf).contains(Rights::CREATE) {
            return refuse(result::INSUFFICIENT_PRIVILEGES, format!("Creating under {parent_dn} needs the Create permission."));
        }
        return match admin.create_folder_object(f).await {
            Ok(o) => Ok(Node::folder(o)),
            Err(AdminError::Exists(_)) => refuse(result::OBJECT_ALREADY_EXISTS, "Object already exists."),
            // A name a new folder may not have (`.`, `..`, invisible or direction-changing characters).
            Err(AdminError::Invalid(why)) => refuse(result::OBJECT_INVALID_NAME, why),
            Err(e) => Err(e.into()),
        };
    }
    let is_user = class_name.eq_ignore_ascii_case(class::USER);
    if is_user || class_name.eq_ignore_ascii_case(class::GROUP) {
        let Dn::Identity(name) = &dn else {
            return refuse(result::OBJECT_INVALID_CONTAINMENT, "Users and groups are created directly under \\VED\\Identity.");
        };
        if !ctx.master_admin {
            return refuse(result::INSUFFICIENT_PRIVILEGES, "Creating users and groups needs a Master Admin.");
        }
        let made = if is_user {
            admin.create_user_without_password(name).await.map(Node::user)
        } else {
            admin.create_group(name).await.map(Node::group)
        };
        return match made {
            Ok(n) => Ok(n),
            Err(AdminError::Exists(_)) => refuse(result::OBJECT_ALREADY_EXISTS, "Object already exists."),
            Err(AdminError::Invalid(why)) => refuse(result::OBJECT_INVALID_NAME, why),
            Err(e) => Err(e.into()),
        };
    }
    refuse(result::OBJECT_INVALID_CLASS, format!("Class {class_name:?} cannot be created here: Policy, User, Group or X509 Certificate."))
}

/// `Config/Delete`. A folder with folders below it, or owning vault
/// entries, is refused (402) unless `recursive`; recursive deletion needs
/// Delete on the folder (which covers everything below it) and deletes the
/// entries left without an owner, each with its event.
pub async fn delete(app: &App, ctx: &AccessContext, origin: &Origin, dn: &str, recursive: bool) -> Result<(), TreeError> {
    let perms = caller_rights(app, ctx).await?;
    let node = find(app, &perms, Some(dn), None).await?;
    let admin = admin_for(app, ctx, origin);
    match &node.kind {
        Kind::Root | Kind::IdentityRoot => refuse(result::INSUFFICIENT_PRIVILEGES, "The roots of the tree cannot be deleted."),
        Kind::Folder(_) if node.guid.as_str() == POLICY_GUID || node.guid.as_str() == VED_GUID => {
            refuse(result::INSUFFICIENT_PRIVILEGES, "The roots of the tree cannot be deleted.")
        }
        Kind::Folder(f) => {
            if !held(&perms, f).contains(Rights::DELETE) {
                return refuse(result::INSUFFICIENT_PRIVILEGES, "Deleting this object needs the Delete permission.");
            }
            match admin.delete_folder(f.as_str(), recursive).await {
                Ok(_) => Ok(()),
                Err(AdminError::NotFound(_)) => absent(),
                Err(AdminError::Invalid(why)) => refuse(result::OBJECT_HAS_CHILDREN, why.replace("--recursive", "Recursive")),
                Err(e) => Err(e.into()),
            }
        }
        Kind::User(_) | Kind::Group(_) if !ctx.master_admin => {
            refuse(result::INSUFFICIENT_PRIVILEGES, "Deleting users and groups needs a Master Admin.")
        }
        Kind::User(u) => match admin.delete_user(&u.name).await {
            Ok(_) => Ok(()),
            Err(AdminError::NotFound(_)) => absent(),
            Err(e) => Err(e.into()),
        },
        Kind::Group(g) => match admin.delete_group(&g.name).await {
            Ok(_) => Ok(()),
            Err(AdminError::NotFound(_)) => absent(),
            Err(e) => Err(e.into()),
        },
    }
}

/// `Config/RenameObject`: a folder renamed or moved, with everything below
/// it. Needs Rename on it and Create on the new parent (or a Master Admin).
pub async fn rename(app: &App, ctx: &AccessContext, origin: &Origin, dn: &str, new_dn: &str) -> Result<(), TreeError> {
    let perms = caller_rights(app, ctx).await?;
    let node = find(app, &perms, Some(dn), None).await?;
    let Kind::Folder(from) = &node.kind else {
        return refuse(result::OBJECT_INVALID_CLASS, "Only folders can be renamed or moved here.");
    };
    if node.guid.as_str() == POLICY_GUID || node.guid.as_str() == VED_GUID {
        return refuse(result::INSUFFICIENT_PRIVILEGES, "The roots of the tree cannot be renamed.");
    }
    let Dn::Folder(to) = parse_dn(new_dn)? else {
        return refuse(result::OBJECT_INVALID_CONTAINMENT, "A folder moves only to a place for folders.");
    };
    let parent_dn = tree::parent_of(to.as_str()).unwrap_or_else(|| VED_DN.to_owned());
    let parent = match node_by_dn(app, &parse_dn(&parent_dn)?).await? {
        Some(p) if visible(&perms, &p) => p,
        _ => return refuse(result::OBJECT_DOES_NOT_EXIST, format!("The new parent {parent_dn} does not exist.")),
    };
    let Kind::Folder(pf) = &parent.kind else {
        return refuse(result::OBJECT_INVALID_CONTAINMENT, "A folder moves only under a folder.");
    };
    if !held(&perms, from).contains(Rights::RENAME) || !held(&perms, pf).contains(Rights::CREATE) {
        return refuse(result::INSUFFICIENT_PRIVILEGES, "Renaming needs Rename on the folder and Create on the new parent.");
    }
    // The roots have no row until a folder is made under them.
    if tree::well_known_guid(pf.key()).is_some() && app.store.folder_object(pf.key().to_owned()).await?.is_none() {
        match admin_for(app, ctx, origin).create_folder(pf.as_str()).await {
            Ok(_) | Err(AdminError::Exists(_)) => {}
            Err(e) => return Err(e.into()),
        }
    }
    match admin_for(app, ctx, origin).rename_folder(from, &to).await {
        Ok(_) => Ok(()),
        Err(AdminError::NotFound(_)) => absent(),
        Err(AdminError::Exists(_)) => refuse(result::OBJECT_ALREADY_EXISTS, "The new DN is taken (or lies inside the folder itself)."),
        Err(e) => Err(e.into()),
    }
}

/// What `Enumerate` and `FindObjectsOfClass` list below an object.
#[derive(Debug)]
pub struct Listing<'a> {
    pub recursive: bool,
    pub pattern: &'a str,
    /// Class names to keep (any case); empty keeps all.
    pub classes: &'a [String],
}

/// The objects below `base` the caller may see, by DN.
pub async fn children(app: &App, perms: &Permissions, base: &Node, l: &Listing<'_>) -> Result<Vec<Node>, TreeError> {
    let mut out: Vec<Node> = Vec::new();
    let at_root = base.guid.as_str() == VED_GUID;
    if at_root {
        out.push(Node::root(IDENTITY_DN, IDENTITY_GUID, class::IDENTITY_ROOT, Kind::IdentityRoot));
    }
    if let Kind::Folder(f) = &base.kind {
        let prefix = format!("{}\\", f.key());
        let depth = f.lineage().len() + 1;
        let mut policy_row = false;
        for o in app.store.folder_objects().await? {
            policy_row |= o.path.key() == "\\ved\\policy";
            if o.path.key().starts_with(&prefix) && (l.recursive || o.path.lineage().len() == depth) {
                out.push(Node::folder(o));
            }
        }
        if at_root && !policy_row {
            out.push(Node::root(POLICY_DN, POLICY_GUID, class::POLICY, Kind::Folder(FolderPath::policy_root())));
        }
    }
    if matches!(base.kind, Kind::IdentityRoot) || (at_root && l.recursive) {
        out.extend(app.store.list_users().await?.into_iter().filter(local_user).map(Node::user));
        out.extend(app.store.list_groups().await?.into_iter().map(|(g, _)| g).filter(local_group).map(Node::group));
    }
    out.retain(|n| {
        visible(perms, n)
            && pattern_matches(l.pattern, n.name())
            && (l.classes.is_empty() || l.classes.iter().any(|c| c.eq_ignore_ascii_case(n.class)))
    });
    out.sort_by_key(|n| n.dn.to_lowercase());
    Ok(out)
}

// ------------------------------------------------------------------ permissions

/// A principal as the path names it: `local/{guid}`, or a directory's
/// `AD/corp/{guid}` / `LDAP/corp/{guid}` (paths arrive lower-cased: the
/// directory's prefix is matched in any case against the configured one).
pub async fn principal(app: &App, ptype: &str, pname: Option<&str>, id: &str) -> Result<(Holder, String, Option<User>), TreeError> {
    let unknown = || TreeError::BadRequest("Unable to verify principal: no such identity.".into());
    let spelled = match pname {
        None if ptype.eq_ignore_ascii_case(LOCAL_PREFIX) => format!("{LOCAL_PREFIX}:{id}"),
        Some(p) if ["AD", "LDAP"].iter().any(|k| k.eq_ignore_ascii_case(ptype)) => {
            let given = format!("{}+{p}", ptype.to_uppercase());
            let prefix = app.directory.as_ref().map(|d| d.config.prefix()).filter(|c| c.eq_ignore_ascii_case(&given)).unwrap_or(given);
            format!("{prefix}:{id}")
        }
        _ => return Err(unknown()),
    };
    let r = IdentityRef::parse(&spelled).ok_or_else(unknown)?;
    if !matches!(r, IdentityRef::Universal(_) | IdentityRef::DirectoryUniversal(..)) {
        return Err(TreeError::BadRequest("Unable to verify principal: name it by its universal id ({GUID}).".into()));
    }
    Ok(match resolve(app, &r).await?.ok_or_else(unknown)? {
        Found::User(u) => (Holder::User(u.id.clone()), u.name.clone(), Some(u)),
        Found::Group(g) => (Holder::Group(g.id.clone()), g.name.clone(), None),
    })
}

/// A Permissions call's refusal when the caller may not manage the folder.
const NEEDS_MANAGE: &str = "Managing permissions on this object needs ManagePermissions on it, or a Master Admin.";
/// A Permissions call's answer when the object is not there.
const NO_OBJECT: &str = "Object does not exist.";

/// The folder a Permissions call is about, which the caller must manage.
pub async fn managed_folder(app: &App, ctx: &AccessContext, guid: &str) -> Result<FolderPath, TreeError> {
    let g = ObjectGuid::parse(guid).ok_or_else(|| TreeError::BadRequest("The object GUID is not a GUID.".into()))?;
    let perms = caller_rights(app, ctx).await?;
    let node = node_by_guid(app, &g).await?.ok_or_else(|| TreeError::BadRequest(NO_OBJECT.into()))?;
    let Kind::Folder(f) = node.kind else {
        return Err(TreeError::BadRequest("Permissions are kept on folders only (\\VED and \\VED\\Policy and below).".into()));
    };
    if !held(&perms, &f).contains(Rights::MANAGE_PERMISSIONS) {
        return Err(TreeError::Forbidden(NEEDS_MANAGE.into()));
    }
    Ok(f)
}

/// `GET Permissions/Object/{guid}`: the principals with an explicit entry.
pub async fn principals(app: &App, ctx: &AccessContext, guid: &str) -> Result<Vec<String>, TreeError> {
    let f = managed_folder(app, ctx, guid).await?;
    let mut out = Vec::new();
    for (holder, _) in app.store.explicit_rights(f.key().to_owned()).await? {
        out.push(match holder {
            Holder::User(u) => u.identity(),
            Holder::Group(g) => match app.store.group_by_id(g.clone()).await? {
                Some(found) => found.identity(),
                None => g.identity(),
            },
        });
    }
    Ok(out)
}

/// A principal's explicit entry on `f` and what it holds there by inheritance.
#[derive(Debug)]
pub struct Held {
    pub explicit: Option<Rights>,
    pub implicit: Rights,
    pub master_admin: bool,
}

pub async fn held_by(app: &App, f: &FolderPath, holder: &Holder, user: Option<&User>) -> Result<Held, TreeError> {
    let explicit = app.store.explicit_rights(f.key().to_owned()).await?.into_iter().find(|(h, _)| h == holder).map(|(_, r)| r);
    let mut grants = match holder {
        Holder::User(u) => app.store.rights_of(u.clone()).await?,
        Holder::Group(g) => app.store.group_rights_of(g.clone()).await?,
    };
    // The entry on this very folder is explicit, not implicit (one copy of it: a group's identical entry still counts).
    if let Some(e) = explicit
        && let Some(i) = grants.iter().position(|(k, r)| k == f.key() && *r == e)
    {
        grants.remove(i);
    }
    let implicit = Permissions { master_admin: false, grants }.effective(f);
    Ok(Held { explicit, implicit, master_admin: user.is_some_and(|u| u.master_admin) })
}

/// Changes an explicit entry (POST, PUT, DELETE): one conditional write.
pub async fn change(
    app: &App,
    ctx: &AccessContext,
    origin: &Origin,
    f: &FolderPath,
    holder: Holder,
    who: &str,
    change: RightsChange,
) -> Result<(), TreeError> {
    let admin = admin_for(app, ctx, origin);
    // The roots have no row until a folder is made under them: make theirs first.
    if tree::well_known_guid(f.key()).is_some() && app.store.folder_object(f.key().to_owned()).await?.is_none() {
        match admin.create_folder(f.as_str()).await {
            Ok(_) | Err(AdminError::Exists(_)) => {}
            Err(e) => return Err(e.into()),
        }
    }
    match admin.change_permission(f, holder, who, change).await {
        Ok(true) => return Ok(()),
        Ok(false) => {}
        // The caller lost ManagePermissions (or was disabled) after the pre-check: the same answer it gives.
        Err(AdminError::Forbidden(_)) => return Err(TreeError::Forbidden(NEEDS_MANAGE.into())),
        // The folder was deleted meanwhile: as if it had been gone at the pre-check.
        Err(AdminError::NotFound(_)) => return Err(TreeError::BadRequest(NO_OBJECT.into())),
        Err(e) => return Err(e.into()),
    }
    Err(match change {
        RightsChange::Create(_) => TreeError::Conflict("Permission already exists".into()),
        RightsChange::Replace(_) | RightsChange::Set(_) => TreeError::NotFound("Permission does not exist so cannot be updated".into()),
        RightsChange::Delete => TreeError::NotFound("Permission does not exist".into()),
    })
}
