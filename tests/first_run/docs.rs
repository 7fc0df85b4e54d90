//! The docs a newcomer reads first speak plainly (issue 51): docs/github.md averaged 48 words a
//! sentence; its sentences now average under 25 (a list item counts as one).

use std::path::Path;

/// Words per sentence of a page's prose: code blocks, tables, headings and inline code aside,
/// each list item its own sentence.
fn sentence_lengths(page: &str) -> Vec<usize> {
    let mut prose = String::new();
    let mut fenced = false;
    for line in page.lines() {
        let t = line.trim_start();
        if t.starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced || t.starts_with('|') || t.starts_with('#') {
            continue;
        }
        let item = t.starts_with("- ")
            || t.split_once(". ")
                .is_some_and(|(n, _)| n.chars().all(|c| c.is_ascii_digit()) && !n.is_empty());
        if item || t.is_empty() {
            prose.push_str("\n\n");
        }
        prose.push(' ');
        prose.push_str(t.strip_prefix("- ").unwrap_or(t));
    }
    let mut lengths = Vec::new();
    for block in prose.split("\n\n") {
        let mut words = 0;
        for word in block.split_whitespace() {
            words += 1;
            let end = word.trim_end_matches(['*', ')', '"', '`']);
            if end.ends_with(['.', '?', '!', ':', ';']) {
                lengths.push(words);
                words = 0;
            }
        }
        if words > 2 {
            lengths.push(words);
        }
    }
    lengths.retain(|w| *w > 2);
    lengths
}

#[test]
fn docs_github_speaks_in_short_sentences() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let page = std::fs::read_to_string(root.join("docs/github.md")).unwrap();
    let lengths = sentence_lengths(&page);
    let average = lengths.iter().sum::<usize>() as f64 / lengths.len() as f64;
    assert!(
        average < 25.0,
        "docs/github.md averages {average:.1} words a sentence (over {} sentences)",
        lengths.len()
    );
    assert_eq!(
        sentence_lengths("One two three. Four five six seven.\n\n- a list item of six words\n"),
        [3, 4, 6]
    );
}
