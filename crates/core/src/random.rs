//! The random source, passed in like the clock.

use std::fmt;

/// Fills buffers with cryptographically secure random bytes. The server's one
/// implementation asks the operating system; tests may script the bytes.
pub trait Random: Send + Sync + fmt::Debug {
    fn fill(&self, dest: &mut [u8]);
}

/// Convenience: a fixed-size array of random bytes.
pub fn bytes<const N: usize>(rng: &dyn Random) -> [u8; N] {
    let mut b = [0u8; N];
    rng.fill(&mut b);
    b
}
