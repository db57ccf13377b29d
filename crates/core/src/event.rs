//! The event log: what happened, to what, by whom; never a value or a token.
//!
//! Events are hash-chained: each event's hash covers its fields and the hash
//! of the event before it, so an edited or deleted row breaks the chain.

use sha2::{Digest, Sha256};
use std::fmt;

use crate::time::UnixTime;

/// The table of every kind of event, one row each: the variant (with its
/// doc), its label ([`EventKind::as_str`]) and its severity
/// ([`EventKind::severity`]). The rows are in the order of
/// [`EventKind::ALL`], which gives each kind its [`EventKind::code`]: a new
/// kind is a new row at the end, and no row ever moves.
macro_rules! event_kinds {
    ($($(#[$doc:meta])* $kind:ident => $label:literal, $severity:ident;)*) => {
        /// Every kind of event. The string forms are stable: they are stored and
        /// filtered on.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum EventKind {
            $($(#[$doc])* $kind,)*
        }

        impl EventKind {
            /// Every kind, in the order of their codes.
            pub const ALL: &'static [EventKind] = &[$(EventKind::$kind),*];

            pub fn as_str(self) -> &'static str {
                match self {
                    $(EventKind::$kind => $label,)*
                }
            }

            /// The product's severity of events of this kind (`GET /vedsdk/Log`):
            /// a refused attack `Alert`, a refused sign-in or replay `Warning`, an
            /// administrative change `Notice`, the rest `Info`.
            pub fn severity(self) -> Severity {
                match self {
                    $(EventKind::$kind => Severity::$severity,)*
                }
            }
        }
    };
}

event_kinds! {
    UserCreated => "user.created", Notice;
    UserDisabled => "user.disabled", Notice;
    UserEnabled => "user.enabled", Notice;
    UserPasswordChanged => "user.password_changed", Notice;
    /// An administrator cleared the user's guessing locks.
    UserUnlocked => "user.unlocked", Notice;
    /// Every live grant of a user was revoked at once (`admin grants revoke --user`).
    UserGrantsRevoked => "user.grants_revoked", Notice;
    IntegrationCreated => "integration.created", Notice;
    IntegrationUpdated => "integration.updated", Notice;
    DeviceAuthorizationStarted => "device.started", Info;
    DeviceApproved => "device.approved", Info;
    DeviceDenied => "device.denied", Info;
    DeviceCodeReplayed => "device.code_replayed", Warning;
    TokenIssued => "token.issued", Info;
    TokenRefreshed => "token.refreshed", Info;
    RefreshTokenReuse => "token.refresh_reuse", Alert;
    /// A just-rotated refresh token came back while its pair was unused: the pair was replaced.
    RefreshRetried => "token.refresh_retried", Info;
    /// A redeemed device code came back while its grant was untouched: the pair was replaced.
    DeviceCodeReissued => "token.reissued", Info;
    GrantRevoked => "grant.revoked", Notice;
    LoginFailed => "login.failed", Warning;
    UserCodeFailed => "device.user_code_failed", Warning;
    Lockout => "login.lockout", Warning;
    FolderCreated => "folder.created", Notice;
    RightsChanged => "folder.rights_changed", Notice;
    VaultKeyCreated => "vault.key_created", Notice;
    VaultResealed => "vault.resealed", Info;
    VaultAdded => "vault.added", Info;
    VaultAssociated => "vault.associated", Info;
    VaultDissociated => "vault.dissociated", Info;
    VaultOwnerAdded => "vault.owner_added", Info;
    VaultOwnerRemoved => "vault.owner_removed", Info;
    VaultDeleted => "vault.deleted", Info;
    VaultMutated => "vault.mutated", Info;
    /// The store recorded the check value of the master key it was first opened with.
    MasterKeyRecorded => "store.master_key_recorded", Notice;
    /// A client wrote an event of its own (`POST /vedsdk/Log`).
    ClientLog => "client.log", Info;
    /// A user was deleted (their grants ended, their rights removed).
    UserDeleted => "user.deleted", Notice;
    /// An API integration was deleted (its grants ended).
    IntegrationDeleted => "integration.deleted", Notice;
    /// A folder was deleted (with the folders below it, when recursive).
    FolderDeleted => "folder.deleted", Notice;
    /// The oldest events were archived to a file and deleted from the store
    /// (`admin events archive`, or the retention setting).
    EventsArchived => "events.archived", Notice;
    /// A trusted JWT issuer was registered or changed (`admin jwt-issuers`).
    JwtIssuerSaved => "jwt.issuer_saved", Notice;
    JwtIssuerRemoved => "jwt.issuer_removed", Notice;
    /// A JWT or certificate mapping was registered or changed (`admin mappings`).
    MappingSaved => "mapping.saved", Notice;
    MappingRemoved => "mapping.removed", Notice;
    /// A machine identity got its row (first grant, or an administrator named it).
    MachineIdentityAdded => "machine.identity_added", Notice;
    /// A JWT was presented again within its lifetime: refused.
    JwtReplayed => "token.jwt_replayed", Warning;
    /// A local group was created (`admin groups add`).
    GroupCreated => "group.created", Notice;
    /// A group was deleted: its members, rights and places on integrations went with it.
    GroupDeleted => "group.deleted", Notice;
    /// A user joined a group.
    GroupMemberAdded => "group.member_added", Notice;
    /// A user left a group: the group's rights stop for them at once.
    GroupMemberRemoved => "group.member_removed", Notice;
    /// A directory person signed in or refreshed: their row and their
    /// directory groups brought up to date (the detail names the changes).
    DirectorySynced => "user.directory_synced", Info;
    /// A local group was renamed (`Identity/RenameGroup`).
    GroupRenamed => "group.renamed", Notice;
    /// A folder deletion left an entry without an owner: kept as an orphan
    /// (`SecretStore/OrphanLookup`), never deleted with the folder.
    VaultOrphaned => "vault.orphaned", Notice;
    /// Every console session of a user ended (sign-out, or an
    /// administrator's `admin users end-sessions`).
    ConsoleSessionsEnded => "user.console_sessions_ended", Notice;
    /// A person signed in with their password (the surface in `detail`:
    /// approval page, console, password grant, approved applications).
    LoginSucceeded => "login.succeeded", Info;
    /// A credential object was created (`Credentials/Create`).
    CredentialCreated => "credential.created", Notice;
    /// A credential's values were read (`Credentials/Retrieve`): every read is recorded.
    CredentialRetrieved => "credential.retrieved", Info;
    /// A credential's values or details were replaced (`Credentials/Update`).
    CredentialUpdated => "credential.updated", Notice;
    /// A credential object was deleted with its sealed values (`Credentials/Delete`).
    CredentialDeleted => "credential.deleted", Notice;
    /// A user was made a Master Admin, or stopped being one (`detail`: `master_admin=true|false`).
    UserMasterAdminChanged => "user.master_admin_changed", Notice;
    /// An issuing CA was created (`strongroom admin ca create`).
    CaCreated => "certificate.ca_created", Notice;
    /// A folder's certificate policy was set or cleared.
    CertPolicySet => "certificate.policy_set", Notice;
    /// A certificate was requested (`Certificates/Request`, `Renew`).
    CertificateRequested => "certificate.requested", Info;
    /// A certificate was issued (in the request's transaction).
    CertificateIssued => "certificate.issued", Info;
    /// A certificate's private key was handed out (`Certificates/Retrieve` with the key).
    CertificateKeyExported => "certificate.key_exported", Notice;
    /// A certificate was revoked (its serial is on its CA's CRL).
    CertificateRevoked => "certificate.revoked", Notice;
    /// A certificate object was disabled (retired) or enabled.
    CertificateDisabled => "certificate.disabled", Notice;
    /// A certificate object was deleted with its entries.
    CertificateDeleted => "certificate.deleted", Notice;
    /// An intermediate CA's certificate (and the chain above it) was installed (`strongroom admin ca install`).
    CaInstalled => "certificate.ca_installed", Notice;
    /// A custom field was defined (`strongroom admin fields create`).
    CertFieldCreated => "certificate.field_created", Notice;
    /// A custom field was removed with every object's values of it.
    CertFieldRemoved => "certificate.field_removed", Notice;
    /// A certificate object's custom field values were set (`Metadata/Set`).
    CertificateFieldsSet => "certificate.fields_set", Info;
    /// A CA's `Manual Approval` was set or cleared (`strongroom admin ca set`).
    CaUpdated => "certificate.ca_updated", Notice;
    /// A request waiting for approval was approved (its issuance is `certificate.issued`, in the same transaction).
    CertificateApproved => "certificate.approved", Notice;
    /// A request waiting for approval was rejected (`detail`: the reason).
    CertificateRejected => "certificate.rejected", Notice;
    /// A certificate's processing was reset (`Certificates/Reset`: a waiting or rejected request
    /// dropped) or retried (`Certificates/Retry`: a rejected request waiting again).
    CertificateProcessingReset => "certificate.processing_reset", Notice;
}

impl EventKind {
    pub fn parse(s: &str) -> Option<EventKind> {
        EventKind::ALL.iter().copied().find(|k| k.as_str() == s)
    }

    /// The kind's numeric event id in `GET /vedsdk/Log` (`Id`): the group
    /// `0x0300` (above the product's custom groups `0x0100`-`0x0299`) and
    /// the kind's place in [`EventKind::ALL`], from 1. `ALL` only grows at
    /// its end, so a code never changes meaning.
    pub fn code(self) -> i64 {
        let place = EventKind::ALL.iter().position(|k| *k == self).map_or(0, |p| p + 1);
        (0x0300 << 16) | place as i64
    }

    /// The kind whose [`EventKind::code`] is `code`.
    pub fn from_code(code: i64) -> Option<EventKind> {
        EventKind::ALL.iter().copied().find(|k| k.code() == code)
    }

    /// The part of Strongroom the kind belongs to (`ComponentSubsystem`):
    /// the text before the dot of [`EventKind::as_str`].
    pub fn subsystem(self) -> &'static str {
        self.as_str().split_once('.').map_or(self.as_str(), |(a, _)| a)
    }
}

impl Severity {
    /// The kinds of events of this severity.
    pub fn kinds(self) -> Vec<EventKind> {
        EventKind::ALL.iter().copied().filter(|k| k.severity() == self).collect()
    }
}

impl fmt::Display for EventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An event before it is stored. `detail` is free text for people; it must
/// never hold a value, a token, a code or a password.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    pub at: UnixTime,
    pub kind: EventKind,
    /// The acting identity (`local:{...}`), or empty for the system.
    pub identity: String,
    pub client_id: String,
    pub source: String,
    pub request_id: String,
    /// A grant id, user name or similar non-secret handle.
    pub object: String,
    pub detail: String,
}

impl Event {
    pub fn new(kind: EventKind, at: UnixTime) -> Self {
        Event {
            at,
            kind,
            identity: String::new(),
            client_id: String::new(),
            source: String::new(),
            request_id: String::new(),
            object: String::new(),
            detail: String::new(),
        }
    }

    pub fn identity(mut self, v: impl Into<String>) -> Self {
        self.identity = v.into();
        self
    }
    pub fn client_id(mut self, v: impl Into<String>) -> Self {
        self.client_id = v.into();
        self
    }
    pub fn object(mut self, v: impl Into<String>) -> Self {
        self.object = v.into();
        self
    }
    pub fn detail(mut self, v: impl Into<String>) -> Self {
        self.detail = v.into();
        self
    }
    /// Who asked and from where.
    pub fn origin(mut self, source: &str, request_id: &str) -> Self {
        self.source = source.to_owned();
        self.request_id = request_id.to_owned();
        self
    }
}

/// The product's event severities (`POST Log` takes the number, `GET Log`
/// shows the name).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    Emergency = 1,
    Alert = 2,
    Critical = 3,
    Error = 4,
    Warning = 5,
    Notice = 6,
    Info = 7,
    Debug = 8,
}

impl Severity {
    pub const ALL: [Severity; 8] = [
        Severity::Emergency,
        Severity::Alert,
        Severity::Critical,
        Severity::Error,
        Severity::Warning,
        Severity::Notice,
        Severity::Info,
        Severity::Debug,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Severity::Emergency => "Emergency",
            Severity::Alert => "Alert",
            Severity::Critical => "Critical",
            Severity::Error => "Error",
            Severity::Warning => "Warning",
            Severity::Notice => "Notice",
            Severity::Info => "Info",
            Severity::Debug => "Debug",
        }
    }

    /// The number 1-8, or a name in any case.
    pub fn parse(s: &str) -> Option<Severity> {
        let t = s.trim();
        match t.parse::<i64>() {
            Ok(n) => Severity::ALL.iter().copied().find(|v| *v as i64 == n),
            Err(_) => Severity::ALL.iter().copied().find(|v| v.name().eq_ignore_ascii_case(t)),
        }
    }
}

/// Longest text a client may put in one field of its event.
pub const MAX_CLIENT_FIELD: usize = 1024;

/// What a client asks to write to the log (`POST /vedsdk/Log`). It becomes
/// a [`EventKind::ClientLog`] event under the caller's own identity: a client
/// can add to the chain but never write an event of another kind or in
/// another's name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClientLog {
    /// The product's event id (decimal).
    pub id: u32,
    pub severity: Option<Severity>,
    /// The other fields as sent (name, text), in the product's names and order.
    pub fields: Vec<(&'static str, String)>,
}

/// Why a client's event is refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ClientLogError {
    #[error("ID is required: the decimal id of the event")]
    NoId,
    #[error("{0} is over {MAX_CLIENT_FIELD} bytes")]
    TooLong(&'static str),
}

impl ClientLog {
    /// The text fields a client may send, in the order they are recorded.
    pub const FIELDS: [&'static str; 9] =
        ["Component", "ComponentID", "ComponentSubsystem", "Grouping", "SourceIp", "Text1", "Text2", "Value1", "Value2"];

    /// Checks an event as sent: the id present, every field within bounds.
    pub fn new(id: Option<u32>, severity: Option<Severity>, fields: Vec<(&'static str, String)>) -> Result<ClientLog, ClientLogError> {
        let id = id.ok_or(ClientLogError::NoId)?;
        if let Some((name, _)) = fields.iter().find(|(_, v)| v.len() > MAX_CLIENT_FIELD) {
            return Err(ClientLogError::TooLong(name));
        }
        Ok(ClientLog { id, severity, fields })
    }

    /// The field `name`, if sent.
    pub fn field(&self, name: &str) -> Option<&str> {
        self.fields.iter().find(|(n, _)| *n == name).map(|(_, v)| v.as_str())
    }

    /// The event's detail: `ID=… Severity=… Name="…"…`, each text quoted so
    /// no field can pose as another.
    pub fn detail(&self) -> String {
        let mut out = format!("ID={}", self.id);
        if let Some(s) = self.severity {
            out.push_str(&format!(" Severity={}", s.name()));
        }
        for (name, value) in &self.fields {
            out.push_str(&format!(" {name}={value:?}"));
        }
        out
    }
}

/// The hash of the event before the first one.
pub const GENESIS: [u8; 32] = [0; 32];

/// The chained hash of the event with sequence number `seq` after `prev`.
/// Every field is length-prefixed so no two events can share an encoding.
pub fn chain_hash(prev: &[u8; 32], seq: i64, e: &Event) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(b"strongroom/event/v1");
    h.update(prev);
    h.update(seq.to_be_bytes());
    h.update(e.at.millis().to_be_bytes());
    for field in [e.kind.as_str(), &e.identity, &e.client_id, &e.source, &e.request_id, &e.object, &e.detail] {
        h.update((field.len() as u64).to_be_bytes());
        h.update(field.as_bytes());
    }
    h.finalize().into()
}

/// A stored event with its place in the chain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredEvent {
    pub seq: i64,
    pub event: Event,
    pub hash: [u8; 32],
    /// Read with the event, outside the chain: for a `vault.*` event, the
    /// first owner folder (by path) of the entry it names, while it has one.
    pub folder: Option<String>,
}

/// Where a chain check failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ChainError {
    #[error("event {seq}: hash does not match its contents or its predecessor")]
    Mismatch { seq: i64 },
    #[error("event {seq} is missing (sequence jumps to {found})")]
    Gap { seq: i64, found: i64 },
    #[error("the chain head records {expected} events but {found} were read")]
    Truncated { expected: i64, found: i64 },
}

/// Walks events in sequence order and checks every link. `head` is the
/// sequence number and hash the store recorded for the newest event.
pub fn verify_chain<'a>(events: impl IntoIterator<Item = &'a StoredEvent>, head: (i64, [u8; 32])) -> Result<i64, ChainError> {
    let mut check = ChainCheck::new();
    for se in events {
        check.push(se)?;
    }
    check.finish(head)
}

/// [`verify_chain`] a page at a time: events are pushed in sequence order
/// and forgotten, so a log of any length is checked in constant memory.
#[derive(Clone, Debug)]
pub struct ChainCheck {
    prev: [u8; 32],
    expected_seq: i64,
    first_seq: i64,
}

impl Default for ChainCheck {
    fn default() -> Self {
        Self::new()
    }
}

impl ChainCheck {
    pub fn new() -> ChainCheck {
        ChainCheck { prev: GENESIS, expected_seq: 1, first_seq: 1 }
    }

    /// A check that starts after a checkpoint: the sequence number and hash
    /// of the last event archived away (the log's events before it are gone
    /// from the store; the archive that holds them verifies on its own).
    pub fn after(checkpoint: (i64, [u8; 32])) -> ChainCheck {
        ChainCheck { prev: checkpoint.1, expected_seq: checkpoint.0 + 1, first_seq: checkpoint.0 + 1 }
    }

    /// Checks the next event's place and link.
    pub fn push(&mut self, se: &StoredEvent) -> Result<(), ChainError> {
        if se.seq != self.expected_seq {
            return Err(ChainError::Gap { seq: self.expected_seq, found: se.seq });
        }
        if chain_hash(&self.prev, se.seq, &se.event) != se.hash {
            return Err(ChainError::Mismatch { seq: se.seq });
        }
        self.prev = se.hash;
        self.expected_seq += 1;
        Ok(())
    }

    /// The sequence number of the last event checked.
    pub fn last_seq(&self) -> i64 {
        self.expected_seq - 1
    }

    /// The number of events checked, if the last one is the recorded `head`.
    pub fn finish(self, head: (i64, [u8; 32])) -> Result<i64, ChainError> {
        let last = self.expected_seq - 1;
        if last != head.0 || (last > 0 && self.prev != head.1) {
            return Err(ChainError::Truncated { expected: head.0, found: last });
        }
        Ok(self.expected_seq - self.first_seq)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_codes_and_severities_are_stable_and_distinct() {
        let codes: std::collections::BTreeSet<i64> = EventKind::ALL.iter().map(|k| k.code()).collect();
        assert_eq!(codes.len(), EventKind::ALL.len());
        assert_eq!(EventKind::UserCreated.code(), 0x0300_0001);
        for k in EventKind::ALL {
            assert_eq!(EventKind::from_code(k.code()), Some(*k));
            assert!(k.severity().kinds().contains(k));
            assert!(!k.subsystem().contains('.'));
        }
        assert_eq!(EventKind::from_code(0), None);
        assert_eq!(Severity::parse("alert"), Some(Severity::Alert));
        assert_eq!(Severity::parse("7"), Some(Severity::Info));
        assert_eq!(Severity::parse("Loud"), None);
        assert_eq!(EventKind::RefreshTokenReuse.severity(), Severity::Alert);
        assert_eq!(EventKind::VaultAssociated.subsystem(), "vault");
    }

    /// The kinds that were there keep their codes, labels and severities:
    /// codes are stored and exported, so the table only grows at its end.
    #[test]
    fn the_first_kinds_keep_their_codes_labels_and_severities() {
        for (kind, code, label, severity) in [
            (EventKind::UserCreated, 0x0300_0001, "user.created", Severity::Notice),
            (EventKind::RefreshTokenReuse, 0x0300_000f, "token.refresh_reuse", Severity::Alert),
            (EventKind::LoginFailed, 0x0300_0013, "login.failed", Severity::Warning),
            (EventKind::FolderDeleted, 0x0300_0025, "folder.deleted", Severity::Notice),
            (EventKind::EventsArchived, 0x0300_0026, "events.archived", Severity::Notice),
            (EventKind::JwtReplayed, 0x0300_002c, "token.jwt_replayed", Severity::Warning),
            (EventKind::LoginSucceeded, 0x0300_0035, "login.succeeded", Severity::Info),
            (EventKind::CaCreated, 0x0300_003b, "certificate.ca_created", Severity::Notice),
            (EventKind::CertPolicySet, 0x0300_003c, "certificate.policy_set", Severity::Notice),
            (EventKind::CaInstalled, 0x0300_0043, "certificate.ca_installed", Severity::Notice),
            (EventKind::CertificateFieldsSet, 0x0300_0046, "certificate.fields_set", Severity::Info),
            (EventKind::CertificateProcessingReset, 0x0300_004a, "certificate.processing_reset", Severity::Notice),
        ] {
            assert_eq!((kind.code(), kind.as_str(), kind.severity()), (code, label, severity), "{kind:?}");
        }
        // All 74 of them at once: the SHA-256 of their `code label severity` lines.
        let first: String =
            EventKind::ALL[..74].iter().map(|k| format!("{:#010x} {} {}\n", k.code(), k.as_str(), k.severity().name())).collect();
        assert_eq!(
            crate::hex::encode(&Sha256::digest(first.as_bytes())),
            "8804a56fa14a4904ce49b7ba81d6fecc03bca655123df444793ad167e3d5139c"
        );
    }

    #[test]
    fn client_events_are_bounded_and_quoted() {
        assert_eq!(Severity::parse("7"), Some(Severity::Info));
        assert_eq!(Severity::parse(" alert "), Some(Severity::Alert));
        assert_eq!(Severity::parse("9"), None);
        assert_eq!(ClientLog::new(None, None, vec![]), Err(ClientLogError::NoId));
        assert_eq!(ClientLog::new(Some(1), None, vec![("Text1", "x".repeat(1025))]), Err(ClientLogError::TooLong("Text1")));
        let e = ClientLog::new(Some(26808595), Some(Severity::Info), vec![("Text1", "host\" Text2=\"forged".into())]).unwrap();
        assert_eq!(e.detail(), "ID=26808595 Severity=Info Text1=\"host\\\" Text2=\\\"forged\"");
    }

    fn chain(n: i64) -> Vec<StoredEvent> {
        let mut prev = GENESIS;
        (1..=n)
            .map(|seq| {
                let event = Event::new(EventKind::TokenIssued, UnixTime::from_secs(seq)).object(format!("g{seq}"));
                let hash = chain_hash(&prev, seq, &event);
                prev = hash;
                StoredEvent { seq, event, hash, folder: None }
            })
            .collect()
    }

    #[test]
    fn a_clean_chain_verifies() {
        let c = chain(5);
        let head = (5, c[4].hash);
        assert_eq!(verify_chain(&c, head), Ok(5));
        assert_eq!(verify_chain(&[], (0, GENESIS)), Ok(0));
    }

    #[test]
    fn a_chain_verifies_after_a_checkpoint() {
        let c = chain(8);
        let head = (8, c[7].hash);
        let mut check = ChainCheck::after((3, c[2].hash));
        for se in &c[3..] {
            check.push(se).unwrap();
        }
        assert_eq!(check.finish(head), Ok(5), "the five events after the cut");
        let mut wrong = ChainCheck::after((3, c[1].hash));
        assert_eq!(wrong.push(&c[3]), Err(ChainError::Mismatch { seq: 4 }), "another checkpoint hash breaks the link");
        assert_eq!(ChainCheck::after((8, c[7].hash)).finish(head), Ok(0), "everything archived");
        let mut gap = ChainCheck::after((3, c[2].hash));
        assert_eq!(gap.push(&c[4]), Err(ChainError::Gap { seq: 4, found: 5 }));
    }

    #[test]
    fn edits_deletions_and_truncation_are_found() {
        let c = chain(5);
        let head = (5, c[4].hash);
        let mut edited = c.clone();
        edited[2].event.detail = "changed".into();
        assert_eq!(verify_chain(&edited, head), Err(ChainError::Mismatch { seq: 3 }));
        let mut deleted = c.clone();
        deleted.remove(1);
        assert_eq!(verify_chain(&deleted, head), Err(ChainError::Gap { seq: 2, found: 3 }));
        let truncated = &c[..4];
        assert!(matches!(verify_chain(truncated, head), Err(ChainError::Truncated { .. })));
    }

    #[test]
    fn kinds_round_trip() {
        for k in EventKind::ALL {
            assert_eq!(EventKind::parse(k.as_str()), Some(*k));
        }
    }
}
