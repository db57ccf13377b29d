//! A certificate authority's key in a PKCS#11 token (SoftHSM2): made there
//! through the key ring (ECDSA P-256, RSA 2048), it signs (ring verifies the
//! signature against the public key the token gives), and its private half
//! cannot be read out (sensitive, never extractable: `C_GetAttributeValue`
//! of its secret part answers `CKR_ATTRIBUTE_SENSITIVE`).
//!
//! SoftHSM2 finds its tokens through `SOFTHSM2_CONF`, which this process
//! cannot set for itself (`set_var` is unsafe): the test makes a token, then
//! runs itself again in a child process of this test binary with the
//! variable set, which does the checks. Skips loudly without SoftHSM2, and
//! fails instead under `STRONGROOM_REQUIRE_ALL_TESTS=1`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::process::{Command, Stdio};

use strongroom_keyring::settings::{KeysConfig, PinSource, Pkcs11KeyConfig, SOFTWARE_DEFAULT};
use strongroom_keyring::{KeyRing, SigningAlgorithm};

const TOKEN: &str = "ca-test";
const PIN: &str = "ca-test-pin-1234";
const LABEL: &str = "strongroom CA test";
const RSA_LABEL: &str = "strongroom CA rsa test";
const CHILD: &str = "STRONGROOM_TEST_SIGNING_CHILD";

fn softhsm_module() -> Option<PathBuf> {
    let util = Command::new("softhsm2-util").arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status();
    if !util.is_ok_and(|s| s.success()) {
        return None;
    }
    ["/usr/lib/softhsm/libsofthsm2.so", "/usr/lib/x86_64-linux-gnu/softhsm/libsofthsm2.so", "/usr/local/lib/softhsm/libsofthsm2.so"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
}

#[test]
fn a_signing_key_made_in_softhsm_signs_and_cannot_be_read_out() {
    if let Ok(module) = std::env::var(CHILD) {
        // The child: SOFTHSM2_CONF is set.
        return tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(signs_with_the_token_key(module.into()));
    }
    let Some(module) = softhsm_module() else {
        let why = "SoftHSM2 (softhsm2-util and libsofthsm2.so) is not installed: the token signing test cannot run";
        assert!(std::env::var("STRONGROOM_REQUIRE_ALL_TESTS").as_deref() != Ok("1"), "{why}, and STRONGROOM_REQUIRE_ALL_TESTS=1");
        eprintln!("!!! SKIPPED: {why}");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens");
    std::fs::create_dir(&tokens).unwrap();
    let conf = dir.path().join("softhsm2.conf");
    std::fs::write(&conf, format!("directories.tokendir = {}\nobjectstore.backend = file\nlog.level = ERROR\n", tokens.display())).unwrap();
    let out = Command::new("softhsm2-util")
        .args(["--init-token", "--free", "--label", TOKEN, "--pin", PIN, "--so-pin", "so-pin-1234"])
        .env("SOFTHSM2_CONF", &conf)
        .output()
        .unwrap();
    assert!(out.status.success(), "softhsm2-util: {}", String::from_utf8_lossy(&out.stderr));
    let child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "a_signing_key_made_in_softhsm_signs_and_cannot_be_read_out", "--nocapture", "--test-threads=1"])
        .env("SOFTHSM2_CONF", &conf)
        .env(CHILD, &module)
        .env("STRONGROOM_TEST_SIGNING_PIN", PIN)
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&child.stdout), String::from_utf8_lossy(&child.stderr));
    assert!(child.status.success() && text.contains("1 passed"), "the child half failed:\n{text}");
}

/// The checks, in the child that runs with `SOFTHSM2_CONF` set.
async fn signs_with_the_token_key(module: PathBuf) {
    let config = KeysConfig {
        default: SOFTWARE_DEFAULT.to_owned(),
        pkcs11: vec![Pkcs11KeyConfig {
            name: "PKCS11:hsm".into(),
            library: module.clone(),
            token_label: TOKEN.into(),
            key_label: "wrapping".into(),
            pin: PinSource::Env("STRONGROOM_TEST_SIGNING_PIN".into()),
        }],
    };
    let ring = KeyRing::without_master_key(&config, &Os);

    // Made in the token: its public point, given again by the signer.
    let (name, point) = ring.create_signing_key("pkcs11:HSM", LABEL, SigningAlgorithm::P256).await.unwrap();
    assert_eq!(name, "PKCS11:hsm");
    assert_eq!((point.len(), point[0]), (65, 0x04), "an uncompressed P-256 point");
    let signer = ring.signer("PKCS11:hsm", LABEL).unwrap();
    assert_eq!(signer.public_key().unwrap(), point);
    // A second key of that label is refused; the software key makes none.
    let again = ring.create_signing_key("PKCS11:hsm", LABEL, SigningAlgorithm::P256).await.unwrap_err();
    assert!(again.to_string().contains("already exists"), "{again}");
    let software = ring.create_signing_key(SOFTWARE_DEFAULT, "x", SigningAlgorithm::P256).await.unwrap_err();
    assert!(software.to_string().contains("keeps no signing keys"), "{software}");

    // It signs: the token's r || s over SHA-256(message) verifies against the point.
    let message = b"tbsCertificate of a leaf";
    let digest = ring::digest::digest(&ring::digest::SHA256, message);
    let raw = tokio::task::spawn_blocking(move || signer.sign_digest(digest.as_ref())).await.unwrap().unwrap();
    assert_eq!(raw.len(), 64);
    ring::signature::UnparsedPublicKey::new(&ring::signature::ECDSA_P256_SHA256_FIXED, &point).verify(message, &raw).unwrap();
    let mut forged = raw.clone();
    forged[10] ^= 1;
    assert!(ring::signature::UnparsedPublicKey::new(&ring::signature::ECDSA_P256_SHA256_FIXED, &point).verify(message, &forged).is_err());

    // An RSA 2048 key: its public key is PKCS #1, and it signs a SHA-256 DigestInfo (PKCS #1 v1.5).
    let bad = ring.create_signing_key("PKCS11:hsm", "x", SigningAlgorithm::Rsa(1024)).await.unwrap_err();
    assert!(bad.to_string().contains("2048, 3072 or 4096"), "{bad}");
    let (_, rsa_public) = ring.create_signing_key("PKCS11:hsm", RSA_LABEL, SigningAlgorithm::Rsa(2048)).await.unwrap();
    assert_eq!(rsa_public[0], 0x30, "an RSAPublicKey SEQUENCE");
    let rsa = ring.signer("PKCS11:hsm", RSA_LABEL).unwrap();
    assert_eq!(rsa.public_key().unwrap(), rsa_public);
    let digest = ring::digest::digest(&ring::digest::SHA256, message);
    let sig = tokio::task::spawn_blocking(move || rsa.sign_digest(digest.as_ref())).await.unwrap().unwrap();
    assert_eq!(sig.len(), 256);
    let verifier = ring::signature::UnparsedPublicKey::new(&ring::signature::RSA_PKCS1_2048_8192_SHA256, &rsa_public);
    verifier.verify(message, &sig).unwrap();
    assert!(verifier.verify(b"another message", &sig).is_err());

    // Neither can be read out: the token says sensitive, never extractable, and refuses the secret's value.
    use cryptoki::context::{CInitializeArgs, CInitializeFlags, Pkcs11};
    use cryptoki::object::{Attribute, AttributeInfo, AttributeType, ObjectClass};
    use cryptoki::session::UserType;
    use cryptoki::types::AuthPin;
    let lib = Pkcs11::new(&module).unwrap();
    let _ = lib.initialize(CInitializeArgs::new(CInitializeFlags::OS_LOCKING_OK));
    let slot = lib
        .get_slots_with_token()
        .unwrap()
        .into_iter()
        .find(|s| lib.get_token_info(*s).is_ok_and(|i| i.label().trim_end() == TOKEN))
        .unwrap();
    let session = lib.open_ro_session(slot).unwrap();
    let _ = session.login(UserType::User, Some(&AuthPin::from(PIN.to_owned())));
    for (label, secret) in [(LABEL, AttributeType::Value), (RSA_LABEL, AttributeType::PrivateExponent)] {
        let found =
            session.find_objects(&[Attribute::Class(ObjectClass::PRIVATE_KEY), Attribute::Label(label.as_bytes().to_vec())]).unwrap();
        assert_eq!(found.len(), 1);
        let attrs = session
            .get_attributes(found[0], &[AttributeType::Sensitive, AttributeType::Extractable, AttributeType::NeverExtractable, secret])
            .unwrap_or_default();
        assert!(attrs.contains(&Attribute::Sensitive(true)), "{label}: {attrs:?}");
        assert!(attrs.contains(&Attribute::Extractable(false)), "{label}: {attrs:?}");
        assert!(attrs.contains(&Attribute::NeverExtractable(true)), "{label}: {attrs:?}");
        assert!(!attrs.iter().any(|a| matches!(a, Attribute::Value(_) | Attribute::PrivateExponent(_))), "{label} was read out: {attrs:?}");
        let info = session.get_attribute_info(found[0], &[secret]).unwrap();
        assert!(matches!(info.as_slice(), [AttributeInfo::Sensitive]), "{label}: C_GetAttributeValue of {secret:?} is refused: {info:?}");
    }
    eprintln!(
        "SIGNING the CA keys in SoftHSM2 (P-256, RSA 2048) sign (verified with ring) and refuse their secret values: sensitive, never extractable"
    );
}

#[derive(Debug)]
struct Os;

impl strongroom_core::random::Random for Os {
    fn fill(&self, dest: &mut [u8]) {
        getrandom::getrandom(dest).unwrap();
    }
}
