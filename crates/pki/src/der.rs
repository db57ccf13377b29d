//! DER by hand, for what rcgen does not write: the PBES2 and PKCS #7 and #12
//! structures, an ECDSA signature from a token's `r || s`, a subject with a
//! repeated attribute, and a certificate's to-be-signed part taken apart and
//! put together again. Definite lengths only, of at most four bytes when read.

fn der_len(n: usize, out: &mut Vec<u8>) {
    if n < 0x80 {
        out.push(n as u8);
    } else {
        let bytes: Vec<u8> = n.to_be_bytes().iter().copied().skip_while(|b| *b == 0).collect();
        out.push(0x80 | bytes.len() as u8);
        out.extend_from_slice(&bytes);
    }
}

/// One element: `tag`, the length of `content`, `content`.
pub(crate) fn tlv(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    der_len(content.len(), &mut out);
    out.extend_from_slice(content);
    out
}

/// A SEQUENCE of `parts` (each a whole element).
pub(crate) fn seq(parts: &[&[u8]]) -> Vec<u8> {
    tlv(0x30, &parts.concat())
}

/// A non-negative INTEGER.
pub(crate) fn der_uint(v: u32) -> Vec<u8> {
    let mut b: Vec<u8> = v.to_be_bytes().iter().copied().skip_while(|b| *b == 0).collect();
    if b.first().is_none_or(|x| x & 0x80 != 0) {
        b.insert(0, 0);
    }
    tlv(0x02, &b)
}

/// One DER element at the start of `der`: its tag, its content and what follows it.
pub(crate) fn read_tlv(der: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let tag = *der.first()?;
    let first = *der.get(1)?;
    let (head, len) = if first < 0x80 {
        (2, usize::from(first))
    } else {
        let k = usize::from(first & 0x7f);
        if k == 0 || k > 4 {
            return None;
        }
        (2 + k, der.get(2..2 + k)?.iter().fold(0usize, |a, b| (a << 8) | usize::from(*b)))
    };
    let end = head.checked_add(len)?;
    Some((tag, der.get(head..end)?, der.get(end..)?))
}

/// The elements one after the other in `content` (whole, with their tags).
pub(crate) fn elements(mut content: &[u8]) -> Option<Vec<&[u8]>> {
    let mut out = Vec::new();
    while !content.is_empty() {
        let (_, _, rest) = read_tlv(content)?;
        out.push(&content[..content.len() - rest.len()]);
        content = rest;
    }
    Some(out)
}
