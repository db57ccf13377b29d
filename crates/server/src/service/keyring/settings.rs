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

/// Whether `name` is the `Software` driver's key (wrapped by the master key).
pub fn is_software(name: &str) -> bool {
    name.eq_ignore_ascii_case(SOFTWARE_DEFAULT)
}
pub const PKCS11_DRIVER: &str = "PKCS11";

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
            let short = k.name.strip_prefix("PKCS11:").unwrap_or(&k.name).to_owned();
            if !valid_short_name(&short) {
                return Err(("keys.pkcs11.name", format!("{:?}: 1 to 64 letters, digits, '-', '_' or '.'", k.name)));
            }
            let name = format!("{PKCS11_DRIVER}:{short}");
            if pkcs11.iter().any(|p| p.name.eq_ignore_ascii_case(&name)) {
                return Err(("keys.pkcs11.name", format!("{name} is configured twice")));
            }
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
            Some(d) if d.eq_ignore_ascii_case(SOFTWARE_DEFAULT) => SOFTWARE_DEFAULT.to_owned(),
            Some(d) => match pkcs11.iter().find(|p| p.name.eq_ignore_ascii_case(&d)) {
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
