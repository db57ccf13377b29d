//! Lower-case hexadecimal, as Strongroom writes it (the master key file,
//! event hashes in the log, request ids, the token cache's file name), and
//! its strict reading back.

/// `bytes` as lower-case hexadecimal, two digits a byte.
pub fn encode(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(2 * bytes.len());
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0x0f)]));
    }
    out
}

/// Reads `text`, exactly `2 * out.len()` hexadecimal digits of either case
/// and nothing else (no sign, no space, no prefix), into `out`. False, with
/// `out` in an unspecified state, for anything else.
pub fn decode_into(text: &str, out: &mut [u8]) -> bool {
    let digits = text.as_bytes();
    if digits.len() != 2 * out.len() {
        return false;
    }
    for (byte, pair) in out.iter_mut().zip(digits.chunks_exact(2)) {
        match (digit(pair[0]), digit(pair[1])) {
            (Some(high), Some(low)) => *byte = (high << 4) | low,
            _ => return false,
        }
    }
    true
}

/// Reads exactly `N` bytes' worth of hexadecimal (see [`decode_into`]).
pub fn decode<const N: usize>(text: &str) -> Option<[u8; N]> {
    let mut out = [0u8; N];
    decode_into(text, &mut out).then_some(out)
}

fn digit(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_in_either_case() {
        let bytes = [0x00, 0x01, 0x7f, 0x80, 0xab, 0xff];
        assert_eq!(encode(&bytes), "00017f80abff");
        assert_eq!(decode::<6>("00017f80abff"), Some(bytes));
        assert_eq!(decode::<6>("00017F80ABFF"), Some(bytes));
        assert_eq!(encode(&[]), "");
    }

    #[test]
    fn only_canonical_digits_are_read() {
        // `u8::from_str_radix` takes "+f" as 15: a key file with a sign in it is not a key.
        for bad in ["+f00", "0x00", " 000", "000 ", "00g0", "000", "00000", "-1ff", "ÿÿ"] {
            assert_eq!(decode::<2>(bad), None, "{bad:?}");
        }
    }
}
