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
//! The module is loaded and the token opened on first use; one logged-in
//! session per key is kept behind a mutex, and any failure closes it, so
//! the next call opens the token afresh (a token that comes back works
//! again). The PIN is read from its file or variable whenever a session is
//! opened, and is never logged or shown by `Debug`.

use std::fmt;
use std::sync::Mutex;

use cryptoki::context::{CInitializeArgs, CInitializeFlags, Pkcs11};
use cryptoki::error::{Error as CkError, RvError};
use cryptoki::mechanism::Mechanism;
use cryptoki::mechanism::aead::GcmParams;
use cryptoki::object::{Attribute, KeyType, ObjectClass, ObjectHandle};
use cryptoki::session::{Session, UserType};
use cryptoki::slot::Slot;
use cryptoki::types::AuthPin;
use zeroize::Zeroizing;

use strongroom_core::vault::crypto::Key;

use super::settings::{PinSource, Pkcs11KeyConfig};
use super::{DriverError, KeyDriver};

const IV_LEN: usize = 12;
const TAG_BITS: u64 = 128;

/// One configured key in a token.
pub struct Pkcs11Key {
    config: Pkcs11KeyConfig,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    module: Option<Pkcs11>,
    session: Option<Session>,
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

/// A PKCS#11 failure as a short text: the function and its return value.
fn ck(e: CkError) -> DriverError {
    DriverError(match e {
        CkError::Pkcs11(rv, function) => format!("{function:?} failed: {rv:?}"),
        CkError::LibraryLoading(e) => format!("loading the PKCS#11 module: {e}"),
        other => format!("PKCS#11: {other:?}"),
    })
}

impl Pkcs11Key {
    pub fn new(config: Pkcs11KeyConfig) -> Pkcs11Key {
        Pkcs11Key { config, state: Mutex::new(State::default()) }
    }

    fn pin(&self) -> Result<AuthPin, DriverError> {
        let raw = match &self.config.pin {
            PinSource::File(p) => Zeroizing::new(
                std::fs::read_to_string(p).map_err(|e| DriverError(format!("reading the PIN file {}: {}", p.display(), e.kind())))?,
            ),
            PinSource::Env(v) => Zeroizing::new(std::env::var(v).map_err(|_| DriverError(format!("the PIN variable {v} is not set")))?),
        };
        let pin = raw.trim_end_matches(['\n', '\r']);
        if pin.is_empty() {
            return Err(DriverError("the PIN is empty".into()));
        }
        Ok(AuthPin::from(pin.to_owned()))
    }

    fn module(&self, state: &mut State) -> Result<Pkcs11, DriverError> {
        if let Some(m) = &state.module {
            return Ok(m.clone());
        }
        let m = Pkcs11::new(&self.config.library).map_err(ck)?;
        match m.initialize(CInitializeArgs::new(CInitializeFlags::OS_LOCKING_OK)) {
            // Another key on the same module initialised it first.
            Ok(()) | Err(CkError::Pkcs11(RvError::CryptokiAlreadyInitialized, _)) => {}
            Err(e) => return Err(ck(e)),
        }
        state.module = Some(m.clone());
        Ok(m)
    }

    /// Opens a session on the token with our label and logs in.
    fn open(&self, state: &mut State, read_write: bool) -> Result<Session, DriverError> {
        let label = self.config.token_label.as_str();
        let find = |module: &Pkcs11| -> Result<Option<Slot>, DriverError> {
            let slots = module.get_slots_with_token().map_err(ck)?;
            Ok(slots.into_iter().find(|s| module.get_token_info(*s).is_ok_and(|t| t.label().trim_end() == label)))
        };
        let mut module = self.module(state)?;
        let mut slot = find(&module)?;
        if slot.is_none() {
            // A token that went away is not seen again until the module
            // starts afresh (SoftHSM2, and modules that scan slots only in
            // C_Initialize): finalize, initialize, look once more.
            if let Some(m) = state.module.take() {
                let _ = m.finalize();
            }
            module = self.module(state)?;
            slot = find(&module)?;
        }
        let slot = slot.ok_or_else(|| DriverError(format!("no token labelled {label:?} is present")))?;
        let session = if read_write { module.open_rw_session(slot) } else { module.open_ro_session(slot) }.map_err(ck)?;
        match session.login(UserType::User, Some(&self.pin()?)) {
            Ok(()) | Err(CkError::Pkcs11(RvError::UserAlreadyLoggedIn, _)) => Ok(session),
            Err(e) => Err(ck(e)),
        }
    }

    fn find_key(&self, session: &Session) -> Result<Option<ObjectHandle>, DriverError> {
        let template = [
            Attribute::Class(ObjectClass::SECRET_KEY),
            Attribute::Token(true),
            Attribute::Label(self.config.key_label.as_bytes().to_vec()),
        ];
        let found = session.find_objects(&template).map_err(ck)?;
        match found.as_slice() {
            [] => Ok(None),
            [one] => Ok(Some(*one)),
            _ => Err(DriverError(format!("{} keys are labelled {:?}; the label must be unique", found.len(), self.config.key_label))),
        }
    }

    /// Runs `f` with the key on a logged-in session; any failure closes the
    /// session so the next call starts afresh.
    /// A session kept from an earlier call gets one retry on a fresh one
    /// (the token may have restarted, or another key re-initialised the module).
    fn with_key<T>(&self, f: impl Fn(&Session, ObjectHandle) -> Result<T, DriverError>) -> Result<T, DriverError> {
        let mut state = self.state.lock().map_err(|_| DriverError("an earlier call panicked".into()))?;
        let kept = state.session.take();
        let retry = kept.is_some();
        let session = match kept {
            Some(s) => s,
            None => self.open(&mut state, false)?,
        };
        let attempt = |session: &Session| {
            self.find_key(session)
                .and_then(|k| k.ok_or_else(|| DriverError(format!("no key labelled {:?} on the token", self.config.key_label))))
                .and_then(|k| f(session, k))
        };
        let (session, result) = match attempt(&session) {
            Err(_) if retry => {
                drop(session);
                let fresh = self.open(&mut state, false)?;
                let result = attempt(&fresh);
                (fresh, result)
            }
            result => (session, result),
        };
        if result.is_ok() {
            state.session = Some(session);
        }
        result
    }
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
            return Err(DriverError("not a wrapped key of this driver".into()));
        }
        self.with_key(|session, key| {
            let mut iv = [0u8; IV_LEN];
            iv.copy_from_slice(&wrapped[..IV_LEN]);
            let params = GcmParams::new(&mut iv, aad, TAG_BITS.into()).map_err(ck)?;
            let raw = Zeroizing::new(session.decrypt(&Mechanism::AesGcm(params), key, &wrapped[IV_LEN..]).map_err(ck)?);
            let arr: [u8; 32] = raw.as_slice().try_into().map_err(|_| DriverError("not a 32-byte key".into()))?;
            Ok(Key::new(arr))
        })
    }

    fn create(&self) -> Result<(), DriverError> {
        let mut state = self.state.lock().map_err(|_| DriverError("an earlier call panicked".into()))?;
        state.session = None;
        let session = self.open(&mut state, true)?;
        if self.find_key(&session)?.is_some() {
            return Err(DriverError(format!("a key labelled {:?} already exists on the token", self.config.key_label)));
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
    }

    fn describe(&self) -> String {
        format!(
            "PKCS#11 module {}, token {:?}, key label {:?}",
            self.config.library.display(),
            self.config.token_label,
            self.config.key_label
        )
    }
}
