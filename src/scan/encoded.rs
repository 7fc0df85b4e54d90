//! A secret written so that a plain search misses it: reversed, hex, base64 (standard and
//! URL-safe, at each of the three alignments a secret inside a longer encoded text can have),
//! and base64 of the reversed secret or reversed base64; and a line with the joints of a split
//! string (quotes, `+`, `\`, commas, whitespace) taken out, so a secret split over literals shows.
//! Not for: searching a change with them (`scan::Scanner`) or a secret written plainly
//! (`redact::Redactor::secret_in`).

/// The encodings of `secret` worth looking for, with a word naming each. Only long, stable
/// pieces: an aligned base64 variant drops the characters its neighbours could change.
pub fn variants(secret: &str) -> Vec<(Vec<u8>, &'static str)> {
    let bytes = secret.as_bytes();
    let reversed: Vec<u8> = bytes.iter().rev().copied().collect();
    let mut out: Vec<(Vec<u8>, &'static str)> = vec![
        (reversed.clone(), "reversed"),
        (hex(bytes, false), "hex"),
        (hex(bytes, true), "hex"),
        (hex(&reversed, false), "hex of the reversed secret"),
    ];
    for (input, word) in [
        (bytes, "base64"),
        (reversed.as_slice(), "base64 of the reversed secret"),
    ] {
        for url in [false, true] {
            for offset in 0..3 {
                out.push((base64_core(input, offset, url), word));
            }
        }
    }
    for offset in 0..3 {
        let mut core = base64_core(bytes, offset, false);
        core.reverse();
        out.push((core, "reversed base64"));
    }
    out.retain(|(v, _)| v.len() >= 12);
    out.sort();
    out.dedup_by(|a, b| a.0 == b.0);
    out
}

/// Takes out what joins the pieces of a split string: quotes, `+`, `\`, commas, whitespace.
pub fn joined(text: &[u8]) -> impl Iterator<Item = u8> + '_ {
    text.iter().copied().filter(|b| {
        !matches!(
            b,
            b'"' | b'\'' | b'`' | b'+' | b'\\' | b',' | b' ' | b'\t' | b'\r' | b'\n'
        )
    })
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

fn base64(bytes: &[u8], url: bool) -> Vec<u8> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn b64(text: &[u8]) -> String {
        String::from_utf8(base64(text, false)).unwrap()
    }

    #[test]
    fn base64_is_base64() {
        assert_eq!(b64(b""), "");
        assert_eq!(b64(b"f"), "Zg==");
        assert_eq!(b64(b"fo"), "Zm8=");
        assert_eq!(b64(b"foobar"), "Zm9vYmFy");
    }

    /// A secret base64-encoded inside a longer text, at any alignment, contains one of its
    /// variants; so does its reversal, hex and base64 of the reversal.
    #[test]
    fn every_encoding_of_a_secret_contains_a_variant() {
        let secret = "ghp_ENCODEDtest0123456789abcdefghijklmn";
        let found = |text: &[u8]| {
            variants(secret)
                .iter()
                .any(|(v, _)| text.windows(v.len()).any(|w| w == v.as_slice()))
        };
        for prefix in ["", "a", "ab", "token=", "x-access-token:"] {
            let wrapped = format!("{prefix}{secret}\n");
            assert!(
                found(&base64(wrapped.as_bytes(), false)),
                "base64 after {prefix:?}"
            );
            assert!(
                found(&base64(wrapped.as_bytes(), true)),
                "url base64 after {prefix:?}"
            );
            let rev: String = wrapped.chars().rev().collect();
            assert!(
                found(&base64(rev.as_bytes(), false)),
                "base64 of reversed after {prefix:?}"
            );
        }
        let rev: String = secret.chars().rev().collect();
        assert!(found(rev.as_bytes()));
        assert!(found(&hex(secret.as_bytes(), false)));
        assert!(found(&hex(secret.as_bytes(), true)));
        let mut reversed_b64 = base64(secret.as_bytes(), false);
        reversed_b64.reverse();
        assert!(found(&reversed_b64));
        // Split over string literals.
        let split = format!("\"{}\" +\n  \"{}\"", &secret[..10], &secret[10..]);
        let joined: Vec<u8> = joined(split.as_bytes()).collect();
        assert!(joined.windows(secret.len()).any(|w| w == secret.as_bytes()));
        // Unrelated text holds none.
        assert!(!found(b"fn main() { println!(\"hello\"); }"));
    }
}
