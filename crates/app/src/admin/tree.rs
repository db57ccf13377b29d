//! The administrative acts of the `\VED` tree: a folder created
//! as `Config/Create` creates it (under a parent that exists), a local user
//! created without a usable password (`Config/Create` of class `User`;
//! `Identity/SetPassword` sets one later), and one change of an explicit
//! permission entry (`Permissions/Object/…` POST, PUT, DELETE), each one
//! conditional write with its event naming the caller.

use strongroom_core::event::EventKind;
use strongroom_core::identity::{User, UserId, valid_user_name};
use strongroom_core::tree::{ObjectGuid, lineage_with_guids, well_known_guid};
use strongroom_core::vault::FolderPath;
use strongroom_store::{FolderObject, Holder, Renamed, RightsChange, RightsOutcome, StoreError};

use super::{Admin, AdminError};

/// What no password verifies against: no PHC string (as a directory user's).
const NO_PASSWORD: &str = "!";

impl Admin {
    /// Creates folder `f` whose parent exists (the roots `\VED` and
    /// `\VED\Policy` always do: their rows are made with it when missing).
    /// `Exists` when the folder is there already.
    pub async fn create_folder_object(&self, f: &FolderPath) -> Result<FolderObject, AdminError> {
        f.check_new().map_err(|e| AdminError::Invalid(e.to_string()))?;
        let lineage: Vec<(FolderPath, ObjectGuid)> = lineage_with_guids(f, &*self.rng)
            .into_iter()
            .enumerate()
            .filter(|(i, (p, _))| well_known_guid(p.key()).is_some() || *i + 1 == f.lineage().len())
            .map(|(_, x)| x)
            .collect();
        let event = self.event(EventKind::FolderCreated).object(f.as_str());
        if !self.store.create_folders(lineage, event).await? {
            return Err(AdminError::Exists(format!("folder {f}")));
        }
        self.store.folder_object(f.key().to_owned()).await?.ok_or_else(|| AdminError::NotFound(format!("folder {f}")))
    }

    /// Creates a local user who cannot sign in until a password is set
    /// (`Identity/SetPassword`, `admin users passwd`).
    pub async fn create_user_without_password(&self, name: &str) -> Result<User, AdminError> {
        if !valid_user_name(name) {
            return Err(AdminError::Invalid("user names are 1-64 letters, digits or .-_@".into()));
        }
        if self.store.group_by_name(name.to_lowercase()).await?.is_some() {
            return Err(AdminError::Exists(format!("group {name} (users and groups share names)")));
        }
        let user = User {
            id: UserId::generate(&*self.rng),
            name: name.to_owned(),
            disabled: false,
            master_admin: false,
            created_at: self.clock.now(),
            signed_in_at: None,
        };
        let event = self.event(EventKind::UserCreated).object(name).detail("without a password");
        match self.store.create_user(user.clone(), NO_PASSWORD.to_owned(), event).await {
            Ok(()) => Ok(user),
            Err(StoreError::Conflict) => Err(AdminError::Exists(format!("user {name}"))),
            Err(e) => Err(e.into()),
        }
    }

    /// Renames or moves folder `from` to `to` (whose parent the caller
    /// checked), everything below it with it, in one transaction: a
    /// `folder.created` event on `to` whose detail says from where.
    pub async fn rename_folder(&self, from: &FolderPath, to: &FolderPath) -> Result<u64, AdminError> {
        to.check_new().map_err(|e| AdminError::Invalid(e.to_string()))?;
        let event = self.event(EventKind::FolderCreated).object(to.as_str());
        match self.store.rename_folder(from.clone(), to.clone(), event).await? {
            Renamed::Moved(n) => Ok(n),
            Renamed::NotFound => Err(AdminError::NotFound(format!("folder {from}"))),
            Renamed::Exists => Err(AdminError::Exists(format!("folder {to}"))),
        }
    }

    /// Changes `holder`'s explicit entry on folder `f` (`who` names the
    /// holder in the event): create only where there is none, replace or
    /// delete only where there is one, in one conditional write. Whether it
    /// changed anything (`false`: nothing written, no event). Made for a
    /// delegated caller ([`Admin::on_behalf_of`]), it is re-checked in the
    /// write's transaction (`Forbidden` when they lost the right); a folder
    /// gone by then is `NotFound`.
    pub async fn change_permission(&self, f: &FolderPath, holder: Holder, who: &str, change: RightsChange) -> Result<bool, AdminError> {
        let kind = match holder {
            Holder::User(_) => "user",
            Holder::Group(_) => "group",
        };
        let event = self.event(EventKind::RightsChanged).object(f.as_str()).detail(format!("{kind}={who} {change}"));
        match self.store.change_rights(f.clone(), holder, change, self.on_behalf_of.clone(), event).await? {
            RightsOutcome::Changed => Ok(true),
            RightsOutcome::Unchanged => Ok(false),
            RightsOutcome::Denied => Err(AdminError::Forbidden(format!("managing permissions on {f} needs ManagePermissions there"))),
            RightsOutcome::NoFolder => Err(AdminError::NotFound(format!("folder {f}"))),
        }
    }
}
