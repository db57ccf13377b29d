//! Strongroom's rules, with no I/O.
//!
//! Everything here is plain data in, plain data out. The clock and the random
//! source are arguments ([`time::Clock`], [`random::Random`]), so the grant
//! state machines can be driven through hours of simulated time in a unit test.
//!
//! Architecture invariant: this crate depends on no async runtime, database,
//! HTTP or TLS crate, and never reads the system clock.
//!
//! - [`grant`]: grants, token issue and access checks; [`grant::device`]
//!   the device-code state machine and `slow_down`; [`grant::refresh`]
//!   rotation, the retry of a lost answer, reuse.
//! - [`token`] (minting, keyed hashes, user codes), [`scope`], [`identity`],
//!   [`integration`] (settings and their overrides).
//! - [`machine`]: the JWT grant's rules (JWS signatures with `ring`,
//!   claims, issuers, mappings) and machine identities.
//! - [`throttle`]: the guessing limits' counters and lockouts.
//! - [`event`]: event kinds and the hash chain.
//! - [`password`] (argon2id).
//! - [`vault`]: `FolderPath`, `Rights`, `Permissions` with inheritance (and
//!   proto's `ResultCode`); [`vault::value`] the values (and proto's date
//!   format); [`vault::crypto`] XChaCha20-Poly1305 sealing with bound
//!   associated data, and lookup hashes.
//! - [`tree`]: the `\VED` tree as objects (DNs, object GUIDs and the roots'
//!   fixed ones, `Config` result codes, name patterns, the `Is…Allowed` flags).
//! - [`cert`]: certificates, the pure part: the product's vault types, key
//!   specifications, folder policies (locked or default, inherited) and the
//!   judgement of a request against them; [`cert::enroll`] the decision on
//!   a request, [`cert::fields`] custom fields, [`cert::names`] the names a
//!   certificate may carry.
//! - [`credential`]: the credential objects' classes (`Credentials/*`),
//!   their private vault types, the value names each class holds, and
//!   `/Date(ms)/` expirations.
//! - [`time`] (proto's `UnixTime`, `Clock`, `ManualClock`), [`random`]
//!   (`Random`), [`secret`] (`Secret`), [`mac`], [`hex`] (proto's).
#![forbid(unsafe_code)]

pub mod cert;
pub mod credential;
pub mod event;
pub mod grant;
pub mod identity;
pub mod integration;
pub mod mac;
pub mod machine;
pub mod password;
pub mod random;
pub mod scope;
pub mod secret;
pub mod throttle;
pub mod time;
pub mod token;
pub mod tree;
pub mod vault;

pub use strongroom_proto::hex;
