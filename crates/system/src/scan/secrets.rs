//! The secrets the runner holds, watched for in what an agent hands back whatever their
//! encoding (issue 48), one added line at a time:
//!
//! - the letters and digits of each file's added lines as one stream (a tail kept between
//!   lines), searched at once for every form of every secret (`encoded::forms`, one
//!   Aho-Corasick automaton): reversed, rot13, hex, base64 and base32 at every alignment,
//!   separators between characters, quotes and line breaks between pieces;
//! - each line's escapes decoded (`%2d`, `\x2d`, `\055`, `&#45;`), and lists of byte codes
//!   (decimal, octal, hex, any separator, over several lines) decoded, then searched the same;
//! - base64 runs that begin as gzip or zlib data does (`H4sI`, `eJ`…), joined over lines,
//!   decoded and inflated (bounded by `encoded::INFLATE_MAX`), then searched;
//! - pieces of a secret (six letters or digits or more each) anywhere in the change, in any
//!   file: once they cover the whole secret, it was split across lines or files.
//!
//! A hit names where (the line it completed on, the lines its pieces came from), never the
//! secret. Secrets with fewer than 16 letters and digits are too guessable to look for
//! encoded (the redactor still finds them written plainly).
//!
//! Not for: the rules that are not about secrets (`scan::rules`), or what a hit does
//! (`scan::Scanner`, `engine::outcome`).

use std::collections::HashMap;

use aho_corasick::AhoCorasick;

use super::encoded::{self, Code};

/// The shortest piece of a secret counted towards covering it.
const PIECE: usize = 6;
/// The longest base64 run kept for inflating (bytes of base64 text).
const RUN_MAX: usize = 6 * 1024 * 1024;

/// One secret found: how it was written, and where else its pieces were.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hit {
    pub how: String,
    /// The line (of the same file) where the match began, when earlier than the line given.
    pub from: Option<u32>,
    /// Where the other pieces of a secret split across places were (`file:line`).
    pub pieces: Vec<String>,
}

/// What is watched for, and what is kept while a change is read.
pub struct Watch {
    automaton: Option<AhoCorasick>,
    hows: Vec<&'static str>,
    longest: usize,
    /// The plain secrets (a line holding one is the redactor's to report).
    plain: Vec<Vec<u8>>,
    /// Per secret, its letters and digits and their reversal: the targets pieces cover.
    targets: Vec<Target>,
    grams: HashMap<[u8; PIECE], Vec<(usize, usize)>>,
    file: FileState,
}

struct Target {
    form: Vec<u8>,
    covered: Vec<bool>,
    left: usize,
    places: Vec<String>,
    how: &'static str,
}

/// What is carried from one line of a file to the next.
#[derive(Default)]
struct FileState {
    /// The tail of the file's letters and digits, and the line each came from.
    tail: Vec<u8>,
    tail_lines: Vec<u32>,
    /// Byte codes read so far, as decimal and as octal, and the line they began on.
    decimal: Vec<u8>,
    octal: Vec<u8>,
    codes_from: u32,
    /// The current base64 run (across lines) and the line it began on.
    run: Vec<u8>,
    run_from: u32,
}

impl Watch {
    pub fn new(secrets: &[String]) -> Watch {
        let mut needles: Vec<Vec<u8>> = Vec::new();
        let mut hows = Vec::new();
        let mut plain = Vec::new();
        let mut targets = Vec::new();
        for secret in secrets {
            let bytes = secret.as_bytes();
            let letters = encoded::alnum(bytes);
            if letters.len() < 16 {
                continue;
            }
            plain.push(bytes.to_vec());
            for (form, how) in encoded::forms(bytes) {
                if !needles.contains(&form) {
                    needles.push(form);
                    hows.push(how);
                }
            }
            let reversed: Vec<u8> = letters.iter().rev().copied().collect();
            for (form, how) in [
                (letters, "split into pieces"),
                (reversed, "reversed, split into pieces"),
            ] {
                targets.push(Target {
                    covered: vec![false; form.len()],
                    left: form.len(),
                    form,
                    places: Vec::new(),
                    how,
                });
            }
        }
        let mut grams: HashMap<[u8; PIECE], Vec<(usize, usize)>> = HashMap::new();
        for (t, target) in targets.iter().enumerate() {
            for (at, w) in target.form.windows(PIECE).enumerate() {
                let mut key = [0u8; PIECE];
                key.copy_from_slice(w);
                grams.entry(key).or_default().push((t, at));
            }
        }
        let longest = needles.iter().map(Vec::len).max().unwrap_or(0);
        Watch {
            automaton: (!needles.is_empty())
                .then(|| AhoCorasick::new(&needles).ok())
                .flatten(),
            hows,
            longest,
            plain,
            targets,
            grams,
            file: FileState::default(),
        }
    }

    /// Whether there is nothing to watch for.
    pub fn is_empty(&self) -> bool {
        self.automaton.is_none()
    }

    /// A new file (or text) starts: what the last one left is looked at, then dropped.
    pub fn end_file(&mut self) -> Vec<(u32, Hit)> {
        let mut hits = Vec::new();
        let from = self.file.run_from;
        if let Some(hit) = self.run_ended() {
            hits.push((from, hit));
        }
        let from = self.file.codes_from;
        if let Some(hit) = self.codes_ended() {
            hits.push((from, hit));
        }
        self.file = FileState::default();
        hits
    }

    /// One added line (`line` of `place`): the secrets it completes, however written.
    pub fn line(&mut self, place: &str, line: u32, text: &[u8]) -> Vec<Hit> {
        let mut hits = Vec::new();
        if self.is_empty() {
            return hits;
        }
        if self
            .plain
            .iter()
            .any(|p| text.windows(p.len()).any(|w| w == p.as_slice()))
        {
            // Written plainly: the redactor names it; the streams start again after it.
            self.file.tail.clear();
            self.file.tail_lines.clear();
            return hits;
        }
        let letters = encoded::alnum(text);
        if let Some(hit) = self.stream(&letters, line) {
            hits.push(hit);
        }
        if text.iter().any(|b| matches!(b, b'%' | b'\\' | b'&')) {
            let decoded = encoded::alnum(&encoded::unescape(text));
            if decoded != letters {
                if let Some(how) = self.search(&decoded) {
                    hits.push(hit(decoded_how("%-encoded or escaped", how)));
                }
            }
        }
        hits.extend(self.codes(text, line));
        hits.extend(self.base64_runs(text, line));
        if let Some(hit) = self.pieces(&letters, &format!("{place}:{line}")) {
            hits.push(hit);
        }
        hits
    }

    /// The first form any secret takes in `letters`, named.
    fn search(&self, letters: &[u8]) -> Option<&'static str> {
        let found = self.automaton.as_ref()?.find(letters)?;
        Some(self.hows[found.pattern().as_usize()])
    }

    /// The file's letters and digits so far, with this line's: a form completed here.
    fn stream(&mut self, letters: &[u8], line: u32) -> Option<Hit> {
        let f = &mut self.file;
        let old = f.tail.len();
        f.tail.extend_from_slice(letters);
        f.tail_lines
            .extend(std::iter::repeat_n(line, letters.len()));
        let found = self
            .automaton
            .as_ref()?
            .find_iter(&f.tail)
            .find(|m| m.end() > old);
        let result = found.map(|m| {
            let began = f.tail_lines[m.start()];
            let how = self.hows[m.pattern().as_usize()];
            let how = match (began < line, how) {
                (true, "as it is") => "split over lines",
                (false, "as it is") => "with characters between its letters",
                (_, how) => how,
            };
            Hit {
                how: how.to_string(),
                from: (began < line).then_some(began),
                pieces: Vec::new(),
            }
        });
        if result.is_some() {
            f.tail.clear();
            f.tail_lines.clear();
        }
        let keep = self.longest.saturating_sub(1);
        if f.tail.len() > keep {
            let cut = f.tail.len() - keep;
            f.tail.drain(..cut);
            f.tail_lines.drain(..cut);
        }
        result
    }

    /// Byte codes of this line added to the file's list: a secret they spell.
    fn codes(&mut self, text: &[u8], line: u32) -> Vec<Hit> {
        let mut hits = Vec::new();
        for token in encoded::codes(text) {
            match token {
                Some(Code { decimal, octal }) => {
                    let f = &mut self.file;
                    if f.decimal.is_empty() && f.octal.is_empty() {
                        f.codes_from = line;
                    }
                    for (value, list) in [(decimal, &mut f.decimal), (octal, &mut f.octal)] {
                        match value {
                            Some(b) => list.push(b),
                            None => list.clear(),
                        }
                    }
                }
                None => hits.extend(self.codes_ended()),
            }
        }
        // Long lists are looked at as they grow, not only when they end.
        if self.file.decimal.len().max(self.file.octal.len()) > 4 * self.longest.max(64) {
            hits.extend(self.codes_ended());
        }
        hits
    }

    fn codes_ended(&mut self) -> Option<Hit> {
        let decimal = std::mem::take(&mut self.file.decimal);
        let octal = std::mem::take(&mut self.file.octal);
        [decimal, octal]
            .iter()
            .filter(|list| list.len() >= 16)
            .find_map(|list| self.search(&encoded::alnum(list)))
            .map(|how| hit(decoded_how("as byte codes", how)))
    }

    /// Base64 runs of this line (quotes and spaces out, joined to the last line's run when it
    /// ran to the end): one that ends and was gzip or zlib data holding a secret.
    fn base64_runs(&mut self, text: &[u8], line: u32) -> Vec<Hit> {
        let mut hits = Vec::new();
        let joined = text
            .iter()
            .copied()
            .filter(|b| !matches!(b, b'"' | b'\'' | b'`' | b' ' | b'\t' | b'\r' | b'\\'));
        for b in joined {
            let in_run = b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'-' | b'_');
            if in_run {
                if self.file.run.is_empty() {
                    self.file.run_from = line;
                }
                if self.file.run.len() < RUN_MAX {
                    self.file.run.push(b);
                }
            } else if !self.file.run.is_empty() {
                let from = self.file.run_from;
                hits.extend(self.run_ended().map(|mut h| {
                    h.from = (from < line).then_some(from);
                    h
                }));
            }
        }
        hits
    }

    fn run_ended(&mut self) -> Option<Hit> {
        let run = std::mem::take(&mut self.file.run);
        if !encoded::compressed_start(&run) {
            return None;
        }
        let inner = encoded::inflate(&encoded::from_base64(&run))?;
        let how = if self
            .plain
            .iter()
            .any(|p| inner.windows(p.len()).any(|w| w == p.as_slice()))
        {
            "as it is"
        } else {
            self.search(&encoded::alnum(&inner))?
        };
        Some(hit(decoded_how(
            "compressed (gzip or zlib) inside base64",
            how,
        )))
    }

    /// Pieces of six letters or digits or more of a secret in `letters`, marked; the secret
    /// they now cover whole, with where its pieces were.
    fn pieces(&mut self, letters: &[u8], place: &str) -> Option<Hit> {
        let mut touched = Vec::new();
        for w in letters.windows(PIECE) {
            let mut key = [0u8; PIECE];
            key.copy_from_slice(w);
            let Some(spots) = self.grams.get(&key) else {
                continue;
            };
            for &(t, at) in spots {
                let target = &mut self.targets[t];
                for c in &mut target.covered[at..at + PIECE] {
                    if !*c {
                        *c = true;
                        target.left -= 1;
                    }
                }
                if !touched.contains(&t) {
                    touched.push(t);
                }
            }
        }
        for t in touched {
            let target = &mut self.targets[t];
            if !target.places.iter().any(|p| p == place) {
                target.places.push(place.to_string());
            }
            if target.left == 0 {
                let mut places = std::mem::take(&mut target.places);
                target.covered.fill(false);
                target.left = target.covered.len();
                places.retain(|p| p != place);
                if places.is_empty() {
                    // Whole on one line: the stream names it better.
                    continue;
                }
                places.truncate(5);
                return Some(Hit {
                    how: target.how.to_string(),
                    from: None,
                    pieces: places,
                });
            }
        }
        None
    }
}

/// How a secret was written when a decoding found it: the decoding, and the form inside
/// when it was not the secret as it is.
fn decoded_how(decoding: &str, how: &str) -> String {
    match how {
        "as it is" => decoding.to_string(),
        other => format!("{decoding} ({other})"),
    }
}

fn hit(how: String) -> Hit {
    Hit {
        how,
        from: None,
        pieces: Vec::new(),
    }
}
