//! Nothing the runner holds comes back to the agent (issue 46): every answer a model API sends
//! back through the proxy, and every word the proxy says itself, passes a filter that replaces
//! each secret the runner holds — the model keys of every provider, the forge tokens — in each
//! form an answer may carry it (as it is, JSON-escaped, %-encoded).
//!
//! [`Scrubber`] works on a stream: it holds back only a tail that could still begin a secret
//! (at most the longest form less one byte), so memory stays bounded however long the answer,
//! and nothing waits that cannot be one. A secret is replaced by a filler of the same length
//! (`[REDACTED]****`), so a `content-length` stays true and websocket frames keep their
//! lengths: bytes marked as framing (a frame's header) are passed unread and unchanged, and a
//! secret is found across them. Pure: no I/O.
//!
//! Not for: which secrets (the runner names them: `runner::network`), redacting logs and the
//! state (`redact`).

use std::ops::Range;
use std::sync::Arc;

use memchr::memmem::Finder;

/// Shorter values are not looked for (they would match ordinary text), as in `redact`.
const MIN_LEN: usize = 8;
const MARK: &[u8] = b"[REDACTED]";

/// The secrets an answer must never carry, each in every form it is looked for. Its `Debug`
/// shows none.
#[derive(Clone, Default)]
pub struct Secrets {
    values: Vec<String>,
    forms: Vec<Finder<'static>>,
    longest: usize,
}

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Secrets {{ {} values }}", self.values.len())
    }
}

impl Secrets {
    /// These values (trimmed; shorter than 8 bytes ignored).
    pub fn new(values: impl IntoIterator<Item = String>) -> Secrets {
        let mut values: Vec<String> = values
            .into_iter()
            .map(|v| v.trim().to_string())
            .filter(|v| v.len() >= MIN_LEN)
            .collect();
        values.sort();
        values.dedup();
        let mut forms: Vec<Vec<u8>> = Vec::new();
        for value in &values {
            for form in forms_of(value) {
                if !forms.contains(&form) {
                    forms.push(form);
                }
            }
        }
        let longest = forms.iter().map(Vec::len).max().unwrap_or(0);
        Secrets {
            values,
            forms: forms.iter().map(|f| Finder::new(f).into_owned()).collect(),
            longest,
        }
    }

    /// These and `more`.
    pub fn with(&self, more: impl IntoIterator<Item = String>) -> Secrets {
        Secrets::new(self.values.iter().cloned().chain(more))
    }

    pub fn is_empty(&self) -> bool {
        self.forms.is_empty()
    }

    /// The longest form looked for, in bytes.
    pub fn longest(&self) -> usize {
        self.longest
    }

    /// `text` with every secret replaced by `[REDACTED]` (the proxy's own words).
    pub fn scrub(&self, text: &str) -> String {
        let found = self.found(text.as_bytes());
        if found.is_empty() {
            return text.to_string();
        }
        let mut out = Vec::with_capacity(text.len());
        let mut at = 0;
        for r in found {
            out.extend_from_slice(&text.as_bytes()[at..r.start]);
            out.extend_from_slice(MARK);
            at = r.end;
        }
        out.extend_from_slice(&text.as_bytes()[at..]);
        String::from_utf8_lossy(&out).into_owned()
    }

    /// Whether `bytes` hold a secret.
    pub fn in_bytes(&self, bytes: &[u8]) -> bool {
        self.forms.iter().any(|f| f.find(bytes).is_some())
    }

    /// The ranges of `bytes` holding a secret, in order, overlapping ones merged.
    fn found(&self, bytes: &[u8]) -> Vec<Range<usize>> {
        let mut ranges: Vec<Range<usize>> = Vec::new();
        for form in &self.forms {
            let len = form.needle().len();
            ranges.extend(form.find_iter(bytes).map(|at| at..at + len));
        }
        ranges.sort_by_key(|r| r.start);
        let mut merged: Vec<Range<usize>> = Vec::with_capacity(ranges.len());
        for r in ranges {
            match merged.last_mut() {
                Some(last) if r.start < last.end => last.end = last.end.max(r.end),
                _ => merged.push(r),
            }
        }
        merged
    }

    /// Where the tail of `bytes` that could still begin a secret starts (`bytes.len()` when no
    /// tail could).
    fn pending_from(&self, bytes: &[u8]) -> usize {
        let from = bytes.len().saturating_sub(self.longest.saturating_sub(1));
        (from..bytes.len())
            .find(|&at| {
                let tail = &bytes[at..];
                self.forms.iter().any(|f| f.needle().starts_with(tail))
            })
            .unwrap_or(bytes.len())
    }
}

/// The forms `value` is looked for in: as it is, JSON-escaped (with `/` as `\/` too), and
/// %-encoded.
fn forms_of(value: &str) -> Vec<Vec<u8>> {
    let json = serde_json::to_string(value).unwrap_or_default();
    let json = json
        .strip_prefix('"')
        .and_then(|j| j.strip_suffix('"'))
        .unwrap_or(value);
    let percent: String = value
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect();
    let mut forms = vec![
        value.as_bytes().to_vec(),
        json.as_bytes().to_vec(),
        json.replace('/', "\\/").into_bytes(),
        percent.into_bytes(),
    ];
    forms.dedup();
    forms
}

/// The same-length stand-in for a secret of `len` bytes.
fn filler(len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(len);
    if len >= MARK.len() {
        out.extend_from_slice(MARK);
    }
    out.resize(len, b'*');
    out
}

/// A stream's filter: content and framing go in as they arrive, what can no longer be part of
/// a secret comes out, secrets replaced (see the module documentation).
pub struct Scrubber {
    secrets: Arc<Secrets>,
    held: Vec<u8>,
    /// The ranges of `held` that are framing, in order.
    framing: Vec<Range<usize>>,
}

impl Scrubber {
    pub fn new(secrets: Arc<Secrets>) -> Scrubber {
        Scrubber {
            secrets,
            held: Vec::new(),
            framing: Vec::new(),
        }
    }

    /// The next bytes of content.
    pub fn content(&mut self, bytes: &[u8]) {
        self.held.extend_from_slice(bytes);
    }

    /// The next bytes of framing: passed unread and unchanged, in their place.
    pub fn framing(&mut self, bytes: &[u8]) {
        let start = self.held.len();
        self.held.extend_from_slice(bytes);
        match self.framing.last_mut() {
            Some(last) if last.end == start => last.end = self.held.len(),
            _ => self.framing.push(start..self.held.len()),
        }
    }

    /// What may be passed on now.
    pub fn take(&mut self) -> Vec<u8> {
        self.pass(false)
    }

    /// The stream ended: everything left, secrets replaced.
    pub fn finish(&mut self) -> Vec<u8> {
        self.pass(true)
    }

    /// Bytes held back now.
    pub fn held(&self) -> usize {
        self.held.len()
    }

    fn pass(&mut self, all: bool) -> Vec<u8> {
        if self.secrets.is_empty() || self.held.is_empty() {
            self.framing.clear();
            return std::mem::take(&mut self.held);
        }
        if self.framing.is_empty() {
            for r in self.secrets.found(&self.held) {
                let len = r.len();
                self.held[r].copy_from_slice(&filler(len));
            }
            let cut = if all {
                self.held.len()
            } else {
                self.secrets.pending_from(&self.held)
            };
            let rest = self.held.split_off(cut);
            return std::mem::replace(&mut self.held, rest);
        }
        // The content alone, and where each of its bytes is held.
        let mut view = Vec::with_capacity(self.held.len());
        let mut at = Vec::with_capacity(self.held.len());
        let mut next = 0;
        let end = self.held.len();
        for (start, stop) in self
            .framing
            .iter()
            .map(|r| (r.start, r.end))
            .chain(std::iter::once((end, end)))
        {
            view.extend_from_slice(&self.held[next..start]);
            at.extend(next..start);
            next = stop;
        }
        for r in self.secrets.found(&view) {
            for (i, b) in r.clone().zip(filler(r.len())) {
                self.held[at[i]] = b;
            }
        }
        let keep = if all {
            view.len()
        } else {
            self.secrets.pending_from(&view)
        };
        let cut = at.get(keep).copied().unwrap_or(self.held.len());
        let rest = self.held.split_off(cut);
        self.framing = self
            .framing
            .iter()
            .filter(|r| r.start >= cut)
            .map(|r| r.start - cut..r.end - cut)
            .collect();
        std::mem::replace(&mut self.held, rest)
    }
}

#[cfg(test)]
mod tests;
