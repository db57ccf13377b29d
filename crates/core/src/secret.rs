//! A string that must never be printed: tokens, device codes, user codes,
//! passwords.

use std::fmt;
use zeroize::Zeroize;

/// A secret string. `Debug` prints a redaction marker, there is no `Display`
/// and no `PartialEq` (compare hashes, in constant time), and the memory is
/// wiped on drop. Reading it takes an explicit [`Secret::expose`].
#[derive(Clone, Default)]
pub struct Secret(String);

impl Secret {
    pub fn new(s: impl Into<String>) -> Self {
        Secret(s.into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl From<String> for Secret {
    fn from(s: String) -> Self {
        Secret(s)
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

impl Drop for Secret {
    fn drop(&mut self) {
        self.0.zeroize();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_the_value() {
        let s = Secret::new("hunter2-very-secret");
        let shown = format!("{s:?} {:?}", Some(&s));
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(shown.contains("redacted"));
    }
}
