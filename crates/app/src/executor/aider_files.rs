//! What aider reads and writes besides its console (issue 39): its chat history file, where its
//! last reply is kept as the model wrote it, and the files a task names, handed to it with
//! `--file`.
//!
//! Without a terminal aider wraps its console at 80 columns, putting raw newlines inside the
//! JSON strings of a judge's or planner's reply; the chat history file (`--chat-history-file`,
//! markdown) holds the same reply unwrapped: the user's message as `#### ` lines, aider's own
//! notes as `> ` lines, the model's reply as plain lines. aider puts no file in its chat by
//! itself in a non-interactive run, and a small model given only the repository map does not
//! edit: the files a task names (its `touches`, paths in its goal) that exist in the workspace
//! go in with `--file`.
//!
//! Not for: the console's usage and error lines (`aider.rs`), the JSON inside the reply
//! (`executor::json_answer`).

use std::path::Path;

/// The most of the chat history read: a run's history is a few replies long.
const HISTORY_MAX_BYTES: u64 = 8 * 1024 * 1024;

/// The last reply in aider's chat history file, as the model wrote it (`None`: no file, or no
/// reply in it).
pub fn last_reply_in(history_file: &Path) -> Option<String> {
    let bytes = crate::bounded::read_regular(history_file, HISTORY_MAX_BYTES, "8 MiB").ok()??;
    last_reply(&String::from_utf8_lossy(&bytes))
}

/// The model's text after the last user message (`#### ` lines) of a chat history, without
/// aider's notes (`> ` lines).
pub fn last_reply(history: &str) -> Option<String> {
    let lines: Vec<&str> = history.lines().collect();
    let start = lines.iter().rposition(|l| l.starts_with("#### "))? + 1;
    let reply: Vec<&str> = lines[start..]
        .iter()
        .filter(|l| !(l.starts_with("> ") || **l == ">"))
        .copied()
        .collect();
    let text = reply.join("\n");
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_string())
}

/// The files a task names that exist in `workspace`, in order, each once: its `touches`, then
/// the paths its goal mentions (`src/ops.py`, `` `notes.txt` ``). Folders and paths leaving
/// the workspace are left out; a new file is not passed (aider would create it empty).
pub fn named_files(touches: &[String], goal: &str, workspace: &Path) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    let candidates = touches
        .iter()
        .map(|t| t.trim().to_string())
        .chain(goal.split_whitespace().filter_map(path_word));
    for path in candidates {
        if !relative_inside(&path) || found.contains(&path) {
            continue;
        }
        if workspace.join(&path).is_file() {
            found.push(path);
        }
    }
    found
}

/// A word of prose that looks like a relative path: `notes.txt`, `src/ops.py`, without the
/// quotes and punctuation around it; not a URL, a version or a call (`sub(a,`).
fn path_word(word: &str) -> Option<String> {
    let around = |c: char| "`'\"*,;:!?()[]{}<>".contains(c);
    let word = word.trim_matches(around);
    let word = word.strip_suffix('.').unwrap_or(word).trim_matches(around);
    let allowed = |c: char| c.is_ascii_alphanumeric() || "_-./".contains(c);
    if word.is_empty() || !word.chars().all(allowed) || word.contains("//") {
        return None;
    }
    let name = word.rsplit('/').next().unwrap_or(word);
    let has_extension = name
        .rsplit_once('.')
        .is_some_and(|(stem, ext)| !stem.is_empty() && ext.chars().any(|c| c.is_alphabetic()));
    (has_extension || word.contains('/')).then(|| word.to_string())
}

fn relative_inside(path: &str) -> bool {
    !path.is_empty() && !path.starts_with('/') && !path.split('/').any(|c| c == ".." || c == ".git")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Recorded with aider 0.86.2 (no terminal) against a stand-in answering one verdict line:
    /// the console wrapped it at 80 columns, the history did not.
    const HISTORY: &str = "\n# aider chat started at 2026-11-27 13:14:08\n\n> Update git name with: git config user.name \"Your Name\"  \n> Aider v0.86.2  \n> Model: openai/stand-in with ask edit format  \n> Would you like to see what's new in this version? (Y)es/(N)o [Yes]: y  \n\n#### Review the change. Answer with the verdict JSON.  \n\n{\"verdict\": \"approve\", \"summary\": \"The change adds sub.txt with a correct sub(a, b) function as the task asked; nothing else changed.\", \"findings\": []}\n\n> Tokens: 100 sent, 40 received.  \n";

    #[test]
    fn the_last_reply_is_read_unwrapped() {
        let reply = last_reply(HISTORY).unwrap();
        assert!(reply.starts_with("{\"verdict\": \"approve\""), "{reply}");
        assert_eq!(reply.lines().count(), 1, "{reply}");
        let value = crate::executor::extract_json_object(&reply).unwrap();
        assert_eq!(value["verdict"], "approve");
        // A second exchange (a reflection): only its reply; a worker's edit notes left out.
        let two = format!("{HISTORY}\n#### Fix the test.  \n\nsub.txt\n```\nx\n```\n\n> Applied edit to sub.txt  \n> Tokens: 1 sent, 1 received.  \n");
        assert_eq!(last_reply(&two).unwrap(), "sub.txt\n```\nx\n```");
        for text in [
            "",
            "# aider chat started\n> Tokens: 1 sent\n",
            "#### hi\n\n> Tokens: x\n",
        ] {
            assert_eq!(last_reply(text), None, "{text:?}");
        }
    }

    #[test]
    fn the_files_a_task_names_are_handed_over() {
        let ws = tempfile::tempdir().unwrap();
        std::fs::create_dir(ws.path().join("src")).unwrap();
        for f in ["src/ops.py", "notes.txt", "README.md"] {
            std::fs::write(ws.path().join(f), "x\n").unwrap();
        }
        #[rustfmt::skip]
        let cases: &[(&[&str], &str, &[&str])] = &[
            (&[], "Add a line to `notes.txt`.", &["notes.txt"]),
            (&["src/ops.py"], "Add sub(a, b) to src/ops.py and mention it in README.md.", &["src/ops.py", "README.md"]),
            // A new file, a folder, a version, a URL, a path out of the workspace: none.
            (&["src/"], "Write sub.txt (aider 0.86.2, see https://x.io/a.md) and ../etc/passwd.", &[]),
            (&["/etc/passwd", ".git/config"], "Nothing here.", &[]),
        ];
        for (touches, goal, want) in cases {
            let touches: Vec<String> = touches.iter().map(|t| t.to_string()).collect();
            assert_eq!(named_files(&touches, goal, ws.path()), *want, "{goal}");
        }
    }
}
