//! `[keys]`: which named keys exist besides `Software:Default`, and which one
//! `Add` uses when asked for the default.
//!
//! ```toml
//! [keys]
//! default = "PKCS11:vault"            # optional; Software:Default otherwise
//! [[keys.pkcs11]]
//! name = "vault"                      # the key is PKCS11:vault
//! library = "/usr/lib/softhsm/libsofthsm2.so"
//! token_label = "strongroom"
//! key_label = "strongroom-vault"      # optional; the name otherwise
//! pin_file = "/etc/strongroom/hsm.pin" # or pin_env = "STRONGROOM_HSM_PIN"
//! ```

use serde::Deserialize;
use std::path::PathBuf;

/// The one key of the `Software` driver: the master key.
pub const SOFTWARE_DEFAULT: &str = "Software:Default";
pub const PKCS11_DRIVER: &str = "PKCS11";

/// Whether `name` is the `Software` driver's key (wrapped by the master key).
pub fn is_software(name: &str) -> bool {
    KeyName::parse(name).is_some_and(|k| k.driver == Driver::Software)
}

/// Whether two spellings name the same key (see [`KeyName::parse`]).
pub fn same_key(a: &str, b: &str) -> bool {
    matches!((KeyName::parse(a), KeyName::parse(b)), (Some(a), Some(b)) if a.same(&b))
}

/// The drivers a key name can start with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Driver {
    Software,
    Pkcs11,
}

/// A key name `Driver:Name`, read by [`KeyName::parse`], the one function
/// that reads key names (`Keyname`, `newkeyname`, `[keys]`, names stored
/// with data keys and entries).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyName {
    pub driver: Driver,
    /// As written (spaces around it removed).
    pub name: String,
}

impl KeyName {
    /// `Driver:Name` with spaces around the whole ignored; the driver
    /// (`Software` or `PKCS11`) in any case; the name 1 to 64 letters,
    /// digits, `-`, `_` or `.`. The `Software` driver has one key,
    /// `Default`. `None` for anything else.
    pub fn parse(s: &str) -> Option<KeyName> {
        let (driver, name) = s.trim().split_once(':')?;
        let driver = if driver.eq_ignore_ascii_case("Software") {
            Driver::Software
        } else if driver.eq_ignore_ascii_case(PKCS11_DRIVER) {
            Driver::Pkcs11
        } else {
            return None;
        };
        if !valid_short_name(name) || (driver == Driver::Software && !name.eq_ignore_ascii_case("Default")) {
            return None;
        }
        let name = if driver == Driver::Software { "Default".to_owned() } else { name.to_owned() };
        Some(KeyName { driver, name })
    }

    /// The same key: the same driver, names equal but for ASCII case.
    pub fn same(&self, other: &KeyName) -> bool {
        self.driver == other.driver && self.name.eq_ignore_ascii_case(&other.name)
    }
}

impl std::fmt::Display for KeyName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let driver = match self.driver {
            Driver::Software => "Software",
            Driver::Pkcs11 => PKCS11_DRIVER,
        };
        write!(f, "{driver}:{}", self.name)
    }
}

/// `[keys]` as written.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawKeys {
    pub default: Option<String>,
    #[serde(default)]
    pub pkcs11: Vec<RawPkcs11Key>,
}

/// `[[keys.pkcs11]]` as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawPkcs11Key {
    pub name: String,
    pub library: PathBuf,
    pub token_label: String,
    pub key_label: Option<String>,
    pub pin_file: Option<PathBuf>,
    pub pin_env: Option<String>,
}

/// The validated `[keys]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeysConfig {
    /// Canonical name of the default key.
    pub default: String,
    pub pkcs11: Vec<Pkcs11KeyConfig>,
}

impl Default for KeysConfig {
    fn default() -> Self {
        KeysConfig { default: SOFTWARE_DEFAULT.to_owned(), pkcs11: Vec::new() }
    }
}

/// Where a token's PIN comes from. The PIN itself is read only when the
/// token is opened, and never kept in the configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PinSource {
    File(PathBuf),
    Env(String),
}

/// One key held in a PKCS#11 token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pkcs11KeyConfig {
    /// `PKCS11:<name>`.
    pub name: String,
    pub library: PathBuf,
    pub token_label: String,
    pub key_label: String,
    pub pin: PinSource,
}

/// A key name's `Name` part: 1 to 64 letters, digits, `-`, `_` or `.`.
fn valid_short_name(s: &str) -> bool {
    (1..=64).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
}

impl RawKeys {
    /// Checks every key; `Err` is (setting, message).
    pub fn validate(self) -> Result<KeysConfig, (&'static str, String)> {
        let mut pkcs11: Vec<Pkcs11KeyConfig> = Vec::new();
        for k in self.pkcs11 {
            // `vault` and `PKCS11:vault` both name the key PKCS11:vault.
            let written = if k.name.contains(':') { k.name.clone() } else { format!("{PKCS11_DRIVER}:{}", k.name.trim()) };
            let parsed = match KeyName::parse(&written) {
                Some(n) if n.driver == Driver::Pkcs11 => n,
                _ => return Err(("keys.pkcs11.name", format!("{:?}: 1 to 64 letters, digits, '-', '_' or '.'", k.name))),
            };
            if pkcs11.iter().any(|p| same_key(&p.name, &written)) {
                return Err(("keys.pkcs11.name", format!("{parsed} is configured twice")));
            }
            let (name, short) = (parsed.to_string(), parsed.name);
            let pin = match (k.pin_file, k.pin_env) {
                (Some(f), None) => PinSource::File(f),
                (None, Some(e)) if !e.is_empty() => PinSource::Env(e),
                _ => return Err(("keys.pkcs11.pin_file", format!("{name}: give exactly one of pin_file and pin_env"))),
            };
            if k.token_label.is_empty() || k.token_label.len() > 32 {
                return Err(("keys.pkcs11.token_label", format!("{name}: 1 to 32 characters")));
            }
            let key_label = k.key_label.unwrap_or(short);
            if key_label.is_empty() {
                return Err(("keys.pkcs11.key_label", format!("{name}: must not be empty")));
            }
            pkcs11.push(Pkcs11KeyConfig { name, library: k.library, token_label: k.token_label, key_label, pin });
        }
        let default = match self.default {
            None => SOFTWARE_DEFAULT.to_owned(),
            Some(d) if is_software(&d) => SOFTWARE_DEFAULT.to_owned(),
            Some(d) => match pkcs11.iter().find(|p| same_key(&p.name, &d)) {
                Some(p) => p.name.clone(),
                None => {
                    return Err(("keys.default", format!("{d:?} is not a configured key (Software:Default or a [[keys.pkcs11]] name)")));
                }
            },
        };
        Ok(KeysConfig { default, pkcs11 })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(toml_text: &str) -> RawKeys {
        toml::from_str(toml_text).unwrap()
    }

    #[test]
    fn key_names_are_read_by_one_function() {
        let shown = |s: &str| KeyName::parse(s).map(|k| k.to_string());
        assert_eq!(shown(" software:DEFAULT "), Some(SOFTWARE_DEFAULT.to_owned()));
        assert_eq!(shown("pkcs11:Vault\t"), Some("PKCS11:Vault".to_owned()));
        for bad in ["Software:Other", "Null:Null", "k", "PKCS11:", "PKCS11: vault", "PKCS11:a:b", "PKCS11:a b", ":x", ""] {
            assert_eq!(shown(bad), None, "{bad:?}");
        }
        assert!(same_key(" PKCS11:vault", "pkcs11:VAULT"));
        assert!(!same_key("PKCS11:vault", "PKCS11:vault2"));
        assert!(!same_key("Software:Default", "PKCS11:Default"));
        assert!(is_software("software:default ") && !is_software("PKCS11:x") && !is_software("Software:x"));
    }

    #[test]
    fn names_pins_and_the_default_are_checked() {
        assert_eq!(RawKeys::default().validate().unwrap(), KeysConfig::default());
        let ok =
            raw("default = \"pkcs11:hsm\"\n[[pkcs11]]\nname = \"hsm\"\nlibrary = \"/lib/x.so\"\ntoken_label = \"t\"\npin_env = \"PIN\"\n")
                .validate()
                .unwrap();
        assert_eq!(ok.default, "PKCS11:hsm");
        assert_eq!(ok.pkcs11[0].key_label, "hsm");
        assert_eq!(ok.pkcs11[0].pin, PinSource::Env("PIN".into()));
        let both = raw("[[pkcs11]]\nname = \"hsm\"\nlibrary = \"x\"\ntoken_label = \"t\"\npin_env = \"P\"\npin_file = \"f\"\n");
        assert_eq!(both.validate().unwrap_err().0, "keys.pkcs11.pin_file");
        let twice = raw("[[pkcs11]]\nname = \"a\"\nlibrary = \"x\"\ntoken_label = \"t\"\npin_env = \"P\"\n\
             [[pkcs11]]\nname = \"PKCS11:A\"\nlibrary = \"x\"\ntoken_label = \"t\"\npin_env = \"P\"\n");
        assert!(twice.validate().unwrap_err().1.contains("twice"));
        assert_eq!(raw("default = \"Software:Other\"").validate().unwrap_err().0, "keys.default");
        let bad = raw("[[pkcs11]]\nname = \"a b\"\nlibrary = \"x\"\ntoken_label = \"t\"\npin_env = \"P\"\n");
        assert_eq!(bad.validate().unwrap_err().0, "keys.pkcs11.name");
        assert!(toml::from_str::<RawKeys>("[[pkcs11]]\nname = \"a\"\npin = \"1234\"\n").is_err(), "no PIN in the file");
    }
}
