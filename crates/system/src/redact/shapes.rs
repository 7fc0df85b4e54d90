//! The token shapes a [`super::Redactor`] recognises without being told the value: each scanner
//! finds the byte ranges of one shape (GitHub tokens, `sk-` keys and model-key placeholders, AWS
//! key ids, `Bearer`, `Authorization:`, private key blocks, the value of a secret-named key).
//!
//! Not here: known secret values, merging the ranges and replacing them (the parent module).

use std::ops::Range;

const GITHUB_PREFIXES: [&str; 6] = ["ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"];
/// What a model-key placeholder starts with (`egress`).
pub(super) const PLACEHOLDER_PREFIX: &[u8] = b"opentiger-placeholder-";
const SECRET_KEY_WORDS: [&str; 8] = [
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "API_KEY",
    "APIKEY",
    "PRIVATE_KEY",
    "CREDENTIAL",
];

fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// A word starts at `i`: the byte before (if any) is not a letter, digit or `_`.
fn word_starts_at(bytes: &[u8], i: usize) -> bool {
    i == 0 || !is_word(bytes[i - 1])
}

/// Length of the run starting at `i` of bytes for which `pred` holds.
fn run_len(bytes: &[u8], i: usize, pred: impl Fn(u8) -> bool) -> usize {
    bytes
        .get(i..)
        .map_or(0, |rest| rest.iter().take_while(|&&b| pred(b)).count())
}

/// Random-looking: a digit, or both upper- and lower-case letters. Keeps words like
/// `sk-learn-based-model` or `Bearer authentication`.
fn looks_random(token: &[u8]) -> bool {
    token.iter().any(u8::is_ascii_digit)
        || (token.iter().any(u8::is_ascii_uppercase) && token.iter().any(u8::is_ascii_lowercase))
}

/// Start offsets of `needle` in `bytes`.
fn find_all<'a>(bytes: &'a [u8], needle: &'a [u8]) -> impl Iterator<Item = usize> + 'a {
    bytes
        .windows(needle.len())
        .enumerate()
        .filter(move |(_, w)| *w == needle)
        .map(|(i, _)| i)
}

/// Start offsets of `needle` in `bytes`, ASCII case-insensitively.
fn find_all_ci<'a>(bytes: &'a [u8], needle: &'a [u8]) -> impl Iterator<Item = usize> + 'a {
    let n = needle.len();
    bytes
        .windows(n)
        .enumerate()
        .filter(move |(_, w)| w.eq_ignore_ascii_case(needle))
        .map(|(i, _)| i)
}

/// GitHub tokens (prefix + ≥ 20 word bytes) and `sk-` keys (≥ 20 of `[A-Za-z0-9_-]`).
pub(super) fn scan_prefixed_tokens(bytes: &[u8], out: &mut Vec<Range<usize>>) {
    for prefix in GITHUB_PREFIXES {
        for i in find_all(bytes, prefix.as_bytes()) {
            let n = run_len(bytes, i + prefix.len(), is_word);
            if n >= 20 {
                out.push(i..i + prefix.len() + n);
            }
        }
    }
    for i in find_all(bytes, PLACEHOLDER_PREFIX) {
        let n = run_len(bytes, i + PLACEHOLDER_PREFIX.len(), |b| {
            b.is_ascii_hexdigit()
        });
        if n >= 16 {
            out.push(i..i + PLACEHOLDER_PREFIX.len() + n);
        }
    }
    for i in find_all(bytes, b"sk-") {
        if !word_starts_at(bytes, i) {
            continue; // "task-…", "risk-…"
        }
        let n = run_len(bytes, i + 3, |b| is_word(b) || b == b'-');
        if n >= 20 && looks_random(&bytes[i + 3..i + 3 + n]) {
            out.push(i..i + 3 + n);
        }
    }
}

/// AWS access key ids: `AKIA` (long-term) or `ASIA` (temporary) + exactly 16 of `[0-9A-Z]`.
pub(super) fn scan_aws_key_ids(bytes: &[u8], out: &mut Vec<Range<usize>>) {
    let upper_digit = |b: u8| b.is_ascii_uppercase() || b.is_ascii_digit();
    for prefix in [b"AKIA", b"ASIA"] {
        for i in find_all(bytes, prefix) {
            if word_starts_at(bytes, i)
                && run_len(bytes, i + 4, upper_digit) == 16
                && !bytes.get(i + 20).is_some_and(|&b| is_word(b))
            {
                out.push(i..i + 20);
            }
        }
    }
}

/// `Bearer <token>`: the token (RFC 6750 characters, ≥ 8, random-looking), not the word.
pub(super) fn scan_bearer(bytes: &[u8], out: &mut Vec<Range<usize>>) {
    let token_byte = |b: u8| b.is_ascii_alphanumeric() || b"-._~+/=".contains(&b);
    for i in find_all_ci(bytes, b"bearer") {
        if !word_starts_at(bytes, i) {
            continue;
        }
        let start = i + 6 + run_len(bytes, i + 6, |b| b == b' ' || b == b'\t');
        let n = run_len(bytes, start, token_byte);
        if start > i + 6 && n >= 8 && looks_random(&bytes[start..start + n]) {
            out.push(start..start + n);
        }
    }
}

/// `Authorization: <value>` (also `"Authorization": "<value>"`): the value, up to its closing
/// quote or the end of the line.
pub(super) fn scan_authorization(bytes: &[u8], out: &mut Vec<Range<usize>>) {
    for i in find_all_ci(bytes, b"authorization") {
        if !word_starts_at(bytes, i) {
            continue;
        }
        let mut j = i + b"authorization".len();
        j += run_len(bytes, j, |b| b == b'"' || b == b'\'');
        j += run_len(bytes, j, |b| b == b' ' || b == b'\t');
        if bytes.get(j) != Some(&b':') && bytes.get(j) != Some(&b'=') {
            continue;
        }
        j += 1;
        j += run_len(bytes, j, |b| b == b' ' || b == b'\t');
        let quote = bytes.get(j).copied().filter(|&b| b == b'"' || b == b'\'');
        if quote.is_some() {
            j += 1;
        }
        let n = run_len(bytes, j, |b| match quote {
            Some(q) => b != q && b != b'\n',
            None => b != b'\n' && b != b'\r' && b != b'"' && b != b'\'',
        });
        let value = &bytes[j..j + n];
        if !value.iter().all(u8::is_ascii_whitespace) {
            out.push(j..j + n);
        }
    }
}

/// `-----BEGIN … PRIVATE KEY-----` through the matching `-----END … PRIVATE KEY-----`, or to the
/// end of the text when the end was cut off.
pub(super) fn scan_private_keys(bytes: &[u8], out: &mut Vec<Range<usize>>) {
    const BEGIN: &[u8] = b"-----BEGIN ";
    const TAIL: &[u8] = b"PRIVATE KEY-----";
    let mut from = 0;
    while let Some(i) = find_all(&bytes[from..], BEGIN).next().map(|i| i + from) {
        let line_end = i + run_len(bytes, i, |b| b != b'\n');
        let header = &bytes[i..line_end];
        if !header.windows(TAIL.len()).any(|w| w == TAIL) {
            from = i + BEGIN.len();
            continue;
        }
        let end = find_all(&bytes[line_end..], b"-----END ")
            .map(|k| k + line_end)
            .find_map(|k| {
                let close = k + run_len(bytes, k, |b| b != b'\n');
                bytes[k..close]
                    .windows(TAIL.len())
                    .position(|w| w == TAIL)
                    .map(|p| k + p + TAIL.len())
            })
            .unwrap_or(bytes.len());
        out.push(i..end);
        from = end;
    }
}

/// `KEY=value`, `key: value`, `"key": "value"` where the key names a secret: the value only.
pub(super) fn scan_key_values(bytes: &[u8], out: &mut Vec<Range<usize>>) {
    let key_byte = |b: u8| is_word(b) || b == b'-' || b == b'.';
    for (sep, &c) in bytes.iter().enumerate() {
        if c != b'=' && c != b':' {
            continue;
        }
        // Comparisons (`==`, `!=`, `<=`) and `::` paths are not assignments.
        let prev = sep.checked_sub(1).map(|p| bytes[p]);
        let next = bytes.get(sep + 1).copied();
        if next == Some(b'=')
            || next == Some(b':')
            || matches!(prev, Some(b'=' | b'!' | b'<' | b'>' | b':'))
        {
            continue;
        }
        // The key: left of optional blanks and an optional closing quote.
        let mut k = sep;
        while k > 0 && (bytes[k - 1] == b' ' || bytes[k - 1] == b'\t') {
            k -= 1;
        }
        if k > 0 && (bytes[k - 1] == b'"' || bytes[k - 1] == b'\'') {
            k -= 1;
        }
        let key_end = k;
        while k > 0 && key_byte(bytes[k - 1]) {
            k -= 1;
        }
        if k == key_end || !names_a_secret(&bytes[k..key_end]) {
            continue;
        }
        if let Some(value) = value_after(bytes, sep + 1) {
            out.push(value);
        }
    }
}

fn names_a_secret(key: &[u8]) -> bool {
    let key: String = key
        .iter()
        .map(|&b| {
            if b == b'-' {
                '_'
            } else {
                char::from(b.to_ascii_uppercase())
            }
        })
        .collect();
    SECRET_KEY_WORDS.iter().any(|w| key.contains(w))
}

/// Length of a quoted string's content starting at `i`, up to the unescaped `quote` or the end
/// of the line.
fn quoted_len(bytes: &[u8], i: usize, quote: u8) -> usize {
    let mut j = i;
    while let Some(&b) = bytes.get(j) {
        match b {
            b'\\' if bytes.get(j + 1).is_some_and(|&next| next != b'\n') => j += 2,
            b'\n' => break,
            _ if b == quote => break,
            _ => j += 1,
        }
    }
    j.min(bytes.len()) - i
}

/// The value starting after blanks at `i`: a quoted string (same line) or a bare word. `None`
/// when there is nothing secret-like there: empty, a number, a boolean, or a `{`/`[` structure.
fn value_after(bytes: &[u8], i: usize) -> Option<Range<usize>> {
    let start = i + run_len(bytes, i, |b| b == b' ' || b == b'\t');
    let (start, n) = match bytes.get(start) {
        Some(&q) if q == b'"' || q == b'\'' => (start + 1, quoted_len(bytes, start + 1, q)),
        Some(b'{' | b'[') | None => return None,
        Some(_) => {
            let stop = b" \t\r\n\"',;&)]}<>";
            (start, run_len(bytes, start, |b| !stop.contains(&b)))
        }
    };
    let value = &bytes[start..start + n];
    let plain = value
        .iter()
        .all(|b| b.is_ascii_digit() || b"+-.".contains(b))
        || [&b"true"[..], b"false", b"null", b"none"]
            .iter()
            .any(|w| value.eq_ignore_ascii_case(w));
    (!plain).then_some(start..start + n)
}
