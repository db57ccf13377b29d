//! The `PKCS11` driver: a named key that lives in a PKCS#11 token (an HSM,
//! or SoftHSM2 for tests) and never leaves it.
//!
//! Data keys are wrapped with `CKM_AES_GCM` (`C_Encrypt` / `C_Decrypt`,
//! 96-bit IV chosen by us, 128-bit tag, the data key's id and named key as
//! additional authenticated data): stored as `IV || ciphertext || tag`. The
//! token key is an AES-256 secret key (`CKO_SECRET_KEY`, `CKK_AES`) found by
//! its `CKA_LABEL`, with `CKA_ENCRYPT` and `CKA_DECRYPT`; `admin keys create`
//! makes it with `CKM_AES_KEY_GEN` as `CKA_TOKEN`, `CKA_PRIVATE`,
//! `CKA_SENSITIVE`, not `CKA_EXTRACTABLE`.
//!
//! One [`Module`] per library path per process: the library is loaded and
//! `C_Initialize`d once and shared by every key on it. A key keeps one
//! logged-in session, used under its own lock while holding the module's
//! read lock; a token that is not seen makes the module finalise and
//! initialise again under its write lock, so it waits for every call of
//! every key in flight and closes all their sessions first (PKCS#11 has no
//! other way to see a token that came back). A session that fails is closed
//! and the call tried once more on a fresh one.
//!
//! The PIN is read from its file (which must be private: mode 0600) or
//! variable whenever a session has to log in, and is never logged or shown
//! by `Debug`. A PIN the token refused is remembered as a keyed digest (an
//! HMAC under a random per-process key, never the PIN) and never presented
//! again: the key answers "unusable" until its source holds another PIN, so
//! clients retrying cannot spend a real HSM's PIN retry counter. A locked
//! PIN is not presented to, and neither is the last try before a lock.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock, RwLockReadGuard, Weak};

use cryptoki::context::{CInitializeArgs, CInitializeFlags, Pkcs11};
use cryptoki::error::{Error as CkError, RvError};
use cryptoki::mechanism::Mechanism;
use cryptoki::mechanism::aead::GcmParams;
use cryptoki::object::{Attribute, AttributeType, KeyType, ObjectClass, ObjectHandle};
use cryptoki::session::{Session, SessionState, UserType};
use cryptoki::slot::{Slot, TokenInfo};
use cryptoki::types::AuthPin;
use zeroize::Zeroizing;

use strongroom_core::random::{Random, bytes};
use strongroom_core::vault::crypto::Key;

use super::settings::{PinSource, Pkcs11KeyConfig};
use super::{DriverError, KeyDriver, SigningAlgorithm, digest_info};

const IV_LEN: usize = 12;
const TAG_BITS: u64 = 128;
/// Refused PINs remembered per token; the oldest is forgotten first.
const REFUSED_KEPT: usize = 8;

/// Every module this process loaded, by library path (canonical when it exists).
static MODULES: Mutex<Vec<(PathBuf, Weak<Module>)>> = Mutex::new(Vec::new());

fn poisoned<T>(_: T) -> DriverError {
    DriverError::new("an earlier PKCS#11 call panicked")
}

/// A PKCS#11 failure as a short text: the function and its return value.
fn ck(e: CkError) -> DriverError {
    DriverError::new(match e {
        CkError::Pkcs11(rv, function) => format!("{function:?} failed: {rv:?}"),
        CkError::LibraryLoading(e) => format!("loading the PKCS#11 module: {e}"),
        other => format!("PKCS#11: {other:?}"),
    })
}

/// For SoftHSM2, whose tokens are wherever the file `SOFTHSM2_CONF` names
/// says: what this process has it set to, and that the server needs the
/// same. Empty for other modules.
fn softhsm_hint(library: &Path) -> String {
    if !library.to_string_lossy().to_ascii_lowercase().contains("softhsm") {
        return String::new();
    }
    let now = match std::env::var_os("SOFTHSM2_CONF") {
        Some(v) => format!("SOFTHSM2_CONF is {}", Path::new(&v).display()),
        None => "SOFTHSM2_CONF is not set, so SoftHSM2 reads /etc/softhsm/softhsm2.conf".to_owned(),
    };
    format!(
        " ({now}: SoftHSM2 finds its tokens in the directories.tokendir of that file; set SOFTHSM2_CONF to the file \
         softhsm2-util --init-token used, for serve and admin alike (for the service: in /etc/strongroom/env), and make the \
         token directory readable by the user the server runs as)"
    )
}

/// A key's session, kept between calls.
type Kept = Arc<Mutex<Option<Session>>>;

/// One PKCS#11 library, shared by every key on it in this process.
pub(crate) struct Module {
    library: PathBuf,
    state: RwLock<ModuleState>,
    next_key: AtomicU64,
    /// Digests of PINs each token (by label) refused.
    refused: Mutex<HashMap<String, Vec<[u8; 32]>>>,
    digest_key: Zeroizing<[u8; 32]>,
}

#[derive(Default)]
struct ModuleState {
    /// The library, loaded once and kept.
    lib: Option<Pkcs11>,
    initialized: bool,
    /// Counts re-initialisations, so keys that saw a token missing at the
    /// same time re-initialise once.
    generation: u64,
    /// Each key's session (by key id). Emptied, every session closed,
    /// before the module is finalised.
    sessions: Mutex<HashMap<u64, Kept>>,
}

impl fmt::Debug for Module {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Module").field("library", &self.library).finish_non_exhaustive()
    }
}

impl Module {
    /// The module for `library`, shared with every other key of this
    /// process on it. `rng` keys the digests of refused PINs.
    pub(crate) fn shared(library: &Path, rng: &dyn Random) -> Arc<Module> {
        let path = std::fs::canonicalize(library).unwrap_or_else(|_| library.to_owned());
        let mut all = MODULES.lock().unwrap_or_else(PoisonError::into_inner);
        all.retain(|(_, m)| m.strong_count() > 0);
        if let Some(m) = all.iter().filter(|(p, _)| *p == path).find_map(|(_, m)| m.upgrade()) {
            return m;
        }
        let m = Arc::new(Module {
            library: library.to_owned(),
            state: RwLock::default(),
            next_key: AtomicU64::new(0),
            refused: Mutex::default(),
            digest_key: Zeroizing::new(bytes(rng)),
        });
        all.push((path, Arc::downgrade(&m)));
        m
    }

    /// The module's state, read-locked, with the library loaded and
    /// initialised (done here on first use).
    fn ready(&self) -> Result<RwLockReadGuard<'_, ModuleState>, DriverError> {
        for _ in 0..4 {
            let state = self.state.read().map_err(poisoned)?;
            if state.initialized {
                return Ok(state);
            }
            drop(state);
            let mut state = self.state.write().map_err(poisoned)?;
            if !state.initialized {
                self.initialize(&mut state)?;
            }
        }
        Err(DriverError::new("the PKCS#11 module keeps being re-initialised"))
    }

    fn initialize(&self, state: &mut ModuleState) -> Result<(), DriverError> {
        let lib = match &state.lib {
            Some(l) => l.clone(),
            None => {
                let l = Pkcs11::new(&self.library).map_err(ck)?;
                state.lib = Some(l.clone());
                l
            }
        };
        match lib.initialize(CInitializeArgs::new(CInitializeFlags::OS_LOCKING_OK)) {
            Ok(()) | Err(CkError::Pkcs11(RvError::CryptokiAlreadyInitialized, _)) => {
                state.initialized = true;
                Ok(())
            }
            Err(e) => Err(ck(e)),
        }
    }

    /// Closes every key's session, then finalises and initialises the
    /// module again (a token that went away is seen again only then),
    /// unless another key did so since it saw generation `seen`. Holding
    /// the write lock, it waits for every call in flight on this library.
    fn reinitialize(&self, seen: u64) -> Result<(), DriverError> {
        let mut state = self.state.write().map_err(poisoned)?;
        if state.generation != seen {
            return Ok(());
        }
        close_all(&mut state);
        if state.initialized
            && let Some(lib) = state.lib.clone()
        {
            let _ = lib.finalize();
        }
        state.initialized = false;
        state.generation += 1;
        tracing::debug!(library = %self.library.display(), "PKCS#11 module initialised again to look for a missing token");
        self.initialize(&mut state)
    }

    /// Key `id`'s session slot.
    fn kept(state: &ModuleState, id: u64) -> Result<Kept, DriverError> {
        Ok(state.sessions.lock().map_err(poisoned)?.entry(id).or_default().clone())
    }

    fn digest(&self, pin: &str) -> [u8; 32] {
        strongroom_core::mac::hmac_sha256_of(&self.digest_key, &[pin.as_bytes()])
    }

    fn was_refused(&self, token: &str, digest: &[u8; 32]) -> bool {
        self.refused.lock().unwrap_or_else(PoisonError::into_inner).get(token).is_some_and(|d| d.contains(digest))
    }

    fn remember_refused(&self, token: &str, digest: [u8; 32]) {
        let mut all = self.refused.lock().unwrap_or_else(PoisonError::into_inner);
        let list = all.entry(token.to_owned()).or_default();
        if !list.contains(&digest) {
            if list.len() >= REFUSED_KEPT {
                list.remove(0);
            }
            list.push(digest);
        }
    }

    /// The token took a PIN: what it refused before is forgotten.
    fn accepted(&self, token: &str) {
        self.refused.lock().unwrap_or_else(PoisonError::into_inner).remove(token);
    }
}

/// Closes every session kept on the module.
fn close_all(state: &mut ModuleState) {
    let sessions = state.sessions.get_mut().unwrap_or_else(PoisonError::into_inner);
    for (_, kept) in sessions.drain() {
        drop(kept.lock().unwrap_or_else(PoisonError::into_inner).take());
    }
}

impl Drop for Module {
    fn drop(&mut self) {
        let state = self.state.get_mut().unwrap_or_else(PoisonError::into_inner);
        close_all(state);
        if state.initialized
            && let Some(lib) = state.lib.take()
        {
            let _ = lib.finalize();
        }
    }
}

/// What the token says about its user PIN.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct PinFlags {
    /// `CKF_USER_PIN_LOCKED`.
    locked: bool,
    /// `CKF_USER_PIN_FINAL_TRY`: one more wrong PIN locks it.
    final_try: bool,
}

impl PinFlags {
    fn of(info: &TokenInfo) -> PinFlags {
        PinFlags { locked: info.user_pin_locked(), final_try: info.user_pin_final_try() }
    }
}

/// Why a PIN is not presented.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Withheld {
    /// The token refused this very PIN before.
    RefusedBefore,
    Locked,
    /// The token has one try left: a wrong PIN now would lock it.
    FinalTry,
}

/// Whether a PIN may be presented to a token: never one it refused before,
/// never to a locked PIN, never the try that could lock it.
fn may_present(flags: PinFlags, refused_before: bool) -> Result<(), Withheld> {
    if flags.locked {
        Err(Withheld::Locked)
    } else if refused_before {
        Err(Withheld::RefusedBefore)
    } else if flags.final_try {
        Err(Withheld::FinalTry)
    } else {
        Ok(())
    }
}

/// One configured key in a token.
pub(crate) struct Pkcs11Key {
    config: Pkcs11KeyConfig,
    module: Arc<Module>,
    /// This key's slot in the module's sessions.
    id: u64,
}

impl fmt::Debug for Pkcs11Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pkcs11Key")
            .field("name", &self.config.name)
            .field("library", &self.config.library)
            .field("token_label", &self.config.token_label)
            .field("key_label", &self.config.key_label)
            .finish_non_exhaustive()
    }
}

impl Drop for Pkcs11Key {
    fn drop(&mut self) {
        if let Ok(state) = self.module.state.read()
            && let Ok(mut sessions) = state.sessions.lock()
        {
            sessions.remove(&self.id);
        }
    }
}

impl Pkcs11Key {
    /// Nothing is loaded yet. `rng` keys the refused PINs' digests if this
    /// is the first key on its library.
    pub(crate) fn new(config: Pkcs11KeyConfig, rng: &dyn Random) -> Pkcs11Key {
        let module = Module::shared(&config.library, rng);
        let id = module.next_key.fetch_add(1, Ordering::Relaxed);
        Pkcs11Key { config, module, id }
    }

    /// Where the PIN comes from, for messages.
    fn pin_source(&self) -> String {
        match &self.config.pin {
            PinSource::File(p) => format!("the PIN file {}", p.display()),
            PinSource::Env(v) => format!("the variable {v}"),
        }
    }

    /// What must happen before a refused PIN is presented again.
    fn until_another_pin(&self) -> String {
        match &self.config.pin {
            PinSource::File(p) => format!("until {} holds another PIN", p.display()),
            PinSource::Env(v) => format!("until the server restarts with another PIN in {v}"),
        }
    }

    /// The PIN as its source holds it now: a file is read again each time
    /// and must be private (0600).
    fn pin(&self) -> Result<Zeroizing<String>, DriverError> {
        let raw = match &self.config.pin {
            PinSource::File(p) => {
                let text = Zeroizing::new(
                    std::fs::read_to_string(p)
                        .map_err(|e| DriverError::new(format!("reading the PIN file {}: {}", p.display(), e.kind())))?,
                );
                crate::keys::check_private(p).map_err(|e| DriverError::new(format!("the PIN file {e}")))?;
                text
            }
            PinSource::Env(v) => {
                Zeroizing::new(std::env::var(v).map_err(|_| DriverError::new(format!("the PIN variable {v} is not set")))?)
            }
        };
        let pin = raw.trim_end_matches(['\n', '\r']);
        if pin.is_empty() {
            return Err(DriverError::new(format!("{} is empty", self.pin_source())));
        }
        Ok(Zeroizing::new(pin.to_owned()))
    }

    /// The slot holding the token with our label, and its information.
    fn find_token(&self, lib: &Pkcs11) -> Result<Option<(Slot, TokenInfo)>, DriverError> {
        let label = self.config.token_label.as_str();
        for slot in lib.get_slots_with_token().map_err(ck)? {
            if let Ok(info) = lib.get_token_info(slot)
                && info.label().trim_end() == label
            {
                return Ok(Some((slot, info)));
            }
        }
        Ok(None)
    }

    /// Runs `f` with our token found; a token not seen makes the module
    /// initialise again once (for every key of the library) and look again.
    fn with_token<T>(
        &self,
        mut f: impl FnMut(&ModuleState, &Pkcs11, Slot, &TokenInfo) -> Result<T, DriverError>,
    ) -> Result<T, DriverError> {
        let mut again = false;
        loop {
            let state = self
                .module
                .ready()
                .map_err(|e| DriverError { message: format!("{}{}", e.message, softhsm_hint(&self.config.library)), ..e })?;
            let lib = state.lib.clone().ok_or_else(|| DriverError::new("the PKCS#11 module is not loaded"))?;
            if let Some((slot, info)) = self.find_token(&lib)? {
                return f(&state, &lib, slot, &info);
            }
            if again {
                return Err(DriverError::new(format!(
                    "no token labelled {:?} is present{}",
                    self.config.token_label,
                    softhsm_hint(&self.config.library)
                )));
            }
            let seen = state.generation;
            drop(state);
            self.module.reinitialize(seen)?;
            again = true;
        }
    }

    /// Opens a session on our token and logs in, unless this process is
    /// logged in to the token already; see [`may_present`].
    fn open(&self, lib: &Pkcs11, slot: Slot, info: &TokenInfo, read_write: bool) -> Result<Session, DriverError> {
        let label = self.config.token_label.as_str();
        let session = if read_write { lib.open_rw_session(slot) } else { lib.open_ro_session(slot) }.map_err(ck)?;
        if matches!(session.get_session_info().map_err(ck)?.session_state(), SessionState::RoUser | SessionState::RwUser) {
            return Ok(session);
        }
        let pin = self.pin()?;
        let digest = self.module.digest(&pin);
        match may_present(PinFlags::of(info), self.module.was_refused(label, &digest)) {
            Ok(()) => {}
            Err(Withheld::RefusedBefore) => {
                // Logged once, when the token refused it.
                return Err(DriverError::logged(format!(
                    "the token {label:?} refused the PIN from {} earlier; it is not presented again {}",
                    self.pin_source(),
                    self.until_another_pin()
                )));
            }
            Err(Withheld::Locked) => {
                return Err(DriverError::new(format!(
                    "the user PIN of token {label:?} is locked: its security officer must set it again (C_InitPIN, \
                     e.g. pkcs11-tool --init-pin --login --login-type so); no PIN is presented meanwhile"
                )));
            }
            Err(Withheld::FinalTry) => {
                return Err(DriverError::new(format!(
                    "the token {label:?} allows one more user PIN try before it locks the PIN; Strongroom does not make it: \
                     check {}, then log in once by hand (e.g. pkcs11-tool --login) to reset the token's counter",
                    self.pin_source()
                )));
            }
        }
        tracing::debug!(key = %self.config.name, token = %label, "presenting the PIN to the token (C_Login)");
        match session.login(UserType::User, Some(&AuthPin::from(pin.as_str().to_owned()))) {
            Ok(()) | Err(CkError::Pkcs11(RvError::UserAlreadyLoggedIn, _)) => {
                self.module.accepted(label);
                Ok(session)
            }
            Err(CkError::Pkcs11(rv @ (RvError::PinIncorrect | RvError::PinInvalid | RvError::PinLenRange), _)) => {
                self.module.remember_refused(label, digest);
                let message = format!(
                    "Login failed: {rv:?}: the token {label:?} refused the PIN from {}; it is not presented again {}",
                    self.pin_source(),
                    self.until_another_pin()
                );
                tracing::error!(key = %self.config.name, "{message}");
                Err(DriverError::logged(message))
            }
            Err(CkError::Pkcs11(RvError::PinLocked, _)) => Err(DriverError::new(format!(
                "Login failed: PinLocked: the user PIN of token {label:?} is locked: its security officer must set it again"
            ))),
            Err(CkError::Pkcs11(RvError::PinExpired, _)) => Err(DriverError::new(format!(
                "Login failed: PinExpired: the user PIN of token {label:?} has expired: set a new one \
                 (e.g. pkcs11-tool --change-pin) and put it in {}",
                self.pin_source()
            ))),
            Err(e) => Err(ck(e)),
        }
    }

    fn find_key(&self, session: &Session) -> Result<Option<ObjectHandle>, DriverError> {
        Self::find_labelled(session, ObjectClass::SECRET_KEY, &self.config.key_label)
    }

    fn attempt<T>(&self, session: &Session, f: &impl Fn(&Session, ObjectHandle) -> Result<T, DriverError>) -> Result<T, DriverError> {
        let key =
            self.find_key(session)?.ok_or_else(|| DriverError::new(format!("no key labelled {:?} on the token", self.config.key_label)))?;
        f(session, key)
    }

    /// Runs `f` with the key on this key's logged-in session (see [`Pkcs11Key::with_session`]).
    fn with_key<T>(&self, f: impl Fn(&Session, ObjectHandle) -> Result<T, DriverError>) -> Result<T, DriverError> {
        self.with_session(|session| self.attempt(session, &f))
    }

    /// Runs `f` on this key's logged-in session. A kept session that fails
    /// is closed and `f` runs once more on a fresh one (the token may have
    /// restarted, or gone); a fresh one that fails is closed too.
    fn with_session<T>(&self, f: impl Fn(&Session) -> Result<T, DriverError>) -> Result<T, DriverError> {
        {
            let state = self.module.ready()?;
            let kept = Module::kept(&state, self.id)?;
            let mut kept = kept.lock().map_err(poisoned)?;
            // A kept session that fails is dropped (closed) here.
            if let Some(session) = kept.take()
                && let Ok(v) = f(&session)
            {
                *kept = Some(session);
                return Ok(v);
            }
        }
        self.with_token(|state, lib, slot, info| {
            let kept = Module::kept(state, self.id)?;
            let mut kept = kept.lock().map_err(poisoned)?;
            let session = self.open(lib, slot, info, false)?;
            let v = f(&session)?;
            *kept = Some(session);
            Ok(v)
        })
    }

    /// The token key of `class` labelled `label` (one at most).
    fn find_labelled(session: &Session, class: ObjectClass, label: &str) -> Result<Option<ObjectHandle>, DriverError> {
        let template = [Attribute::Class(class), Attribute::Token(true), Attribute::Label(label.as_bytes().to_vec())];
        let found = session.find_objects(&template).map_err(ck)?;
        match found.as_slice() {
            [] => Ok(None),
            [one] => Ok(Some(*one)),
            _ => Err(DriverError::new(format!("{} keys are labelled {label:?}; the label must be unique", found.len()))),
        }
    }

    /// The public key `label` as a certificate's `subjectPublicKey` holds
    /// it: an EC key's uncompressed point (`CKA_EC_POINT` is a DER OCTET
    /// STRING around it, PKCS#11 2.40 §2.3.3, which some modules leave
    /// out), an RSA key's `RSAPublicKey` made of `CKA_MODULUS` and
    /// `CKA_PUBLIC_EXPONENT`.
    fn public_of(session: &Session, label: &str) -> Result<Vec<u8>, DriverError> {
        let public = Self::find_labelled(session, ObjectClass::PUBLIC_KEY, label)?
            .ok_or_else(|| DriverError::new(format!("no public key labelled {label:?} on the token")))?;
        if Self::key_type(session, public)? == KeyType::RSA {
            let attrs = session.get_attributes(public, &[AttributeType::Modulus, AttributeType::PublicExponent]).map_err(ck)?;
            let (mut n, mut e) = (None, None);
            for a in attrs {
                match a {
                    Attribute::Modulus(v) => n = Some(v),
                    Attribute::PublicExponent(v) => e = Some(v),
                    _ => {}
                }
            }
            let (Some(n), Some(e)) = (n, e) else {
                return Err(DriverError::new(format!("the public key {label:?} has no modulus or exponent")));
            };
            return Ok(rsa_public_key(&n, &e));
        }
        let attrs = session.get_attributes(public, &[AttributeType::EcPoint]).map_err(ck)?;
        let Some(Attribute::EcPoint(raw)) = attrs.into_iter().next() else {
            return Err(DriverError::new(format!("the public key {label:?} has no EC point")));
        };
        Ok(match raw.as_slice() {
            [0x04, len, rest @ ..] if usize::from(*len) == rest.len() && rest.first() == Some(&0x04) => rest.to_vec(),
            [0x04, 0x81, len, rest @ ..] if usize::from(*len) == rest.len() && rest.first() == Some(&0x04) => rest.to_vec(),
            _ => raw,
        })
    }

    /// A key object's `CKA_KEY_TYPE`.
    fn key_type(session: &Session, key: ObjectHandle) -> Result<KeyType, DriverError> {
        match session.get_attributes(key, &[AttributeType::KeyType]).map_err(ck)?.into_iter().next() {
            Some(Attribute::KeyType(t)) => Ok(t),
            _ => Err(DriverError::new("a signing key without a key type")),
        }
    }
}

/// DER of an unsigned big-endian integer.
fn der_unsigned(v: &[u8]) -> Vec<u8> {
    let v: Vec<u8> = v.iter().copied().skip_while(|b| *b == 0).collect();
    let mut body = if v.first().is_none_or(|b| b & 0x80 != 0) { vec![0] } else { Vec::new() };
    body.extend_from_slice(&v);
    der_tlv(0x02, &body)
}

fn der_tlv(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    if content.len() < 0x80 {
        out.push(content.len() as u8);
    } else {
        let len: Vec<u8> = content.len().to_be_bytes().iter().copied().skip_while(|b| *b == 0).collect();
        out.push(0x80 | len.len() as u8);
        out.extend_from_slice(&len);
    }
    out.extend_from_slice(content);
    out
}

/// PKCS #1 `RSAPublicKey ::= SEQUENCE { modulus INTEGER, publicExponent INTEGER }`.
fn rsa_public_key(n: &[u8], e: &[u8]) -> Vec<u8> {
    der_tlv(0x30, &[der_unsigned(n), der_unsigned(e)].concat())
}

impl KeyDriver for Pkcs11Key {
    fn wrap(&self, data_key: &Key, aad: &[u8], nonce: [u8; 24]) -> Result<Vec<u8>, DriverError> {
        self.with_key(|session, key| {
            let mut iv = [0u8; IV_LEN];
            iv.copy_from_slice(&nonce[..IV_LEN]);
            let params = GcmParams::new(&mut iv, aad, TAG_BITS.into()).map_err(ck)?;
            let ct = session.encrypt(&Mechanism::AesGcm(params), key, data_key.expose()).map_err(ck)?;
            let mut out = Vec::with_capacity(IV_LEN + ct.len());
            out.extend_from_slice(&nonce[..IV_LEN]);
            out.extend_from_slice(&ct);
            Ok(out)
        })
    }

    fn unwrap(&self, wrapped: &[u8], aad: &[u8]) -> Result<Key, DriverError> {
        if wrapped.len() != IV_LEN + 32 + 16 {
            return Err(DriverError::new("not a wrapped key of this driver"));
        }
        self.with_key(|session, key| {
            let mut iv = [0u8; IV_LEN];
            iv.copy_from_slice(&wrapped[..IV_LEN]);
            let params = GcmParams::new(&mut iv, aad, TAG_BITS.into()).map_err(ck)?;
            let raw = Zeroizing::new(session.decrypt(&Mechanism::AesGcm(params), key, &wrapped[IV_LEN..]).map_err(ck)?);
            let arr: [u8; 32] = raw.as_slice().try_into().map_err(|_| DriverError::new("not a 32-byte key"))?;
            Ok(Key::new(arr))
        })
    }

    fn create(&self) -> Result<(), DriverError> {
        self.with_token(|_, lib, slot, info| {
            let session = self.open(lib, slot, info, true)?;
            if self.find_key(&session)?.is_some() {
                return Err(DriverError::new(format!("a key labelled {:?} already exists on the token", self.config.key_label)));
            }
            let template = [
                Attribute::Class(ObjectClass::SECRET_KEY),
                Attribute::KeyType(KeyType::AES),
                Attribute::ValueLen(32.into()),
                Attribute::Token(true),
                Attribute::Private(true),
                Attribute::Sensitive(true),
                Attribute::Extractable(false),
                Attribute::Encrypt(true),
                Attribute::Decrypt(true),
                Attribute::Wrap(false),
                Attribute::Unwrap(false),
                Attribute::Sign(false),
                Attribute::Verify(false),
                Attribute::Derive(false),
                Attribute::Label(self.config.key_label.as_bytes().to_vec()),
            ];
            session.generate_key(&Mechanism::AesKeyGen, &template).map_err(ck)?;
            Ok(())
        })
    }

    fn describe(&self) -> String {
        format!(
            "PKCS#11 module {}, token {:?}, key label {:?}",
            self.config.library.display(),
            self.config.token_label,
            self.config.key_label
        )
    }

    fn create_signing_key(&self, label: &str, algorithm: SigningAlgorithm) -> Result<Vec<u8>, DriverError> {
        if let SigningAlgorithm::Rsa(bits) = algorithm
            && ![2048, 3072, 4096].contains(&bits)
        {
            return Err(DriverError::new(format!("RSA signing keys are 2048, 3072 or 4096 bits, not {bits}")));
        }
        self.with_token(|_, lib, slot, info| {
            let session = self.open(lib, slot, info, true)?;
            if Self::find_labelled(&session, ObjectClass::PRIVATE_KEY, label)?.is_some()
                || Self::find_labelled(&session, ObjectClass::PUBLIC_KEY, label)?.is_some()
            {
                return Err(DriverError::new(format!("a key labelled {label:?} already exists on the token")));
            }
            let mut public = vec![
                Attribute::Token(true),
                Attribute::Private(false),
                Attribute::Verify(true),
                Attribute::Label(label.as_bytes().to_vec()),
            ];
            let mechanism = match (algorithm, algorithm.params_der()) {
                (SigningAlgorithm::Rsa(bits), _) => {
                    public.push(Attribute::ModulusBits(u64::from(bits).into()));
                    public.push(Attribute::PublicExponent(vec![0x01, 0x00, 0x01]));
                    Mechanism::RsaPkcsKeyPairGen
                }
                (_, Some(params)) => {
                    public.push(Attribute::EcParams(params.to_vec()));
                    Mechanism::EccKeyPairGen
                }
                (_, None) => return Err(DriverError::new("a curve without parameters")),
            };
            let private = [
                Attribute::Token(true),
                Attribute::Private(true),
                Attribute::Sensitive(true),
                Attribute::Extractable(false),
                Attribute::Sign(true),
                Attribute::Decrypt(false),
                Attribute::Unwrap(false),
                Attribute::Derive(false),
                Attribute::Label(label.as_bytes().to_vec()),
            ];
            session.generate_key_pair(&mechanism, &public, &private).map_err(ck)?;
            Self::public_of(&session, label)
        })
    }

    fn signing_public_key(&self, label: &str) -> Result<Vec<u8>, DriverError> {
        self.with_session(|session| Self::public_of(session, label))
    }

    fn sign_digest(&self, label: &str, digest: &[u8]) -> Result<Vec<u8>, DriverError> {
        self.with_session(|session| {
            let key = Self::find_labelled(session, ObjectClass::PRIVATE_KEY, label)?
                .ok_or_else(|| DriverError::new(format!("no private key labelled {label:?} on the token")))?;
            if Self::key_type(session, key)? == KeyType::RSA {
                let info = digest_info(digest).ok_or_else(|| DriverError::new("an RSA key signs SHA-256, SHA-384 or SHA-512 digests"))?;
                return session.sign(&Mechanism::RsaPkcs, key, &info).map_err(ck);
            }
            session.sign(&Mechanism::Ecdsa, key, digest).map_err(ck)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Fixed(u8);

    impl Random for Fixed {
        fn fill(&self, dest: &mut [u8]) {
            dest.fill(self.0);
        }
    }

    #[test]
    fn a_pin_is_never_presented_twice_nor_to_a_locked_or_last_try() {
        let clear = PinFlags::default();
        assert_eq!(may_present(clear, false), Ok(()));
        assert_eq!(may_present(clear, true), Err(Withheld::RefusedBefore));
        assert_eq!(may_present(PinFlags { locked: true, final_try: false }, false), Err(Withheld::Locked));
        assert_eq!(may_present(PinFlags { locked: true, final_try: false }, true), Err(Withheld::Locked));
        assert_eq!(may_present(PinFlags { locked: false, final_try: true }, false), Err(Withheld::FinalTry));
        assert_eq!(may_present(PinFlags { locked: false, final_try: true }, true), Err(Withheld::RefusedBefore));
    }

    #[test]
    fn refused_pins_are_remembered_by_keyed_digest_per_token_until_one_is_accepted() {
        let m = Module::shared(Path::new("/nonexistent/refused-pins-test.so"), &Fixed(3));
        let (a, b) = (m.digest("1234"), m.digest("5678"));
        assert_ne!(a, b);
        assert_ne!(&a[..4], b"1234", "a digest, not the PIN");
        let other = Module::shared(Path::new("/nonexistent/refused-pins-other.so"), &Fixed(4));
        assert_ne!(other.digest("1234"), a, "keyed: another key gives another digest");
        m.remember_refused("t", a);
        assert!(m.was_refused("t", &a) && !m.was_refused("t", &b) && !m.was_refused("u", &a));
        for i in 0..REFUSED_KEPT {
            m.remember_refused("t", m.digest(&i.to_string()));
        }
        assert!(!m.was_refused("t", &a), "only the newest are kept");
        assert!(m.was_refused("t", &m.digest("0")));
        m.accepted("t");
        assert!(!m.was_refused("t", &m.digest("0")));
    }

    #[test]
    fn keys_on_one_library_share_its_module() {
        let config = |name: &str, library: &str| Pkcs11KeyConfig {
            name: name.into(),
            library: library.into(),
            token_label: "t".into(),
            key_label: name.into(),
            pin: PinSource::Env("STRONGROOM_TEST_NO_SUCH_PIN".into()),
        };
        let dir = tempfile::tempdir().unwrap();
        let lib = dir.path().join("module.so");
        std::fs::write(&lib, b"").unwrap();
        let spelled_otherwise = dir.path().join(".").join("module.so");
        let a = Pkcs11Key::new(config("PKCS11:a", lib.to_str().unwrap()), &Fixed(1));
        let b = Pkcs11Key::new(config("PKCS11:b", spelled_otherwise.to_str().unwrap()), &Fixed(2));
        let c = Pkcs11Key::new(config("PKCS11:c", "/nonexistent/other.so"), &Fixed(3));
        assert!(Arc::ptr_eq(&a.module, &b.module), "one module per library");
        assert!(!Arc::ptr_eq(&a.module, &c.module));
        assert_ne!(a.id, b.id);
        assert_eq!(&a.module.digest("x"), &b.module.digest("x"), "refusals are shared by the keys of a token");
        let e = a.wrap(&Key::new([1; 32]), b"aad", [0; 24]).unwrap_err();
        assert!(e.message.starts_with("loading the PKCS#11 module"), "{e}");
        let weak = Arc::downgrade(&a.module);
        drop((a, b));
        assert!(weak.upgrade().is_none(), "a module no key uses is unloaded");
    }
}
