//! The encodings an agent can give a secret with nothing but a shell, and the decodings the
//! scan applies to what a change holds (issue 48). Encoding: reversed, rot13, hex (lower and
//! upper), base64 (standard and URL-safe) at each of the 3 alignments a secret can have inside
//! a longer encoded text, base32 at each of its 5, and base64 reversed — each reduced to its
//! letters and digits ([`alnum`]), so separators between characters, quotes, line breaks and
//! `+`-joined pieces fall away on both sides. Decoding: byte codes (decimal, octal, hex, with
//! any separator), escapes (`%2d`, `\x2d`, `\055`, `\u002d`, `&#45;`), base64, and gzip or
//! zlib inside base64 (inflated with a bound).
//!
//! Not for: watching a change with them (`scan::secrets`) or a secret written plainly
//! (`redact::Redactor::secret_in`).

/// The letters and digits of `bytes`, in order: the form every encoding is compared in.
pub fn alnum(bytes: &[u8]) -> Vec<u8> {
    bytes
        .iter()
        .copied()
        .filter(u8::is_ascii_alphanumeric)
        .collect()
}

/// The forms of `secret` worth looking for, each with a word naming how it was written; all
/// reduced to letters and digits, the short ones (under 16) left out.
pub fn forms(secret: &[u8]) -> Vec<(Vec<u8>, &'static str)> {
    let reversed: Vec<u8> = secret.iter().rev().copied().collect();
    let mut out: Vec<(Vec<u8>, &'static str)> = vec![
        (secret.to_vec(), "as it is"),
        (reversed.clone(), "reversed"),
        (rot13(secret), "rot13"),
        (rot13(&reversed), "rot13, reversed"),
        (hex(secret, false), "hex"),
        (hex(secret, true), "hex"),
        (hex(&reversed, false), "hex of the reversed secret"),
        (hex(&reversed, true), "hex of the reversed secret"),
    ];
    for (input, b64, b32) in [
        (secret, "base64", "base32"),
        (
            reversed.as_slice(),
            "base64 of the reversed secret",
            "base32 of the reversed secret",
        ),
    ] {
        for offset in 0..3 {
            for url in [false, true] {
                out.push((base64_core(input, offset, url), b64));
            }
        }
        for offset in 0..5 {
            out.push((base32_core(input, offset), b32));
        }
    }
    for offset in 0..3 {
        let mut core = base64_core(secret, offset, false);
        core.reverse();
        out.push((core, "reversed base64"));
    }
    let mut out: Vec<(Vec<u8>, &'static str)> = out
        .into_iter()
        .map(|(form, how)| (alnum(&form), how))
        .filter(|(form, _)| form.len() >= 16)
        .collect();
    // The first word for a form wins (a hex of digits only is the same in both cases).
    let mut seen = std::collections::HashSet::new();
    out.retain(|(form, _)| seen.insert(form.clone()));
    out
}

pub fn rot13(bytes: &[u8]) -> Vec<u8> {
    bytes
        .iter()
        .map(|&b| match b {
            b'a'..=b'z' => (b - b'a' + 13) % 26 + b'a',
            b'A'..=b'Z' => (b - b'A' + 13) % 26 + b'A',
            other => other,
        })
        .collect()
}

fn hex(bytes: &[u8], upper: bool) -> Vec<u8> {
    let digits: &[u8; 16] = if upper {
        b"0123456789ABCDEF"
    } else {
        b"0123456789abcdef"
    };
    bytes
        .iter()
        .flat_map(|b| [digits[usize::from(b >> 4)], digits[usize::from(b & 15)]])
        .collect()
}

/// The base64 characters of `bytes` that do not depend on what surrounds it when it sits at
/// `offset` (0, 1, 2) bytes past a 3-byte boundary in a longer text.
fn base64_core(bytes: &[u8], offset: usize, url: bool) -> Vec<u8> {
    let mut padded = vec![0u8; offset];
    padded.extend_from_slice(bytes);
    let encoded = base64(&padded, url);
    // Characters covering the padding (and the one shared with it), and the last group's
    // tail (shared with what follows), depend on the neighbours.
    let skip = match offset {
        0 => 0,
        1 => 2,
        _ => 3,
    };
    let whole = (offset + bytes.len()) / 3 * 4;
    if whole <= skip {
        return Vec::new();
    }
    encoded[skip..whole].to_vec()
}

pub fn base64(bytes: &[u8], url: bool) -> Vec<u8> {
    let table: &[u8; 64] = if url {
        b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    } else {
        b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    };
    let mut out = Vec::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        let chars = chunk.len() + 1;
        for i in 0..4 {
            out.push(if i < chars {
                table[((n >> (18 - 6 * i)) & 63) as usize]
            } else {
                b'='
            });
        }
    }
    out
}

/// The base32 characters of `bytes` independent of its neighbours at `offset` (0 to 4) bytes
/// past a 5-byte boundary: whole 8-character groups only, after the one the offset shares.
fn base32_core(bytes: &[u8], offset: usize) -> Vec<u8> {
    const T: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    let mut padded = vec![0u8; offset];
    padded.extend_from_slice(bytes);
    let whole = padded.len() / 5;
    let mut out = Vec::new();
    for group in padded.chunks(5).take(whole).skip(usize::from(offset > 0)) {
        let n = group.iter().fold(0u64, |n, b| n << 8 | u64::from(*b));
        for i in 0..8 {
            out.push(T[((n >> (35 - 5 * i)) & 31) as usize]);
        }
    }
    out
}

/// Bytes from base64 text (either alphabet; what does not fill a whole group is dropped).
pub fn from_base64(text: &[u8]) -> Vec<u8> {
    let value = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return None,
        } as u32)
    };
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    for group in text.chunks_exact(4) {
        let Some(n) = group
            .iter()
            .try_fold(0u32, |n, c| Some(n << 6 | value(*c)?))
        else {
            break;
        };
        out.extend_from_slice(&[(n >> 16) as u8, (n >> 8) as u8, n as u8]);
    }
    out
}

/// The most bytes an inflation may give: enough for any secret hidden in a text, and no more
/// memory than that whatever the agent compressed.
pub const INFLATE_MAX: usize = 4 * 1024 * 1024;

/// The bytes inside gzip or zlib data (`None` when it is neither), at most [`INFLATE_MAX`]:
/// what a bomb gives up to the bound is still looked at.
pub fn inflate(data: &[u8]) -> Option<Vec<u8>> {
    use miniz_oxide::inflate::{decompress_to_vec_with_limit, decompress_to_vec_zlib_with_limit};
    let result = if data.starts_with(&[0x1f, 0x8b, 8]) {
        decompress_to_vec_with_limit(&data[gzip_header(data)?..], INFLATE_MAX)
    } else if data.len() > 2
        && data[0] & 0x0f == 8
        && (u16::from(data[0]) << 8 | u16::from(data[1])) % 31 == 0
    {
        decompress_to_vec_zlib_with_limit(data, INFLATE_MAX)
    } else {
        return None;
    };
    match result {
        Ok(out) => Some(out),
        Err(e) if !e.output.is_empty() => Some(e.output),
        Err(_) => None,
    }
}

/// Where a gzip member's deflate data starts (RFC 1952 §2.3).
fn gzip_header(data: &[u8]) -> Option<usize> {
    let flags = *data.get(3)?;
    let mut at = 10;
    if flags & 4 != 0 {
        let extra = usize::from(*data.get(at)?) | usize::from(*data.get(at + 1)?) << 8;
        at += 2 + extra;
    }
    for bit in [8u8, 16] {
        if flags & bit != 0 {
            at += data.get(at..)?.iter().position(|b| *b == 0)? + 1;
        }
    }
    if flags & 2 != 0 {
        at += 2;
    }
    (at <= data.len()).then_some(at)
}

/// Whether base64 text may be gzip or zlib data: what `H4sI` (gzip) and `eJ`, `eN`, `eF`,
/// `eA` (zlib at each compression level) begin.
pub fn compressed_start(run: &[u8]) -> bool {
    run.len() >= 24
        && (run.starts_with(b"H4sI")
            || [b"eJ", b"eN", b"eF", b"eA"]
                .iter()
                .any(|m| run.starts_with(*m)))
}

/// `text` with its escapes decoded: `%2d`, `\x2d`, `\055`, `\u002d`, `&#45;`, `&#x2d;`.
pub fn unescape(text: &[u8]) -> Vec<u8> {
    let hex_at = |at: usize, n: usize| -> Option<u32> {
        let digits = text.get(at..at + n)?;
        u32::from_str_radix(std::str::from_utf8(digits).ok()?, 16).ok()
    };
    let mut out = Vec::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        let rest = &text[i..];
        let (value, used) = if rest.starts_with(b"%") {
            (hex_at(i + 1, 2), 3)
        } else if rest.starts_with(b"\\x") {
            (hex_at(i + 2, 2), 4)
        } else if rest.starts_with(b"\\u") {
            (hex_at(i + 2, 4), 6)
        } else if rest.starts_with(b"\\")
            && rest.len() >= 4
            && rest[1..4].iter().all(|b| (b'0'..=b'7').contains(b))
        {
            let digits = std::str::from_utf8(&rest[1..4]).unwrap_or("");
            (u32::from_str_radix(digits, 8).ok(), 4)
        } else if rest.starts_with(b"&#") {
            let end = rest.iter().position(|b| *b == b';').filter(|e| *e <= 10);
            let value = end.and_then(|e| {
                let inner = std::str::from_utf8(&rest[2..e]).ok()?;
                match inner.strip_prefix(['x', 'X']) {
                    Some(h) => u32::from_str_radix(h, 16).ok(),
                    None => inner.parse().ok(),
                }
            });
            (value, end.map_or(0, |e| e + 1))
        } else {
            (None, 0)
        };
        match value.and_then(|v| u8::try_from(v).ok()) {
            Some(b) if used > 0 => {
                out.push(b);
                i += used;
            }
            _ => {
                out.push(text[i]);
                i += 1;
            }
        }
    }
    out
}

/// One number of a list of byte codes: its value read in decimal and in octal, where it is a
/// byte that way (`0x2d` and `\x2d` are hex both ways).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Code {
    pub decimal: Option<u8>,
    pub octal: Option<u8>,
}

/// The tokens of `text` that may be byte codes, in order, and whether a word (letters) stood
/// between two of them (`None`: a word, which ends a list of codes).
pub fn codes(text: &[u8]) -> Vec<Option<Code>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < text.len() {
        let b = text[i];
        let hex_prefix = (b == b'0' || b == b'\\')
            && matches!(text.get(i + 1), Some(b'x' | b'X'))
            && text.get(i + 2).is_some_and(u8::is_ascii_hexdigit);
        if hex_prefix {
            let start = i + 2;
            let mut end = start;
            while end < text.len() && end < start + 2 && text[end].is_ascii_hexdigit() {
                end += 1;
            }
            let value = std::str::from_utf8(&text[start..end])
                .ok()
                .and_then(|h| u8::from_str_radix(h, 16).ok());
            out.push(Some(Code {
                decimal: value,
                octal: value,
            }));
            i = end;
        } else if b.is_ascii_digit() {
            let start = i;
            while i < text.len() && text[i].is_ascii_digit() {
                i += 1;
            }
            let digits = std::str::from_utf8(&text[start..i]).unwrap_or("");
            let glued = text.get(i).is_some_and(u8::is_ascii_alphabetic);
            if glued || digits.len() > 4 {
                out.push(None);
            } else {
                out.push(Some(Code {
                    decimal: digits
                        .parse::<u16>()
                        .ok()
                        .and_then(|v| u8::try_from(v).ok()),
                    octal: u16::from_str_radix(digits, 8)
                        .ok()
                        .and_then(|v| u8::try_from(v).ok()),
                }));
            }
        } else if b.is_ascii_alphabetic() {
            while i < text.len() && (text[i].is_ascii_alphanumeric() || text[i] == b'_') {
                i += 1;
            }
            out.push(None);
        } else {
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b64(text: &[u8]) -> String {
        String::from_utf8(base64(text, false)).unwrap()
    }

    #[test]
    fn base64_is_base64_both_ways() {
        assert_eq!(b64(b""), "");
        assert_eq!(b64(b"f"), "Zg==");
        assert_eq!(b64(b"fo"), "Zm8=");
        assert_eq!(b64(b"foobar"), "Zm9vYmFy");
        assert_eq!(from_base64(b"Zm9vYmFy"), b"foobar");
        assert_eq!(from_base64(b"Zm9vYmE"), b"foo");
    }

    /// A secret inside a longer text, at any alignment, encoded any of these ways, holds one of
    /// its forms once both are reduced to letters and digits.
    #[test]
    fn every_encoding_of_a_secret_holds_one_of_its_forms() {
        let secret = b"ghp_ENCODEDtest0123456789abcdefghijklmn";
        let found = |text: &[u8]| {
            let text = alnum(text);
            forms(secret)
                .iter()
                .any(|(v, _)| text.windows(v.len()).any(|w| w == v.as_slice()))
        };
        for prefix in ["", "a", "ab", "abc", "abcd", "token=", "x-access-token:"] {
            let mut wrapped = prefix.as_bytes().to_vec();
            wrapped.extend_from_slice(secret);
            wrapped.push(b'\n');
            let rev: Vec<u8> = wrapped.iter().rev().copied().collect();
            for (text, what) in [
                (base64(&wrapped, false), "base64"),
                (base64(&wrapped, true), "url base64"),
                (base64(&rev, false), "base64 of reversed"),
                (base32(&wrapped), "base32"),
                (base32(&rev), "base32 of reversed"),
                (hex(&wrapped, false), "hex"),
                (hex(&wrapped, true), "HEX"),
            ] {
                assert!(found(&text), "{what} after {prefix:?}");
            }
        }
        let rev: Vec<u8> = secret.iter().rev().copied().collect();
        assert!(found(&rev));
        assert!(found(&rot13(secret)));
        assert!(found(&rot13(&rev)));
        let mut reversed_b64 = base64(secret, false);
        reversed_b64.reverse();
        assert!(found(&reversed_b64));
        // Separators between characters, and lines of 76 (as `base64` wraps them).
        let dotted: Vec<u8> = secret.iter().flat_map(|b| [*b, b'.']).collect();
        assert!(found(&dotted));
        let wrapped: Vec<u8> = base64(secret, false)
            .chunks(7)
            .flat_map(|c| c.iter().copied().chain(*b"\n"))
            .collect();
        assert!(found(&wrapped));
        assert!(!found(b"fn main() { println!(\"hello\"); }"));
    }

    fn base32(bytes: &[u8]) -> Vec<u8> {
        // Whole groups and a padded last one, as `base32` writes it.
        let mut out = base32_core(bytes, 0);
        let rest = bytes.len() % 5;
        if rest > 0 {
            let mut last = bytes[bytes.len() - rest..].to_vec();
            last.resize(5, 0);
            out.extend_from_slice(&base32_core(&last, 0));
        }
        out
    }

    #[test]
    fn escapes_and_byte_codes_decode() {
        assert_eq!(
            unescape(b"sk%2Dant\\x2dapi\\055x\\u002dy&#45;z&#x2d;"),
            b"sk-ant-api-x-y-z-"
        );
        assert_eq!(unescape(b"100% sure \\n"), b"100% sure \\n");
        let got: Vec<Option<Code>> = codes(b"[115, 0x6b, 055] let x9 = 12345");
        assert_eq!(
            got,
            vec![
                Some(Code {
                    decimal: Some(115),
                    octal: Some(77)
                }),
                Some(Code {
                    decimal: Some(0x6b),
                    octal: Some(0x6b)
                }),
                Some(Code {
                    decimal: Some(55),
                    octal: Some(45)
                }),
                None,
                None,
                None,
            ]
        );
    }

    #[test]
    fn gzip_and_zlib_inflate_with_a_bound() {
        let text = b"a secret inside compressed data".repeat(4);
        let deflated = miniz_oxide::deflate::compress_to_vec(&text, 6);
        let mut gzip = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3];
        gzip.extend_from_slice(&deflated);
        gzip.extend_from_slice(&[0; 8]);
        assert_eq!(inflate(&gzip).as_deref(), Some(&text[..]));
        let zlib = miniz_oxide::deflate::compress_to_vec_zlib(&text, 9);
        assert_eq!(inflate(&zlib).as_deref(), Some(&text[..]));
        assert!(compressed_start(&base64(&gzip, false)));
        assert!(compressed_start(&base64(&zlib, false)));
        assert_eq!(inflate(b"plain text"), None);
        let bomb = miniz_oxide::deflate::compress_to_vec_zlib(&vec![0u8; 64 << 20], 9);
        assert_eq!(inflate(&bomb).map(|o| o.len()), Some(INFLATE_MAX));
    }
}
