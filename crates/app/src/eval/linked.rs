//! In github mode with a token, a replayed change's task says what its author was asked: the
//! text of the pull request its commit merged (`Title (#12)` as GitHub squashes, `Merge pull
//! request #12 from …` as it merges) and of each issue that request or the commit closes
//! (`Fixes #7`, `closes #7`, `resolves #7`), read from GitHub with GETs only.
//! Not for: the task made of the commit message alone (`eval::change`), or GitHub itself
//! (`forge`).

use crate::forge::github::GithubClient;
use crate::time::Timestamp;

/// The pull request a commit's subject names. Pure.
pub fn pull_number(subject: &str) -> Option<u64> {
    let subject = subject.trim();
    if let Some(rest) = subject.strip_prefix("Merge pull request #") {
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        return digits.parse().ok();
    }
    let inner = subject.strip_suffix(')')?;
    let (_, number) = inner.rsplit_once("(#")?;
    number.parse().ok()
}

/// The issues a text closes, by GitHub's closing words, in order, once each. Pure.
pub fn closed_issues(text: &str) -> Vec<u64> {
    const WORDS: [&str; 9] = [
        "close", "closes", "closed", "fix", "fixes", "fixed", "resolve", "resolves", "resolved",
    ];
    let words: Vec<&str> = text.split_whitespace().collect();
    let mut found = Vec::new();
    for pair in words.windows(2) {
        let word = pair[0].trim_end_matches(':').to_ascii_lowercase();
        if !WORDS.contains(&word.as_str()) {
            continue;
        }
        let number = pair[1]
            .strip_prefix('#')
            .map(|n| n.trim_end_matches(|c: char| !c.is_ascii_digit()))
            .and_then(|n| n.parse::<u64>().ok());
        if let Some(n) = number.filter(|n| !found.contains(n)) {
            found.push(n);
        }
    }
    found
}

/// GitHub, asked for what a change links to.
pub struct Linked {
    client: GithubClient,
    now: Timestamp,
}

impl Linked {
    /// A client when a token and the repository (`GITHUB_REPOSITORY`) are at hand, as a tick
    /// in github mode finds them; else `None` and tasks keep the commit message alone.
    pub fn from_env() -> Option<Linked> {
        let client = GithubClient::from_env(None, crate::credentials::lookup).ok()?;
        Some(Linked {
            client,
            now: Timestamp::now(),
        })
    }

    fn get(&self, what: &str, n: u64) -> Option<(String, String)> {
        // Each path written out, as the permissions table of docs/github.md lists it.
        let path = if what == "pulls" {
            self.client.path(&format!("/pulls/{n}"))
        } else {
            self.client.path(&format!("/issues/{n}"))
        };
        match self
            .client
            .call::<serde_json::Value>(http::Method::GET, &path, None, self.now)
        {
            Ok(v) => Some((
                v["title"].as_str().unwrap_or_default().to_string(),
                v["body"].as_str().unwrap_or_default().trim().to_string(),
            )),
            Err(e) => {
                tracing::warn!("eval: could not read {what} #{n} from GitHub: {e}");
                None
            }
        }
    }

    /// What the commit message `message` links to, as text to add to its task's goal.
    pub fn text_for(&self, message: &str) -> Option<String> {
        let subject = message.lines().next().unwrap_or_default();
        let mut text = String::new();
        let mut closing = message.to_string();
        if let Some(n) = pull_number(subject) {
            if let Some((title, body)) = self.get("pulls", n) {
                text.push_str(&format!("The pull request #{n}: {title}\n\n{body}\n"));
                closing.push('\n');
                closing.push_str(&body);
            }
        }
        for n in closed_issues(&closing) {
            if let Some((title, body)) = self.get("issues", n) {
                text.push_str(&format!("\nThe issue #{n} it closes: {title}\n\n{body}\n"));
            }
        }
        (!text.is_empty()).then(|| text.trim().to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_subject_names_the_pull_request_it_merged() {
        for (subject, n) in [
            ("Add the parser (#12)", Some(12)),
            ("Merge pull request #7 from ada/parser", Some(7)),
            ("Add the parser", None),
            ("Add (#x)", None),
            ("Fix #3 in the parser", None),
        ] {
            assert_eq!(pull_number(subject), n, "{subject}");
        }
    }

    #[test]
    fn closing_words_name_the_issues() {
        assert_eq!(
            closed_issues("Fixes #3.\nAlso closes: #5, and resolves #3 again; see #9"),
            [3, 5]
        );
        assert_eq!(closed_issues("no issue here #4"), Vec::<u64>::new());
    }
}
