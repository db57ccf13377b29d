//! Minting and hashing of bearer tokens, refresh tokens, device codes and
//! user codes.
//!
//! Invariant: only keyed hashes ([`TokenHash`]) are ever stored. A token is
//! looked up by recomputing its hash, so a database dump holds nothing that
//! can be presented to the server.

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use std::fmt;

use subtle::ConstantTimeEq as _;

use crate::random::{Random, bytes};
use crate::secret::Secret;

/// Bytes in access and refresh tokens. 34 bytes encode to 48 base64
/// characters ending in `==`, which real clients (pyvenafi) test for before
/// choosing the `Authorization: Bearer` header.
pub const TOKEN_BYTES: usize = 34;
/// Random bytes in a token of the grant-keyed layout ([`Locator`]): 128 bits.
pub const TOKEN_RANDOM_BYTES: usize = 16;
/// Bytes of the locator's tag: a MAC under the server key that makes a
/// locator unforgeable without the key (2⁻⁴⁸ per guess).
pub const LOCATOR_TAG_BYTES: usize = 6;
/// Random bytes in a device code (RFC 8628 §5.2: high entropy).
pub const DEVICE_CODE_BYTES: usize = 32;
/// The user-code alphabet: consonants only, no vowels to spell words with,
/// no look-alikes (RFC 8628 §6.1).
pub const USER_CODE_ALPHABET: &[u8; 20] = b"BCDFGHJKLMNPQRSTVWXZ";
/// Letters in a user code: 20^8 ≈ 2^34.6 codes.
pub const USER_CODE_LEN: usize = 8;

/// What a hash is of. The purpose goes into the MAC so a refresh token can
/// never be found by looking it up as an access token, and so on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenKind {
    Access,
    Refresh,
    DeviceCode,
    UserCode,
}

impl TokenKind {
    fn label(self) -> &'static [u8] {
        match self {
            TokenKind::Access => b"strongroom/access-token/v1",
            TokenKind::Refresh => b"strongroom/refresh-token/v1",
            TokenKind::DeviceCode => b"strongroom/device-code/v1",
            TokenKind::UserCode => b"strongroom/user-code/v1",
        }
    }
}

/// The server key under which tokens are hashed (HMAC-SHA256).
#[derive(Clone)]
pub struct TokenKey([u8; 32]);

impl TokenKey {
    pub fn new(key: [u8; 32]) -> Self {
        TokenKey(key)
    }

    /// The keyed hash under which a token of `kind` is stored.
    pub fn hash(&self, kind: TokenKind, token: &str) -> TokenHash {
        TokenHash(crate::mac::hmac_sha256_of(&self.0, &[kind.label(), &[0], token.as_bytes()]))
    }

    /// The tag of `kind`'s locator `at`: an access token's locator is no
    /// refresh token's, so holding one gives no locator of the other kind.
    fn locator_tag(&self, kind: TokenKind, at: Locator) -> [u8; LOCATOR_TAG_BYTES] {
        let mac = crate::mac::hmac_sha256_of(
            &self.0,
            &[b"strongroom/token-locator/v1\0", kind.label(), &[0], &at.slot.to_be_bytes(), &at.generation.to_be_bytes()],
        );
        let mut tag = [0u8; LOCATOR_TAG_BYTES];
        tag.copy_from_slice(&mac[..LOCATOR_TAG_BYTES]);
        tag
    }

    /// A new token of `kind` for the pair `at`: standard padded base64 of
    /// the locator, its tag and [`TOKEN_RANDOM_BYTES`] random bytes.
    pub fn mint_at(&self, rng: &dyn Random, kind: TokenKind, at: Locator) -> Secret {
        let mut raw = [0u8; TOKEN_BYTES];
        raw[..8].copy_from_slice(&at.slot.to_be_bytes());
        raw[8..12].copy_from_slice(&at.generation.to_be_bytes());
        raw[12..18].copy_from_slice(&self.locator_tag(kind, at));
        raw[18..].copy_from_slice(&bytes::<TOKEN_RANDOM_BYTES>(rng));
        Secret::new(STANDARD.encode(raw))
    }

    /// A token of `kind` as presented: its hash and its locator. `None` for
    /// a token without a locator this server tagged, which no grant keeps:
    /// it is refused like any unknown token, without a read.
    pub fn presented(&self, kind: TokenKind, token: &str) -> Option<Presented> {
        self.locate(kind, token).map(|at| Presented { hash: self.hash(kind, token), at })
    }

    /// The locator a presented token of `kind` carries, if this server
    /// tagged it; `None` for anything else (garbage, another server's token,
    /// or a token of the layout before locators, whose grants migration 0014
    /// ended).
    pub fn locate(&self, kind: TokenKind, token: &str) -> Option<Locator> {
        let raw = STANDARD.decode(token).ok()?;
        if raw.len() != TOKEN_BYTES {
            return None;
        }
        let slot = i64::from_be_bytes(raw.get(..8)?.try_into().ok()?);
        let generation = u32::from_be_bytes(raw.get(8..12)?.try_into().ok()?);
        let at = Locator { slot, generation };
        let tag = raw.get(12..18)?;
        (slot > 0 && bool::from(tag.ct_eq(&self.locator_tag(kind, at)))).then_some(at)
    }
}

impl fmt::Debug for TokenKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TokenKey(<redacted>)")
    }
}

/// Where an access or refresh token belongs: its grant's slot (a random
/// 63-bit number the grant is stored under) and the generation of the token
/// pair it was issued with. Carried in the token itself, in the clear but
/// tagged under the server key, so a token is found by its grant's row
/// without any index of tokens; what makes it work is still the keyed hash
/// of the whole token, stored in that row.
///
/// Layout of the 34 bytes: slot (8, big-endian), generation (4), tag (6),
/// random (16).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Locator {
    pub slot: i64,
    pub generation: u32,
}

/// A presented access or refresh token, as the store looks it up: the
/// keyed hash of the whole token, and the [`Locator`] it carries (the row
/// it is found in; the hash decides).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Presented {
    pub hash: TokenHash,
    pub at: Locator,
}

/// A new grant's slot: a random positive 63-bit number (the store refuses a
/// duplicate, with a chance of about n/2⁶³ for n grants).
pub fn new_slot(rng: &dyn Random) -> i64 {
    let v = i64::from_be_bytes(bytes::<8>(rng)) & i64::MAX;
    v.max(1)
}

/// A stored token hash. Equality is on hashes, which is safe to compare
/// directly: finding a hash's preimage is what an attacker would need.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct TokenHash(pub [u8; 32]);

impl TokenHash {
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    pub fn from_slice(b: &[u8]) -> Option<Self> {
        <[u8; 32]>::try_from(b).ok().map(TokenHash)
    }

    /// A short, non-secret handle for logs and admin listings.
    pub fn short(&self) -> String {
        crate::hex::encode(&self.0[..4])
    }
}

impl fmt::Debug for TokenHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TokenHash({}…)", self.short())
    }
}

/// A new device code: unpadded base64url of [`DEVICE_CODE_BYTES`] bytes.
pub fn mint_device_code(rng: &dyn Random) -> Secret {
    Secret::new(URL_SAFE_NO_PAD.encode(bytes::<DEVICE_CODE_BYTES>(rng)))
}

/// A new user code in its canonical form: eight letters, no dash.
/// Rejection sampling keeps every letter uniform over the alphabet.
pub fn mint_user_code(rng: &dyn Random) -> Secret {
    let mut out = String::with_capacity(USER_CODE_LEN);
    while out.len() < USER_CODE_LEN {
        let mut buf = [0u8; 16];
        rng.fill(&mut buf);
        for b in buf {
            // 240 = 12 * 20: bytes at or above it would bias the low letters.
            if b < 240 && out.len() < USER_CODE_LEN {
                out.push(char::from(USER_CODE_ALPHABET[usize::from(b % 20)]));
            }
        }
    }
    Secret::new(out)
}

/// The user code as shown to people: `BCDF-GHJK`.
pub fn display_user_code(canonical: &str) -> String {
    if canonical.len() == USER_CODE_LEN && canonical.is_ascii() {
        format!("{}-{}", &canonical[..4], &canonical[4..])
    } else {
        canonical.to_owned()
    }
}

/// Reads a user code as a person may type it: any case, with or without the
/// dash, spaces or other punctuation. Returns the canonical form, or `None`
/// when what is left is not eight letters of the alphabet.
pub fn normalize_user_code(input: &str) -> Option<String> {
    if input.len() > 64 {
        return None;
    }
    let mut out = String::with_capacity(USER_CODE_LEN);
    for c in input.chars() {
        if c.is_ascii_alphanumeric() {
            let u = c.to_ascii_uppercase();
            if !USER_CODE_ALPHABET.contains(&(u as u8)) || out.len() == USER_CODE_LEN {
                return None;
            }
            out.push(u);
        } else if !(c.is_ascii_punctuation() || c.is_whitespace()) {
            return None;
        }
    }
    (out.len() == USER_CODE_LEN).then_some(out)
}

/// Cheap shape check before hashing a presented bearer or refresh token, so
/// that garbage is refused without touching the database.
pub fn looks_like_token(s: &str) -> bool {
    s.len() == 48 && s.ends_with("==") && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"+/=".contains(&b))
}

/// Shape check for a presented device code.
pub fn looks_like_device_code(s: &str) -> bool {
    s.len() == 43 && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashSet;
    use std::sync::Mutex;

    /// Stored hashes must not change with the HMAC crate's version: the
    /// expected value is HMAC-SHA256 computed outside Rust (Python's `hmac`).
    #[test]
    fn stored_token_hashes_are_stable() {
        let h = TokenKey::new([7; 32]).hash(TokenKind::Refresh, "a refresh token");
        assert_eq!(crate::hex::encode(&h.0), "0e7c9f59c004084edde66134bd912f5d53d5fa89fe8be807a8cfd6e17b742583");
    }

    /// Deterministic test randomness (xorshift); not for production.
    #[derive(Debug)]
    struct XorShift(Mutex<u64>);
    impl Random for XorShift {
        fn fill(&self, dest: &mut [u8]) {
            let mut s = self.0.lock().unwrap();
            for b in dest {
                *s ^= *s << 13;
                *s ^= *s >> 7;
                *s ^= *s << 17;
                *b = (*s >> 24) as u8;
            }
        }
    }

    /// A token without a locator: [`TOKEN_BYTES`] random bytes, in the shape
    /// of a token (what the layout before locators issued).
    fn random_token(rng: &dyn Random) -> String {
        STANDARD.encode(bytes::<TOKEN_BYTES>(rng))
    }

    #[test]
    fn tokens_have_the_shape_real_clients_expect() {
        let rng = XorShift(Mutex::new(0x9e37_79b9_7f4a_7c15));
        let at = Locator { slot: new_slot(&rng), generation: 0 };
        let t = TokenKey::new([1; 32]).mint_at(&rng, TokenKind::Access, at);
        assert_eq!(t.expose().len(), 48);
        assert!(t.expose().ends_with("=="));
        assert!(looks_like_token(t.expose()));
        let d = mint_device_code(&rng);
        assert!(looks_like_device_code(d.expose()));
    }

    #[test]
    fn minted_values_do_not_repeat() {
        let rng = XorShift(Mutex::new(42));
        let (key, at) = (TokenKey::new([1; 32]), Locator { slot: 1, generation: 0 });
        let mut seen = HashSet::new();
        for _ in 0..10_000 {
            assert!(seen.insert(key.mint_at(&rng, TokenKind::Refresh, at).expose().to_owned()));
        }
    }

    #[test]
    fn user_codes_use_only_the_alphabet_and_normalise() {
        let rng = XorShift(Mutex::new(7));
        for _ in 0..1000 {
            let c = mint_user_code(&rng);
            assert_eq!(c.expose().len(), 8);
            assert!(c.expose().bytes().all(|b| USER_CODE_ALPHABET.contains(&b)));
            let shown = display_user_code(c.expose());
            assert_eq!(normalize_user_code(&shown).as_deref(), Some(c.expose()));
            assert_eq!(normalize_user_code(&shown.to_lowercase()).as_deref(), Some(c.expose()));
            let spaced = format!(" {} {} ", &shown[..4], &shown[5..]);
            assert_eq!(normalize_user_code(&spaced).as_deref(), Some(c.expose()));
        }
        assert_eq!(normalize_user_code("BCDF-GHJ"), None);
        assert_eq!(normalize_user_code("BCDF-GHJKL"), None);
        assert_eq!(normalize_user_code("ABCD-EFGH"), None, "vowels are not in the alphabet");
        assert_eq!(normalize_user_code("BCDF-GHJ\u{e9}"), None);
    }

    #[test]
    fn user_code_letters_are_uniform() {
        let rng = XorShift(Mutex::new(99));
        let mut counts = [0u32; 20];
        for _ in 0..20_000 {
            for b in mint_user_code(&rng).expose().bytes() {
                let i = USER_CODE_ALPHABET.iter().position(|&a| a == b).unwrap();
                counts[i] += 1;
            }
        }
        // 160k letters, 8k expected each; chi-square with 19 dof, p=0.001 → 43.8
        let chi: f64 = counts.iter().map(|&c| (f64::from(c) - 8000.0).powi(2) / 8000.0).sum();
        assert!(chi < 43.8, "chi-square {chi} counts {counts:?}");
    }

    #[test]
    fn locators_are_found_again_and_cannot_be_forged_or_moved() {
        let rng = XorShift(Mutex::new(5));
        let key = TokenKey::new([4; 32]);
        let at = Locator { slot: new_slot(&rng), generation: 7 };
        let t = key.mint_at(&rng, TokenKind::Refresh, at);
        assert!(looks_like_token(t.expose()), "the shape real clients expect: 48 characters ending in ==");
        assert_eq!(key.locate(TokenKind::Refresh, t.expose()), Some(at));
        assert_eq!(key.locate(TokenKind::Access, t.expose()), None, "a refresh token's locator is no access token's");
        assert_eq!(TokenKey::new([5; 32]).locate(TokenKind::Refresh, t.expose()), None, "another server's key");
        // Another generation, same tag: refused (the tag covers slot and generation).
        let mut raw = STANDARD.decode(t.expose()).unwrap();
        raw[11] ^= 1;
        assert_eq!(key.locate(TokenKind::Refresh, &STANDARD.encode(&raw)), None);
        // Random tokens of the old layout are not located (but for 2^-48),
        // so they are not even looked up.
        let old = random_token(&rng);
        assert!(looks_like_token(&old));
        assert_eq!(key.locate(TokenKind::Refresh, &old), None);
        assert_eq!(key.presented(TokenKind::Refresh, &old), None);
        assert_eq!(key.locate(TokenKind::Refresh, "not base64 at all =="), None);
        let p = key.presented(TokenKind::Refresh, t.expose()).unwrap();
        assert_eq!((p.hash, p.at), (key.hash(TokenKind::Refresh, t.expose()), at));
        // Two tokens of one pair differ in their random part.
        assert_ne!(key.mint_at(&rng, TokenKind::Refresh, at).expose(), t.expose());
        assert!(new_slot(&rng) > 0);
    }

    #[test]
    fn hashes_depend_on_key_kind_and_token() {
        let k1 = TokenKey::new([1; 32]);
        let k2 = TokenKey::new([2; 32]);
        let a = k1.hash(TokenKind::Access, "x");
        assert_eq!(a, k1.hash(TokenKind::Access, "x"));
        assert_ne!(a, k1.hash(TokenKind::Refresh, "x"));
        assert_ne!(a, k2.hash(TokenKind::Access, "x"));
        assert_ne!(a, k1.hash(TokenKind::Access, "y"));
        assert!(!format!("{k1:?}").contains('1'));
    }

    proptest! {
        #[test]
        fn normalizer_never_panics(s in ".{0,80}") {
            if let Some(c) = normalize_user_code(&s) {
                prop_assert_eq!(c.len(), 8);
            }
        }
    }
}
