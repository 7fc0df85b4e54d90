//! Small text matchers shared by the rules that read free text (failure classification, quota
//! detection): whole words and phrases with ASCII word boundaries (as JavaScript's `\b`), never
//! the inside of a word (issue 18), word forms built from parts, and whitespace squashing. Pure
//! functions over `&str`. Not for: any rule (`engine::classify`, `quota.rs`, `agent_config.rs`
//! hold the phrases and what they mean).

pub fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

pub fn starts_word(bytes: &[u8], at: usize) -> bool {
    at == 0 || !is_word_byte(bytes[at - 1])
}

pub fn ends_word(bytes: &[u8], end: usize) -> bool {
    bytes.get(end).is_none_or(|b| !is_word_byte(*b))
}

/// Any of `phrases` in `text`, as whole words ([`has_phrase`]).
pub fn contains_any(text: &str, phrases: &[&str]) -> bool {
    phrases.iter().any(|p| has_phrase(text, p))
}

/// Every one of `phrases` in `text`, as whole words ([`has_phrase`]).
pub fn contains_all(text: &str, phrases: &[&str]) -> bool {
    phrases.iter().all(|p| has_phrase(text, p))
}

/// `phrase` in `text` as whole words (issue 18): where the phrase begins (ends) with a letter,
/// digit or `_`, the text before (after) it must not be one, so "expected" is not found in
/// "unexpected" nor "env" in "environment". A phrase edge that is punctuation (`/login`,
/// `package.json`) needs no boundary.
pub fn has_phrase(text: &str, phrase: &str) -> bool {
    let bytes = text.as_bytes();
    let p = phrase.as_bytes();
    let (Some(first), Some(last)) = (p.first(), p.last()) else {
        return false;
    };
    text.match_indices(phrase).any(|(at, m)| {
        (!is_word_byte(*first) || starts_word(bytes, at))
            && (!is_word_byte(*last) || ends_word(bytes, at + m.len()))
    })
}

/// `text` after the first `needle`.
pub fn after<'a>(text: &'a str, needle: &str) -> Option<&'a str> {
    text.find(needle).map(|at| &text[at + needle.len()..])
}

/// `\b<word>\b` somewhere in `text`.
pub fn has_word(text: &str, word: &str) -> bool {
    let bytes = text.as_bytes();
    text.match_indices(word)
        .any(|(at, m)| starts_word(bytes, at) && ends_word(bytes, at + m.len()))
}

pub fn any_word(text: &str, words: &[&str]) -> bool {
    words.iter().any(|w| has_word(text, w))
}

/// Any word built by [`combine`] from one of `forms`.
pub fn any_word_form(text: &str, forms: &[&[&[&str]]]) -> bool {
    forms
        .iter()
        .any(|parts| combine(parts).iter().any(|w| has_word(text, w)))
}

/// `\b<prefix>` somewhere in `text`.
pub fn has_word_prefix(text: &str, prefix: &str) -> bool {
    let bytes = text.as_bytes();
    text.match_indices(prefix)
        .any(|(at, _)| starts_word(bytes, at))
}

/// Every concatenation of one choice per part: `[["a"], ["", "-"], ["b"]]` → `["ab", "a-b"]`.
pub fn combine(parts: &[&[&str]]) -> Vec<String> {
    parts.iter().fold(vec![String::new()], |acc, choices| {
        acc.iter()
            .flat_map(|head| choices.iter().map(move |c| format!("{head}{c}")))
            .collect()
    })
}

/// Runs of whitespace become one space.
pub fn squash_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
