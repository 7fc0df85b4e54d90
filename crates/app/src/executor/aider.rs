//! The `aider` adapter: aider (`aider`, PyPI `aider-chat`). Not for: its chat history file and
//! the files it is handed (`executor::aider_files`), or how its report, the exit and the result
//! file make one result (`executor::report`).
//!
//! Runs `aider --message-file <scratch>/prompt.md --yes-always --no-auto-commits
//! --no-dirty-commits --no-gitignore --no-pretty --no-stream --no-fancy-input --no-check-update
//! --no-show-release-notes --no-analytics --no-suggest-shell-commands --no-detect-urls
//! --input-history-file <scratch>/… --chat-history-file <scratch>/… [--model M]`, plus
//! `--chat-mode ask` (answers, never edits) for the judge and the planner. The runner commits, so
//! aider must not; its history files go to the scratch folder, and the `.aider*` files it leaves
//! in the workspace are removed after the run. aider has no turn cap to set (its lint/test fix-up
//! loop stops after 3 reflections), so `agents.<role>.max_turns` does not apply.
//!
//! With a configured provider (issue 50) aider goes through litellm's route of its API shape:
//! `OPENAI_API_BASE` and `OPENAI_API_KEY` (its route on the proxy, the placeholder) and the
//! model `openai/<model>` for the OpenAI shapes (chat completions), `anthropic/…` and
//! `gemini/…` likewise. `LITELLM_LOCAL_MODEL_COST_MAP=True` keeps litellm on its own copy of
//! its price map; aider's model-info fetch from raw.githubusercontent.com, which no flag turns
//! off, is its own traffic (`Cli::background`).
//!
//! A worker is handed the files its task names that exist (`--file`, `aider_files`), with the
//! repository map off (`--map-tokens 0`): the task says what to edit. aider can neither run
//! commands nor write `$OPENTIGER_RESULT_FILE`: its prompt does not ask it to (the runner runs
//! the checks), and the read-only note other CLIs get is left out.
//!
//! aider has no machine-readable output, and exits 0 even when the provider refused every request,
//! so its text is read (the reply itself from the chat history file, which is not wrapped at
//! the console's 80 columns, issue 39): `Tokens: 2.1k sent, 180 received. Cost: $0.0090
//! message, …` lines (summed; `Cost:` may wrap to the next line; "sent" already counts cache
//! writes; no line at all means no reply), the reply before the last of them (the final
//! message), a `litellm.RateLimitError` not followed by a reply (a quota failure), other
//! `litellm.…Error`s not followed by a reply (an error), and "Only 3 reflections allowed,
//! stopping." (unfinished: turn cap).

use std::path::Path;

use super::adapter::Adapter;
use super::cli::{AdapterConfig, Cli, RunFiles};
use super::report::{self, failure, read_only, Report};
use super::AgentFailureKind;
use crate::process::ProcessOutput;

pub const CLI: Cli = Cli {
    kind: "aider",
    program: "aider",
    install: "python3 -m pip install aider-chat",
    keys: &[
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "OPENROUTER_API_KEY",
        "GEMINI_API_KEY",
    ],
    // aider also reads keys from these files in the home folder.
    logins: &[".env", ".aider.conf.yml"],
    background: &["raw.githubusercontent.com"],
    // aider 0.86.2 with no --model: with an Anthropic key, else with an OpenAI one.
    default_models: &["claude-sonnet-4-5", "gpt-4o"],
};

const FLAGS: &[&str] = &[
    "--yes-always",
    "--no-auto-commits",
    "--no-dirty-commits",
    "--no-gitignore",
    "--no-pretty",
    "--no-stream",
    "--no-fancy-input",
    "--no-check-update",
    "--no-show-release-notes",
    "--no-analytics",
    "--no-suggest-shell-commands",
    "--no-detect-urls",
];

pub struct Aider {
    config: AdapterConfig,
}

/// A git identity for aider, by `GIT_CONFIG_*` variables (git reads them as command-line
/// configuration). With none configured (a CI runner) aider writes `user.name` and `user.email`
/// into the repository's `.git/config`, which opentiger puts back and fails the run for as a
/// `policy_violation` (issue 18, seen with aider 0.86.2). aider makes no commit (the runner
/// does), so the identity is only there to be found. Not set when the agent is given
/// `GIT_CONFIG_COUNT` already.
pub fn git_identity(given: &[(String, String)]) -> Vec<(String, String)> {
    if given.iter().any(|(k, _)| k == "GIT_CONFIG_COUNT") {
        return Vec::new();
    }
    [
        ("GIT_CONFIG_COUNT", "2"),
        ("GIT_CONFIG_KEY_0", "user.name"),
        ("GIT_CONFIG_VALUE_0", "opentiger agent"),
        ("GIT_CONFIG_KEY_1", "user.email"),
        ("GIT_CONFIG_VALUE_1", "agent@opentiger.invalid"),
    ]
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .to_vec()
}

/// `--model`: with a configured provider, under its litellm route (`openai/smollm2`).
pub fn model_arg(config: &AdapterConfig, given: &[(String, String)]) -> Option<String> {
    let model = config.model.clone()?;
    Some(match super::door::provider(given) {
        Some(door) => format!("{}/{model}", super::door::aider_route(&door).1),
        None => model,
    })
}

/// The base URLs aider (litellm) reads, from the ones the agent is given on opentiger's proxy
/// (issue 37): `ANTHROPIC_API_BASE`, `OPENAI_API_BASE`, `OPENROUTER_API_BASE`, `GEMINI_API_BASE`.
pub fn api_bases(given: &[(String, String)]) -> Vec<(String, String)> {
    [
        ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_BASE"),
        ("OPENAI_BASE_URL", "OPENAI_API_BASE"),
        ("OPENROUTER_BASE_URL", "OPENROUTER_API_BASE"),
        ("GEMINI_BASE_URL", "GEMINI_API_BASE"),
    ]
    .iter()
    .filter_map(|(from, to)| {
        given
            .iter()
            .find(|(k, v)| k == from && !v.is_empty())
            .map(|(_, v)| (to.to_string(), v.clone()))
    })
    .collect()
}

impl Aider {
    pub fn new(config: AdapterConfig) -> Aider {
        Aider { config }
    }
}

/// The arguments after `aider` (the prompt goes by `--message-file`).
pub fn args(config: &AdapterConfig, prompt_file: &Path, scratch: &Path) -> Vec<String> {
    let mut args = vec![
        "--message-file".to_string(),
        prompt_file.display().to_string(),
    ];
    args.extend(FLAGS.iter().map(|f| f.to_string()));
    args.extend([
        "--input-history-file".to_string(),
        scratch.join("aider.input.history").display().to_string(),
        "--chat-history-file".to_string(),
        scratch.join("aider.chat.history.md").display().to_string(),
    ]);
    if let Some(model) = &config.model {
        args.extend(["--model".to_string(), model.clone()]);
    }
    if read_only(config.role) {
        args.extend(["--chat-mode".to_string(), "ask".to_string()]);
    }
    args
}

/// Reads aider's plain-text output (see the module documentation).
pub fn parse(stdout: &str) -> Report {
    let lines: Vec<&str> = stdout.lines().collect();
    let mut r = Report::default();
    let mut cost = 0.0;
    let mut last_reply_end = None;
    let mut previous_reply_end = None;
    for (i, line) in lines.iter().enumerate() {
        if let Some(usage) = line.trim().strip_prefix("Tokens:") {
            // With both cache figures aider's line is too long: `Cost:` goes on the next line.
            let next = lines.get(i + 1).map(|l| l.trim()).unwrap_or("");
            let usage = if !usage.contains("Cost:") && next.starts_with("Cost:") {
                format!("{usage} {next}")
            } else {
                usage.to_string()
            };
            let (input, cached, output, message_cost) = usage_line(&usage);
            r.input_tokens += input;
            r.cached_input_tokens += cached;
            r.output_tokens += output;
            cost += message_cost;
            previous_reply_end = last_reply_end;
            last_reply_end = Some(i);
        }
    }
    let after_reply = last_reply_end.map_or(0, |i| i + 1);
    if let Some(end) = last_reply_end {
        r.completed = true;
        r.cost_usd = Some(cost);
        let start = previous_reply_end.map_or(0, |i| i + 1);
        r.final_message = reply(&lines[start..end]);
    }
    let rest = &lines[after_reply..];
    if rest
        .iter()
        .any(|l| l.contains("reflections allowed, stopping"))
    {
        r.failure = Some(failure(
            AgentFailureKind::MaxTurns,
            "aider stopped its fix-up loop after its reflections cap, unfinished".to_string(),
        ));
    } else if let Some(error) = last_litellm_error(rest) {
        // aider's own gloss ("servers are down or overloaded", "Retrying in 8.0 seconds") is the
        // same for any server error: only litellm's text says what happened.
        let rate_limited = error.contains("RateLimitError") || error.contains("overloaded_error");
        r.failure = Some(if rate_limited {
            report::quota(&error)
        } else {
            report::error_from_text(&error)
        });
        r.completed = false;
    }
    r
}

/// The last `litellm.…Error: …` message in `lines`, its wrapped continuation lines joined.
fn last_litellm_error(lines: &[&str]) -> Option<String> {
    let at = lines
        .iter()
        .rposition(|l| l.trim_start().starts_with("litellm.") && l.contains("Error"))?;
    let gloss = |l: &&str| {
        let l = l.trim();
        l.is_empty() || l.starts_with("The API provider") || l.starts_with("Retrying in")
    };
    let end = lines[at + 1..]
        .iter()
        .position(gloss)
        .map_or(lines.len(), |n| at + 1 + n);
    Some(
        lines[at..end]
            .iter()
            .map(|l| l.trim())
            .collect::<Vec<_>>()
            .join(" "),
    )
}

/// `2.1k sent, 1.0k cache write, 500 cache hit, 180 received. Cost: $0.0090 message, …`:
/// (input, cached input, output, this message's USD). "sent" already counts the cache writes
/// (issue 18), not the cache hits.
fn usage_line(usage: &str) -> (i64, i64, i64, f64) {
    let (tokens, cost) = usage.split_once("Cost:").unwrap_or((usage, ""));
    let (mut input, mut cached, mut output) = (0, 0, 0);
    for part in tokens.trim().trim_end_matches('.').split(',') {
        let mut words = part.split_whitespace();
        let Some(count) = words.next().and_then(count) else {
            continue;
        };
        match words.collect::<Vec<_>>().join(" ").as_str() {
            "sent" => input += count,
            "cache hit" => {
                input += count;
                cached += count;
            }
            "received" => output += count,
            _ => {}
        }
    }
    let message_cost = cost
        .split(',')
        .find(|p| p.contains("message"))
        .and_then(|p| p.trim().trim_start_matches('$').split_whitespace().next())
        .and_then(|n| n.parse::<f64>().ok())
        .unwrap_or(0.0);
    (input, cached, output, message_cost)
}

/// `180`, `2.1k`, `1.5M` as a number of tokens.
fn count(word: &str) -> Option<i64> {
    let (number, scale) = match word.chars().last()? {
        'k' | 'K' => (&word[..word.len() - 1], 1e3),
        'M' | 'm' => (&word[..word.len() - 1], 1e6),
        _ => (word, 1.0),
    };
    number
        .parse::<f64>()
        .ok()
        .map(|n| (n * scale).round() as i64)
}

/// The reply in the lines before a `Tokens:` line, without aider's banner and status lines.
fn reply(lines: &[&str]) -> Option<String> {
    const BANNER: &[&str] = &[
        "Aider v",
        "Model:",
        "Main model:",
        "Weak model:",
        "Editor model:",
        "Git repo:",
        "Repo-map:",
        "Added ",
        "Warning",
        "HTTPSConnectionPool",
        "Applied edit",
        "litellm.",
        "The API provider",
        "Retrying in",
        "Cost:",
    ];
    let start = lines
        .iter()
        .rposition(|l| BANNER.iter().any(|b| l.starts_with(b)))
        .map_or(0, |i| i + 1);
    let text = lines[start..].join("\n");
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_string())
}

impl Adapter for Aider {
    fn cli(&self) -> &'static Cli {
        &CLI
    }

    fn config(&self) -> &AdapterConfig {
        &self.config
    }

    fn args(&self, files: &RunFiles, scratch: &Path, given: &[(String, String)]) -> Vec<String> {
        let config = AdapterConfig {
            model: model_arg(&self.config, given),
            ..self.config.clone()
        };
        args(&config, &files.prompt, scratch)
    }

    fn stdin(&self, _prompt: &str) -> Option<Vec<u8>> {
        None
    }

    fn env(&self, _scratch: &Path, given: &[(String, String)]) -> Vec<(String, String)> {
        let mut env = git_identity(given);
        env.extend(api_bases(given));
        if let Some(door) = super::door::provider(given) {
            env.extend(super::door::aider_route(&door).0);
        }
        // litellm's own price map, not the copy it would fetch from raw.githubusercontent.com.
        env.push(("LITELLM_LOCAL_MODEL_COST_MAP".into(), "True".into()));
        env
    }

    fn parse(&self, out: &ProcessOutput, scratch: &Path) -> Report {
        let mut r = parse(&out.stdout_tail);
        if r.completed {
            // The console wraps at 80 columns without a terminal; the history does not.
            let history = scratch.join("aider.chat.history.md");
            if let Some(reply) = super::aider_files::last_reply_in(&history) {
                r.final_message = Some(reply);
            }
        }
        r
    }

    fn prompt(&self, _role: crate::config::AgentRole, prompt: &str) -> String {
        prompt.to_string()
    }

    fn file_args(&self, req: &super::AgentRequest<'_>) -> Vec<String> {
        if read_only(req.role) {
            return Vec::new();
        }
        let named =
            super::aider_files::named_files(&req.task.touches, &req.task.goal, req.workspace);
        if named.is_empty() {
            return Vec::new();
        }
        let mut args = vec!["--map-tokens".to_string(), "0".to_string()];
        for file in named {
            args.extend(["--file".to_string(), file]);
        }
        args
    }

    /// aider keeps its repo-map cache and other state in `.aider*` files in the repository: they
    /// are not part of the change.
    fn clean_up(&self, workspace: &Path, before: &[String]) {
        for name in super::cli::entries(workspace) {
            if name.starts_with(".aider") && !before.contains(&name) {
                let path = workspace.join(&name);
                let removed = if path.is_dir() {
                    std::fs::remove_dir_all(&path)
                } else {
                    std::fs::remove_file(&path)
                };
                if let Err(e) = removed {
                    tracing::warn!(path = %path.display(), error = %e, "could not remove aider's file");
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::AgentRole;
    use crate::executor::AgentFailureKind as K;
    use crate::model::Role;

    /// (fixture, completed, failure, cost, tokens in/out, final message starts with)
    type Case<'a> = (
        &'a str,
        bool,
        Option<K>,
        Option<f64>,
        (i64, i64),
        Option<&'a str>,
    );

    fn fixture(name: &str) -> String {
        crate::executor::recorded("aider", name)
    }

    #[test]
    fn argv_per_role() {
        let s = Path::new("/s");
        let mut worker = AdapterConfig::new(&CLI, AgentRole::Task(Role::Worker));
        worker.model = Some("sonnet".into());
        let argv = args(&worker, &s.join("prompt.md"), s).join(" ");
        assert!(
            argv.starts_with("--message-file /s/prompt.md --yes-always --no-auto-commits"),
            "{argv}"
        );
        assert!(
            argv.contains("--chat-history-file /s/aider.chat.history.md"),
            "{argv}"
        );
        assert!(argv.ends_with("--model sonnet"), "{argv}");
        let judge = AdapterConfig::new(&CLI, AgentRole::Judge);
        assert!(args(&judge, &s.join("prompt.md"), s)
            .join(" ")
            .ends_with("--chat-mode ask"));
    }

    #[test]
    fn recorded_outputs_are_read() {
        #[rustfmt::skip]
        let cases: &[Case] = &[
            ("success.txt", true, None, Some(0.009), (2100, 180), Some("I added `sub` to ops.py.")),
            ("reflections.txt", true, Some(K::MaxTurns), Some(0.036), (8400, 720), Some("")),
            ("rate_limited.txt", false, Some(K::Quota { retry_hint: None }), None, (0, 0), None),
            ("garbage.txt", false, None, None, (0, 0), None),
            // aider glosses any server error as "down or overloaded": not a quota.
            ("connection_refused.txt", false, Some(K::Error), None, (0, 0), None),
            // Issue 18: exit 0 after it; the key, not a flaky provider.
            ("missing_key.txt", false, Some(K::Config), None, (0, 0), None),
            ("invalid_key_401.txt", false, Some(K::Config), None, (0, 0), None),
            // Both cache figures: `Cost:` on the next line, still read.
            ("cache_cost_wrapped.txt", true, None, Some(0.0412), (15200, 180), Some("I added `sub` to ops.py.")),
        ];
        for (name, completed, kind, cost, (input, output), message) in cases {
            let r = parse(&fixture(name));
            assert_eq!(r.completed, *completed, "{name}");
            assert_eq!(r.failure.as_ref().map(|f| f.kind.clone()), *kind, "{name}");
            assert_eq!(r.cost_usd.map(|c| (c * 1e6).round() / 1e6), *cost, "{name}");
            assert_eq!(
                (r.input_tokens, r.output_tokens),
                (*input, *output),
                "{name}"
            );
            let got = r.final_message.as_deref();
            assert!(
                got.unwrap_or("").starts_with(message.unwrap_or(""))
                    && got.is_some() == message.is_some(),
                "{name}: {got:?}"
            );
        }
        let quota = parse(&fixture("rate_limited.txt")).failure.unwrap();
        assert!(quota.message.contains("rate_limit_error"), "{quota:?}");
        let refused = parse(&fixture("connection_refused.txt")).failure.unwrap();
        assert_eq!(
            refused.message,
            "litellm.InternalServerError: AnthropicException - [Errno 111] Connection refused. \
             Handle with `litellm.InternalServerError`."
        );
    }

    #[test]
    fn usage_lines_and_counts() {
        // The cache writes are part of "sent" already: counted once.
        assert_eq!(
            usage_line(" 12k sent, 1.5k cache write, 3.2k cache hit, 1.1k received. Cost: $0.05 message, $0.20 session."),
            (15_200, 3_200, 1_100, 0.05)
        );
        assert_eq!(usage_line(" garbage"), (0, 0, 0, 0.0));
        assert_eq!(count("2.1k"), Some(2100));
        assert_eq!(count("1.5M"), Some(1_500_000));
        assert_eq!(count("x"), None);
        assert_eq!(count(""), None);
    }

    #[test]
    fn a_reply_after_a_rate_limit_is_a_success() {
        let text = format!(
            "{}\n{}",
            fixture("rate_limited.txt"),
            "Done, sub() added.\nTokens: 1k sent, 10 received. Cost: $0.01 message, $0.01 session.\n"
        );
        let r = parse(&text);
        assert_eq!((r.completed, r.failure), (true, None));
        assert_eq!(r.final_message.as_deref(), Some("Done, sub() added."));
    }

    /// Issue 18: with no git identity aider wrote one into `.git/config`; git finds ours.
    #[test]
    fn aider_finds_a_git_identity_without_writing_one() {
        let repo = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        let git = |env: &[(String, String)], args: &[&str]| {
            std::process::Command::new("git")
                .args(args)
                .current_dir(repo.path())
                .env_clear()
                .env("PATH", std::env::var("PATH").unwrap_or_default())
                .env("HOME", home.path())
                .envs(env.iter().map(|(k, v)| (k, v)))
                .output()
                .unwrap()
        };
        assert!(git(&[], &["init", "-q"]).status.success());
        assert!(!git(&[], &["config", "--get", "user.name"]).status.success());
        let identity = git_identity(&[]);
        for (key, want) in [
            ("user.name", "opentiger agent\n"),
            ("user.email", "agent@opentiger.invalid\n"),
        ] {
            let out = git(&identity, &["config", "--get", key]);
            assert_eq!(String::from_utf8_lossy(&out.stdout), want);
        }
        let config = std::fs::read_to_string(repo.path().join(".git/config")).unwrap();
        assert!(!config.contains("[user]"), "{config}");
        // A configuration the agent is given is left alone.
        let given = [("GIT_CONFIG_COUNT".to_string(), "1".to_string())];
        assert!(git_identity(&given).is_empty());
    }
}
