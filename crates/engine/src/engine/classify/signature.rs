//! Normalised failure signatures for repeated-failure escalation (spec §3.4): the message
//! lower-cased, with colour codes, UUIDs, paths and digit runs replaced, so the same failure
//! gives the same signature. Not for: comparing them and deciding what a repeat leads to
//! (`engine::recovery`, its `repeat` rule).

use super::*;

/// The normalized failure signature of spec §3.4 ("Repeated-signature escalation"): two failures
/// with the same signature are the same failure, whatever the ids, paths and numbers in them.
pub fn failure_signature(message: &str, code: Option<FailureCode>) -> String {
    let lower = message.to_lowercase();
    let text = strip_ansi(&lower);
    let text = replace_uuids(&text);
    let text = replace_paths(&text);
    let text = replace_digit_runs(&text);
    let text = squash_whitespace(&text);
    let text: String = text.trim().chars().take(SIGNATURE_MAX_CHARS).collect();
    match code {
        Some(code) => format!("code:{} {text}", code.as_str()).trim().to_string(),
        None => text,
    }
}

/// spec §3.4: signatures are cut to 400 characters before the code prefix.
const SIGNATURE_MAX_CHARS: usize = 400;

/// Removes `ESC [ <digits and ;> m` colour sequences.
fn strip_ansi(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == 0x1b && bytes.get(i + 1) == Some(&b'[') {
            let params = bytes[i + 2..]
                .iter()
                .take_while(|b| b.is_ascii_digit() || **b == b';')
                .count();
            let end = i + 2 + params;
            if bytes.get(end) == Some(&b'm') {
                out.push_str(&text[copied..i]);
                copied = end + 1;
                i = end + 1;
                continue;
            }
        }
        i += 1;
    }
    out.push_str(&text[copied..]);
    out
}

/// `[0-9a-f]{8}-[0-9a-f-]{27}` → `<uuid>`.
fn replace_uuids(text: &str) -> String {
    replace_matches(text, "<uuid>", |bytes, i| {
        let is_hex = |b: &u8| b.is_ascii_digit() || (b'a'..=b'f').contains(b);
        let head = bytes.get(i..i + 8)?;
        let tail = bytes.get(i + 9..i + 36)?;
        (head.iter().all(is_hex)
            && bytes[i + 8] == b'-'
            && tail.iter().all(|b| is_hex(b) || *b == b'-'))
        .then_some(i + 36)
    })
}

/// `/seg/seg[/seg…]` (two or more segments of `[A-Za-z0-9._-]`) → `<path>`.
fn replace_paths(text: &str) -> String {
    let is_seg = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-');
    replace_matches(text, "<path>", |bytes, i| {
        if bytes[i] != b'/' {
            return None;
        }
        let mut j = i;
        let mut segments = 0;
        while bytes.get(j) == Some(&b'/') {
            let len = bytes[j + 1..].iter().take_while(|b| is_seg(b)).count();
            if len == 0 {
                break;
            }
            segments += 1;
            j += 1 + len;
        }
        (segments >= 2).then_some(j)
    })
}

/// `\d+` → `<n>`.
fn replace_digit_runs(text: &str) -> String {
    replace_matches(text, "<n>", |bytes, i| {
        let len = bytes[i..].iter().take_while(|b| b.is_ascii_digit()).count();
        (len > 0).then_some(i + len)
    })
}

/// Scans left to right; wherever `match_end(bytes, i)` returns the end of a match starting at `i`,
/// that span becomes `replacement`. Matches start and end on ASCII bytes, so slicing is safe.
fn replace_matches(
    text: &str,
    replacement: &str,
    match_end: impl Fn(&[u8], usize) -> Option<usize>,
) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut i = 0;
    while i < bytes.len() {
        match match_end(bytes, i) {
            Some(end) if end > i => {
                out.push_str(&text[copied..i]);
                out.push_str(replacement);
                copied = end;
                i = end;
            }
            _ => i += 1,
        }
    }
    out.push_str(&text[copied..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    #[allow(unused_imports)]
    use crate::model::{FailureCategory as C, FailureCode as F};

    #[test]
    fn signatures_normalise_volatile_parts() {
        #[rustfmt::skip]
        let cases: &[(&str, Option<F>, &str)] = &[
            ("Run 3f2a1b4c-1234-5678-9abc-def012345678 failed", None, "run <uuid> failed"),
            ("\u{1b}[31mError\u{1b}[0m: at /home/u/repo/src/a.rs:12:5", None, "error: at <path>:<n>:<n>"),
            ("\u{1b}[31 not a colour", None, "\u{1b}[<n> not a colour"),
            ("  took   1500 ms\n\tretry 2 ", None, "took <n> ms retry <n>"),
            ("see src/a/lib.rs", None, "see src<path>"),
            ("see src/lib.rs", None, "see src/lib.rs"),
            ("see /single", None, "see /single"),
            ("Tests failed", Some(F::TestFailure), "code:test_failure tests failed"),
            ("", Some(F::QuotaFailure), "code:quota_failure"),
            ("", None, ""),
        ];
        for (message, code, expected) in cases {
            assert_eq!(failure_signature(message, *code), *expected, "{message:?}");
        }
        // Same failure, different ids and numbers: same signature.
        assert_eq!(
            failure_signature("timeout after 31s in /tmp/a1/x", None),
            failure_signature("Timeout after 45s in /tmp/b2/y", None),
        );
    }

    #[test]
    fn signatures_are_cut_at_400_characters() {
        let long = "é".repeat(500);
        assert_eq!(failure_signature(&long, None).chars().count(), 400);
        let prefixed = failure_signature(&"x".repeat(500), Some(F::ModelDoomLoop));
        assert_eq!(prefixed.len(), "code:model_doom_loop ".len() + 400);
    }
}
