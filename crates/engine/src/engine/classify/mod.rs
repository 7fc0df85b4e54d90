//! Failure classification: what kind of failure a run ended with, and whether it is worth retrying.
//!
//! Pure text rules over the run's failure code and its (already redacted) error excerpt: the
//! cycle manager's `classifyFailure` (spec §3.2), the worker's mapping of a failed verification
//! command to a failure code (spec §3.2, last paragraph), the worker's quota detection (spec §2.3)
//! and the normalized failure signature used for repeated-failure escalation (spec §3.4).
//!
//! Not for: deciding what to do with a classification (retry budgets are applied by recovery),
//! computing cooldowns (see `backoff`), or reading logs. Phrases match whole words of the
//! lower-cased text, never the inside of a word (issue 18: "unexpected" is not "expected",
//! "environment" is not "env"), plus small hand-written scanners.

pub mod lesson;
mod signature;
mod verification;

use crate::model::{FailureCategory, FailureCode};

use crate::model::text::*;
pub use crate::model::{is_agent_config_message, is_quota_message};
pub use signature::failure_signature;
pub use verification::verification_failure_code;

/// How the engine treats one failure (spec §3.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Classification {
    pub category: FailureCategory,
    pub retryable: bool,
    /// The spec's reason word, e.g. `test_failure` or `verification_command_missing_script`.
    pub reason: &'static str,
}

/// Classifies a failure: the structured code first, then the message rules (spec §3.2).
///
/// `execution_failed` and a missing code say nothing about the cause, so they fall back to the
/// message rules, like an unknown code does in the spec.
pub fn classify(message: &str, code: Option<FailureCode>) -> Classification {
    if let Some(classification) = code.and_then(classify_code) {
        return classification;
    }
    classify_code(code_from_message(message)).unwrap_or(MODEL_OR_UNKNOWN)
}

/// The default classification; also what the message rules end with.
const MODEL_OR_UNKNOWN: Classification = Classification {
    category: FailureCategory::Model,
    retryable: true,
    reason: "model_or_unknown_failure",
};

/// spec §3.2: the structured-code table. `None` means "fall back to the message rules".
fn classify_code(code: FailureCode) -> Option<Classification> {
    use FailureCategory as C;
    let (category, retryable, reason) = match code {
        FailureCode::ExternalDirectoryPermissionPrompt => (C::Permission, false, code),
        FailureCode::NoActionableChanges => (C::Noop, false, code),
        FailureCode::PolicyViolation => (C::Policy, true, code),
        FailureCode::VerificationCommandMissingScript
        | FailureCode::VerificationCommandNoTestFiles
        | FailureCode::VerificationCommandMissingMakeTarget
        | FailureCode::VerificationCommandUnsupportedFormat
        | FailureCode::VerificationCommandSequenceIssue => (C::Setup, false, code),
        FailureCode::SetupOrBootstrapIssue => (C::Setup, true, code),
        FailureCode::EnvironmentIssue | FailureCode::QuotaFailure => {
            (C::Env, true, FailureCode::EnvironmentIssue)
        }
        FailureCode::BranchDivergedRequiresRecreate => (C::Setup, false, code),
        FailureCode::VerificationCommandFailed | FailureCode::TestFailure => {
            (C::Test, true, FailureCode::TestFailure)
        }
        // Issue 37: an agent that went silent is retried like a timeout.
        FailureCode::TransientOrFlakyFailure | FailureCode::AgentStalled => (C::Flaky, true, code),
        // Issue 37: never left failed (the outcome queues it behind its budget); were it
        // classified, it is the environment's, not the agent's.
        FailureCode::BudgetExceeded => (C::Env, true, code),
        FailureCode::ModelDoomLoop => (C::ModelLoop, true, code),
        FailureCode::ModelOrUnknownFailure => (C::Model, true, code),
        // Issue 18: another run with the same key, login or model fails the same way.
        FailureCode::AgentConfig => (C::AgentConfig, false, code),
        // Issue 36: a person decides; another run would only make another change to hold.
        FailureCode::ThreatFlagged => (C::Policy, false, code),
        FailureCode::ExecutionFailed => return None,
    };
    Some(Classification {
        category,
        retryable,
        reason: reason.as_str(),
    })
}

/// What a message rule looks for in the lower-cased message.
enum Pattern {
    /// Any of these phrases, as whole words ([`has_phrase`]).
    Phrases(&'static [&'static str]),
    /// A rule a substring list cannot say.
    Check(fn(&str) -> bool),
}

/// spec §3.2: the message rules, in order; the first match wins. Each rule names the code whose
/// row of the structured table gives its category, retryability and reason.
#[rustfmt::skip]
const MESSAGE_RULES: &[(Pattern, FailureCode)] = &[
    (Pattern::Check(is_external_directory_prompt), FailureCode::ExternalDirectoryPermissionPrompt),
    // Issue 18, before the setup and transient rules: a login or key problem is not retried.
    (Pattern::Check(is_agent_config_message), FailureCode::AgentConfig),
    (Pattern::Phrases(&["no changes were made", "no relevant changes were made",
        "no commits between"]), FailureCode::NoActionableChanges),
    (Pattern::Phrases(&["policy violation", "denied command", "outside allowed paths",
        "change to denied path"]), FailureCode::PolicyViolation),
    (Pattern::Phrases(NO_TEST_FILES), FailureCode::VerificationCommandNoTestFiles),
    // spec §3.2: a missing make target is reported as missing_script by the classifier.
    (Pattern::Check(is_missing_script_message), FailureCode::VerificationCommandMissingScript),
    (Pattern::Check(is_unsupported_format_message),
        FailureCode::VerificationCommandUnsupportedFormat),
    (Pattern::Check(is_artifact_check_after_clean), FailureCode::VerificationCommandSequenceIssue),
    (Pattern::Phrases(&["package.json", "pnpm-workspace.yaml", "cannot find module", "enoent",
        "command not found", "repository not found", "authentication failed", "permission denied",
        "no commits between", "no history in common"]), FailureCode::SetupOrBootstrapIssue),
    // spec §3.2 matched `env` inside any word ("environment", "envelope"); here it is a word.
    (Pattern::Phrases(&["database_url", "redis_url", "connection refused", "dns", "env"]),
        FailureCode::EnvironmentIssue),
    (Pattern::Phrases(&["branch_diverged_requires_recreate", "non-fast-forward",
        "failed to push some refs"]), FailureCode::BranchDivergedRequiresRecreate),
    // The spec's `assert` and `test failed` inside longer words, spelt out as words.
    (Pattern::Phrases(&["vitest", "playwright", "assert", "assertion", "assertionerror",
        "assertion failed", "assert_eq", "expected", "test failed", "tests failed",
        "verification commands failed"]), FailureCode::TestFailure),
    (Pattern::Phrases(&["rate limit", "rate limits", "rate limited", "rate-limited",
        "rate_limit", "ratelimit", "429", "503", "502", "timeout", "timeouterror", "timed out",
        "econnreset", "eai_again", "temporarily unavailable",
        // Issue 18: an agent stopped in a reconnect loop (`executor::codex`).
        "could not reach its provider"]),
        FailureCode::TransientOrFlakyFailure),
    (Pattern::Phrases(&["doom loop detected", "excessive planning chatter detected"]),
        FailureCode::ModelDoomLoop),
    // `todo`, `todowrite`, `todoread`: the start of a tool's name.
    (Pattern::Check(|t| has_word_prefix(t, "unsupported pseudo tool call detected: todo")),
        FailureCode::ModelDoomLoop),
];

/// Test runners saying there was nothing to run.
const NO_TEST_FILES: &[&str] = &[
    "no test files found",
    "no tests found",
    "no files found matching",
];

fn code_from_message(message: &str) -> FailureCode {
    let lower = message.to_lowercase();
    MESSAGE_RULES
        .iter()
        .find(|(pattern, _)| match pattern {
            Pattern::Phrases(phrases) => contains_any(&lower, phrases),
            Pattern::Check(check) => check(&lower),
        })
        .map_or(FailureCode::ModelOrUnknownFailure, |(_, code)| *code)
}

fn is_external_directory_prompt(lower: &str) -> bool {
    if lower.contains("external_directory permission prompt") {
        return true;
    }
    lower.match_indices("permission required:").any(|(at, m)| {
        lower[at + m.len()..]
            .trim_start()
            .starts_with("external_directory")
    })
}

fn is_missing_script_message(lower: &str) -> bool {
    #[rustfmt::skip]
    const PHRASES: &[&str] = &[
        "err_pnpm_no_script", "missing script", "could not read package.json",
        "no rule to make target",
    ];
    contains_any(lower, PHRASES)
        || lower.lines().any(|line| {
            // `enoent.*package\.json`: both on one line, in that order.
            line.find("enoent")
                .is_some_and(|at| line[at..].contains("package.json"))
        })
}

fn is_unsupported_format_message(lower: &str) -> bool {
    const PHRASES: &[&str] = &[
        "unsupported command format",
        "shell operators are not allowed",
    ];
    if contains_any(lower, PHRASES) {
        return true;
    }
    // `verification failed at …$(…)…[explicit]: stderr unavailable`, on one line.
    lower.lines().any(|line| {
        let Some(rest) = after(line, "verification failed at ") else {
            return false;
        };
        let Some(rest) = after(rest, "$(") else {
            return false;
        };
        // `.+?\)`: at least one character inside the parentheses.
        let Some(first) = rest.chars().next() else {
            return false;
        };
        let inside = first.len_utf8();
        let Some(close) = rest[inside..].find(')') else {
            return false;
        };
        ends_with_explicit_stderr_unavailable(&rest[inside + close + 1..])
    })
}

/// `verification failed at test -f|-s <path> [explicit]: stderr unavailable` where the path runs
/// through a build-output directory: the check ran before anything produced the file.
fn is_artifact_check_after_clean(lower: &str) -> bool {
    lower.lines().any(|line| {
        line.match_indices("verification failed at").any(|(at, m)| {
            let rest = line[at + m.len()..].trim_start();
            let Some(rest) = rest.strip_prefix("test") else {
                return false;
            };
            if !rest.starts_with(char::is_whitespace) {
                return false;
            }
            let rest = rest.trim_start();
            let Some(rest) = rest.strip_prefix("-f").or_else(|| rest.strip_prefix("-s")) else {
                return false;
            };
            if !rest.starts_with(char::is_whitespace) {
                return false;
            }
            let Some(end) = rest.find(" [explicit]:") else {
                return false;
            };
            let path = rest[..end].trim();
            !path.is_empty()
                && verification::names_generated_dir(path)
                && ends_with_explicit_stderr_unavailable(&rest[end + 1..])
        })
    })
}

/// `\[explicit\]:\s*stderr unavailable` somewhere in `text`.
fn ends_with_explicit_stderr_unavailable(text: &str) -> bool {
    text.match_indices("[explicit]:").any(|(at, m)| {
        text[at + m.len()..]
            .trim_start()
            .starts_with("stderr unavailable")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use FailureCategory as C;
    use FailureCode as F;

    #[test]
    fn structured_codes_follow_the_table() {
        #[rustfmt::skip]
        let cases: &[(F, C, bool, &str)] = &[
            (F::ExternalDirectoryPermissionPrompt, C::Permission, false, "external_directory_permission_prompt"),
            (F::NoActionableChanges, C::Noop, false, "no_actionable_changes"),
            (F::PolicyViolation, C::Policy, true, "policy_violation"),
            (F::VerificationCommandMissingScript, C::Setup, false, "verification_command_missing_script"),
            (F::VerificationCommandNoTestFiles, C::Setup, false, "verification_command_no_test_files"),
            (F::VerificationCommandMissingMakeTarget, C::Setup, false, "verification_command_missing_make_target"),
            (F::VerificationCommandUnsupportedFormat, C::Setup, false, "verification_command_unsupported_format"),
            (F::VerificationCommandSequenceIssue, C::Setup, false, "verification_command_sequence_issue"),
            (F::SetupOrBootstrapIssue, C::Setup, true, "setup_or_bootstrap_issue"),
            (F::EnvironmentIssue, C::Env, true, "environment_issue"),
            (F::QuotaFailure, C::Env, true, "environment_issue"),
            (F::BranchDivergedRequiresRecreate, C::Setup, false, "branch_diverged_requires_recreate"),
            (F::VerificationCommandFailed, C::Test, true, "test_failure"),
            (F::TestFailure, C::Test, true, "test_failure"),
            (F::TransientOrFlakyFailure, C::Flaky, true, "transient_or_flaky_failure"),
            (F::ModelDoomLoop, C::ModelLoop, true, "model_doom_loop"),
            (F::ModelOrUnknownFailure, C::Model, true, "model_or_unknown_failure"),
            (F::AgentConfig, C::AgentConfig, false, "agent_config"),
            (F::ThreatFlagged, C::Policy, false, "threat_flagged"),
            (F::BudgetExceeded, C::Env, true, "budget_exceeded"),
            (F::AgentStalled, C::Flaky, true, "agent_stalled"),
        ];
        for (code, category, retryable, reason) in cases {
            // The message would say otherwise: the code wins.
            let got = classify("vitest: assert failed", Some(*code));
            let expected = Classification {
                category: *category,
                retryable: *retryable,
                reason,
            };
            assert_eq!(got, expected, "{code}");
        }
        // Every code but execution_failed is in the table.
        assert_eq!(cases.len() + 1, F::ALL.len());
    }

    #[test]
    fn messages_follow_the_rules_in_order() {
        #[rustfmt::skip]
        let cases: &[(&str, Option<F>, C, bool, &str)] = &[
            ("Permission required: external_directory (/etc)", None, C::Permission, false, "external_directory_permission_prompt"),
            ("opencode hit an External_Directory permission prompt", None, C::Permission, false, "external_directory_permission_prompt"),
            ("No changes were made to the repository", None, C::Noop, false, "no_actionable_changes"),
            ("GraphQL: No commits between main and agent/x", None, C::Noop, false, "no_actionable_changes"),
            ("Policy violation: change outside allowed paths: a.txt", None, C::Policy, true, "policy_violation"),
            ("denied command: sudo rm", Some(F::ExecutionFailed), C::Policy, true, "policy_violation"),
            ("vitest: No test files found, exiting with code 1", None, C::Setup, false, "verification_command_no_test_files"),
            ("ERR_PNPM_NO_SCRIPT Missing script: lint", None, C::Setup, false, "verification_command_missing_script"),
            ("make: *** No rule to make target 'check'.  Stop.", None, C::Setup, false, "verification_command_missing_script"),
            ("Error: ENOENT: no such file, open '/w/package.json'", None, C::Setup, false, "verification_command_missing_script"),
            ("Unsupported command format: a && b", None, C::Setup, false, "verification_command_unsupported_format"),
            ("Verification failed at test -n \"$(ls dist)\" [explicit]: stderr unavailable", None, C::Setup, false, "verification_command_unsupported_format"),
            ("Verification failed at test -f build/app.bin [explicit]: stderr unavailable", None, C::Setup, false, "verification_command_sequence_issue"),
            ("Verification failed at test -s ./target/release/x [explicit]:  stderr unavailable", None, C::Setup, false, "verification_command_sequence_issue"),
            // Not a build-output directory, and "verification failed" is not "verification
            // commands failed": nothing else matches.
            ("Verification failed at test -f src/lib.rs [explicit]: stderr unavailable", None, C::Model, true, "model_or_unknown_failure"),
            ("Error: Cannot find module 'zod'", None, C::Setup, true, "setup_or_bootstrap_issue"),
            ("bash: cargo: command not found", None, C::Setup, true, "setup_or_bootstrap_issue"),
            ("remote: Repository not found.", None, C::Setup, true, "setup_or_bootstrap_issue"),
            ("connect ECONNREFUSED: connection refused 127.0.0.1:5432", None, C::Env, true, "environment_issue"),
            ("DATABASE_URL is not set", None, C::Env, true, "environment_issue"),
            ("! [rejected] main -> main (non-fast-forward)", None, C::Setup, false, "branch_diverged_requires_recreate"),
            ("branch_diverged_requires_recreate:both_diverged:abc:def", None, C::Setup, false, "branch_diverged_requires_recreate"),
            ("AssertionError: expected 2 to equal 3", None, C::Test, true, "test_failure"),
            ("Verification commands failed", Some(F::ExecutionFailed), C::Test, true, "test_failure"),
            ("HTTP 503 from upstream", None, C::Flaky, true, "transient_or_flaky_failure"),
            ("request timed out after 30s", None, C::Flaky, true, "transient_or_flaky_failure"),
            ("Doom loop detected in tool calls", None, C::ModelLoop, true, "model_doom_loop"),
            ("Unsupported pseudo tool call detected: todowrite", None, C::ModelLoop, true, "model_doom_loop"),
            ("the agent gave up", None, C::Model, true, "model_or_unknown_failure"),
            ("", None, C::Model, true, "model_or_unknown_failure"),
            // Issue 18: words, not the inside of words, and the real CLIs' configuration errors.
            ("unexpected status 401 Unauthorized: Missing bearer or basic authentication in header", None, C::AgentConfig, false, "agent_config"),
            ("Not logged in · Please run /login", Some(F::ExecutionFailed), C::AgentConfig, false, "agent_config"),
            ("litellm.AuthenticationError: Missing Anthropic API Key", None, C::AgentConfig, false, "agent_config"),
            ("ProviderAuthError: Invalid API key", None, C::AgentConfig, false, "agent_config"),
            ("Unexpected server error", None, C::Model, true, "model_or_unknown_failure"),
            ("the environment was set up", None, C::Model, true, "model_or_unknown_failure"),
            ("env: 'node': No such file or directory", None, C::Env, true, "environment_issue"),
            ("thread 'main' panicked: assertion failed: x > 0", None, C::Test, true, "test_failure"),
            ("2 tests failed", None, C::Test, true, "test_failure"),
            ("you have been rate limited", None, C::Flaky, true, "transient_or_flaky_failure"),
            ("Error 4291 in module", None, C::Model, true, "model_or_unknown_failure"),
            ("the agent reported an error: codex could not reach its provider: 9 reconnects in 120s", Some(F::ExecutionFailed), C::Flaky, true, "transient_or_flaky_failure"),
            // Earlier rules win over later ones.
            ("no changes were made; test failed", None, C::Noop, false, "no_actionable_changes"),
            ("command not found: vitest", None, C::Setup, true, "setup_or_bootstrap_issue"),
        ];
        for (message, code, category, retryable, reason) in cases {
            let expected = Classification {
                category: *category,
                retryable: *retryable,
                reason,
            };
            assert_eq!(classify(message, *code), expected, "{message:?}");
        }
    }
}
