//! How a run's failure message is shown in one line and a few: the headline (what failed) and
//! the last lines of the output under it (why). A failure message is a headline such as
//! `Verification failed at cargo test [config]:` followed by the command's output, whose last
//! lines hold the cause; cutting the message at a fixed width showed the headline and lost the
//! cause (issue 15).
//!
//! Long text is cut in the middle (`…`), so a long path keeps both ends and a reason after it
//! survives. Pure text functions. Not for: redacting and capping the message before it is
//! stored (the runner, `redact::Redactor::excerpt`): it arrives here redacted already.

/// Widest a shown line gets, in characters.
pub const LINE_WIDTH: usize = 200;
/// Output lines shown under a headline.
pub const TAIL_LINES: usize = 6;

/// `text` of at most `max` characters: when longer, its start and end with `…` between.
pub fn cut_middle(text: &str, max: usize) -> String {
    let count = text.chars().count();
    if count <= max {
        return text.to_string();
    }
    if max < 5 {
        return text.chars().take(max).collect();
    }
    let keep = max - 1;
    let head = keep / 2;
    let tail = keep - head;
    let start: String = text.chars().take(head).collect();
    let end: String = text.chars().skip(count - tail).collect();
    format!("{start}…{end}")
}

/// `text` of at most `max` characters, cut inside its longest word first (a path), so the
/// words around it (the command's flags, the reason) stay whole; else [`cut_middle`].
pub fn fit(text: &str, max: usize) -> String {
    let count = text.chars().count();
    if count <= max {
        return text.to_string();
    }
    let excess = count - max;
    let longest = text
        .split(' ')
        .max_by_key(|w| w.chars().count())
        .unwrap_or_default();
    let len = longest.chars().count();
    if len >= excess + 16 {
        let cut = cut_middle(longest, len - excess);
        return text.replacen(longest, &cut, 1);
    }
    cut_middle(text, max)
}

/// The first non-empty line, cut to [`LINE_WIDTH`] (see [`fit`]). When it only introduces
/// output (it ends with `:`), the last output line is added after it: the cause in one line.
pub fn headline(message: &str) -> String {
    let mut lines = message
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty());
    let Some(first) = lines.next() else {
        return "no output".to_string();
    };
    let last = lines.next_back();
    match last {
        Some(last) if first.ends_with(':') => {
            let cause = fit(last.trim(), LINE_WIDTH / 2);
            let room = LINE_WIDTH - cause.chars().count() - 1;
            format!("{} {cause}", fit(first, room))
        }
        _ => fit(first, LINE_WIDTH),
    }
}

/// The last [`TAIL_LINES`] non-empty lines after the first, each cut in the middle.
pub fn tail(message: &str) -> Vec<String> {
    let rest: Vec<&str> = message
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty())
        .skip(1)
        .collect();
    rest[rest.len().saturating_sub(TAIL_LINES)..]
        .iter()
        .map(|l| fit(l, LINE_WIDTH))
        .collect()
}

/// The line a held change's message introduces its findings with (issue 48).
pub const FINDINGS: &str = "findings:";

/// The findings a held change's message lists (`- file:line: what [rule]` lines after a
/// [`FINDINGS`] line), each whole: shown as their own list, never cut (issue 48).
pub fn findings(message: &str) -> Vec<&str> {
    message
        .lines()
        .skip_while(|l| l.trim() != FINDINGS)
        .skip(1)
        .map_while(|l| l.strip_prefix("- "))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn findings_are_the_listed_lines_whole() {
        let message = format!(
            "held: commit abc (2 findings)\n{FINDINGS}\n- a.txt:3: {} [rule]\n- b: y [r]\nkept at x",
            "long ".repeat(80)
        );
        let got = findings(&message);
        assert_eq!(got.len(), 2);
        assert!(got[0].starts_with("a.txt:3: long") && got[0].ends_with("[rule]"));
        assert_eq!(findings("Verification failed:\n- x"), Vec::<&str>::new());
    }

    #[test]
    fn long_text_keeps_both_ends() {
        #[rustfmt::skip]
        let cases = [
            ("short", 10, "short"),
            ("abcdefghij", 10, "abcdefghij"),
            ("abcdefghijk", 10, "abcd…ghijk"),
            ("/very/long/path/to/the/script.sh: not found", 23, "/very/long/…: not found"),
        ];
        for (text, max, expected) in cases {
            let cut = cut_middle(text, max);
            assert_eq!(cut, expected, "{text}");
            assert!(cut.chars().count() <= max, "{text}");
        }
    }

    #[test]
    fn a_long_path_is_cut_inside_itself() {
        let path = format!("tools/{}/check.sh", "deep/".repeat(30));
        let line = format!("Verification failed at {path} --offline [config]:");
        let cut = fit(&line, 100);
        assert_eq!(cut.chars().count(), 100, "{cut}");
        assert!(
            cut.starts_with("Verification failed at tools/deep/"),
            "{cut}"
        );
        assert!(cut.ends_with("/check.sh --offline [config]:"), "{cut}");
    }

    #[test]
    fn the_headline_carries_the_cause() {
        let message = "Verification failed at cargo test [config]:\ncompiling a\ncompiling b\n\nerror: the cause\n";
        assert_eq!(
            headline(message),
            "Verification failed at cargo test [config]: error: the cause"
        );
        assert_eq!(
            headline("the agent exited with code 1"),
            "the agent exited with code 1"
        );
        assert_eq!(headline("\n\n"), "no output");
        let long = format!("Policy violation: {}", "x/".repeat(200));
        assert_eq!(headline(&long).chars().count(), LINE_WIDTH);
    }

    #[test]
    fn the_tail_is_the_last_lines_bounded() {
        let mut message = String::from("Verification failed at make [config]:\n");
        for i in 0..20 {
            message.push_str(&format!("line {i}\n"));
        }
        message.push_str(&"y".repeat(500));
        let tail = tail(&message);
        assert_eq!(tail.len(), TAIL_LINES);
        assert_eq!(tail[0], "line 15");
        assert_eq!(tail[TAIL_LINES - 1].chars().count(), LINE_WIDTH);
        assert!(super::tail("one line only").is_empty());
    }
}
