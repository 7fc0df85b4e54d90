//! The project's vocabulary as enums: every status, reason and kind the state can hold.
//!
//! Names are the spec's (`spec §1.11`) plus the DESIGN §4 additions. Each enum converts to and from
//! the exact lower-case word stored in SQLite and shown in the CLI, so one word means one thing
//! everywhere. Not for: which status moves are legal (`transition.rs`) or which phase a task
//! shows (`phase.rs`).

use std::fmt;
use std::str::FromStr;

/// Defines a closed vocabulary: an enum whose variants map one-to-one to stored words.
macro_rules! vocabulary {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident => $word:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum $name { $($(#[$vmeta])* $variant),+ }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $word),+ }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $name {
            type Err = UnknownWord;
            fn from_str(text: &str) -> Result<Self, UnknownWord> {
                match text {
                    $($word => Ok($name::$variant),)+
                    _ => Err(UnknownWord {
                        what: stringify!($name),
                        word: text.to_string(),
                        expected: &[$($word),+],
                    }),
                }
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
                text.parse().map_err(|_| serde::de::Error::unknown_variant(&text, &[$($word),+]))
            }
        }

        impl schemars::JsonSchema for $name {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }
            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!({ "type": "string", "enum": [$($word),+] })
            }
        }
    };
}

/// A stored word that is not part of a vocabulary (a corrupt or newer state file).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{word}` is not a known {what} (expected one of: {})", expected.join(", "))]
pub struct UnknownWord {
    pub what: &'static str,
    pub word: String,
    pub expected: &'static [&'static str],
}

vocabulary! {
    /// Task status (spec §1.11).
    TaskStatus {
        Queued => "queued",
        Running => "running",
        Done => "done",
        Failed => "failed",
        Blocked => "blocked",
        Cancelled => "cancelled",
    }
}

impl TaskStatus {
    /// Done and cancelled never change again, except by an explicit human retry of a cancelled task.
    pub fn is_terminal(self) -> bool {
        match self {
            TaskStatus::Done | TaskStatus::Cancelled => true,
            TaskStatus::Queued | TaskStatus::Running | TaskStatus::Failed | TaskStatus::Blocked => {
                false
            }
        }
    }
}

vocabulary! {
    /// Why a `blocked` task waits (spec §1.11, plus the human checkpoints of DESIGN §9).
    BlockReason {
        /// A successful run waits for the judge or the merge queue.
        AwaitingJudge => "awaiting_judge",
        /// A rework or AutoFix child is fixing this task; it follows the child.
        NeedsRework => "needs_rework",
        /// The agent hit a quota; retried after a backoff.
        QuotaWait => "quota_wait",
        /// Waiting for the GitHub issue that mirrors the task.
        IssueLinking => "issue_linking",
        /// A bound was hit or approval is required: only a human moves it on.
        AwaitingHuman => "awaiting_human",
        /// Dispatch paused (budget or `/opentiger pause`); resumes when the cause clears.
        Paused => "paused",
    }
}

vocabulary! {
    /// What a task is for (DESIGN §4: machine state in columns, never in titles).
    TaskKind {
        Feature => "feature",
        Autofix => "autofix",
        AutofixConflict => "autofix_conflict",
        Recreate => "recreate",
        Rework => "rework",
        PrReview => "pr_review",
        Docs => "docs",
        /// A question, not a change: a read-only run writes a report (issue 28).
        Research => "research",
    }
}

vocabulary! {
    /// The agent pool a task runs in (spec §2.3).
    Role {
        Worker => "worker",
        Tester => "tester",
        Docser => "docser",
        /// Answers a question with a report; changes nothing (issue 28).
        Research => "research",
    }
}

vocabulary! {
    /// Dispatcher lane (spec §2.2 step 4).
    Lane {
        Feature => "feature",
        ConflictRecovery => "conflict_recovery",
        Docser => "docser",
    }
}

vocabulary! {
    /// Risk level of a task or a change.
    Risk {
        Low => "low",
        Medium => "medium",
        High => "high",
    }
}

vocabulary! {
    /// Run status (spec §1.2).
    RunStatus {
        Running => "running",
        Success => "success",
        Failed => "failed",
        Cancelled => "cancelled",
    }
}

vocabulary! {
    /// Failure codes a run can end with (spec §3.1).
    FailureCode {
        NoActionableChanges => "no_actionable_changes",
        PolicyViolation => "policy_violation",
        VerificationCommandMissingScript => "verification_command_missing_script",
        VerificationCommandNoTestFiles => "verification_command_no_test_files",
        VerificationCommandMissingMakeTarget => "verification_command_missing_make_target",
        VerificationCommandUnsupportedFormat => "verification_command_unsupported_format",
        VerificationCommandSequenceIssue => "verification_command_sequence_issue",
        VerificationCommandFailed => "verification_command_failed",
        SetupOrBootstrapIssue => "setup_or_bootstrap_issue",
        EnvironmentIssue => "environment_issue",
        TestFailure => "test_failure",
        TransientOrFlakyFailure => "transient_or_flaky_failure",
        ModelDoomLoop => "model_doom_loop",
        ModelOrUnknownFailure => "model_or_unknown_failure",
        ExternalDirectoryPermissionPrompt => "external_directory_permission_prompt",
        QuotaFailure => "quota_failure",
        BranchDivergedRequiresRecreate => "branch_diverged_requires_recreate",
        ExecutionFailed => "execution_failed",
        /// The agent cannot reach its model as configured: a missing or invalid key, not
        /// logged in, an unknown model or provider, an invalid CLI configuration (issue 18).
        AgentConfig => "agent_config",
        /// Issue 36: the threat scan held the change (or a text of the agent's) before anything
        /// left the job; a person approves exactly that commit, or has it redone.
        ThreatFlagged => "threat_flagged",
        /// The run's budget was spent mid-run: opentiger's proxy refused its next model call
        /// (issue 37). Not a failure of the task: it waits for a bigger budget.
        BudgetExceeded => "budget_exceeded",
        /// The agent printed nothing, changed no file and talked to no model for
        /// `agents.<role>.idle_minutes` (issue 37).
        AgentStalled => "agent_stalled",
    }
}

vocabulary! {
    /// Failure categories, each with its own retry budget (spec §3.2, §3.4).
    FailureCategory {
        Env => "env",
        Setup => "setup",
        Permission => "permission",
        Noop => "noop",
        Policy => "policy",
        Test => "test",
        Flaky => "flaky",
        Model => "model",
        ModelLoop => "model_loop",
        /// The agent's configuration (key, login, model, provider): only a person fixes it.
        AgentConfig => "agent_config",
    }
}

vocabulary! {
    /// Keys of a task's attempt counters: one per failure category, plus the other bounded loops
    /// (DESIGN §4: per-category counters instead of one shared `retry_count`).
    AttemptKey {
        Env => "env",
        Setup => "setup",
        Permission => "permission",
        Noop => "noop",
        Policy => "policy",
        Test => "test",
        Flaky => "flaky",
        Model => "model",
        ModelLoop => "model_loop",
        AgentConfig => "agent_config",
        /// Quota waits taken.
        Quota => "quota",
        /// Judge retries after a failed review (LLM down, CI timeout).
        Judge => "judge",
        /// Requeues after a lost lease (killed tick).
        Lease => "lease",
        /// Merges retried because the base branch moved meanwhile.
        Merge => "merge",
    }
}

impl From<FailureCategory> for AttemptKey {
    fn from(category: FailureCategory) -> Self {
        match category {
            FailureCategory::Env => AttemptKey::Env,
            FailureCategory::Setup => AttemptKey::Setup,
            FailureCategory::Permission => AttemptKey::Permission,
            FailureCategory::Noop => AttemptKey::Noop,
            FailureCategory::Policy => AttemptKey::Policy,
            FailureCategory::Test => AttemptKey::Test,
            FailureCategory::Flaky => AttemptKey::Flaky,
            FailureCategory::Model => AttemptKey::Model,
            FailureCategory::ModelLoop => AttemptKey::ModelLoop,
            FailureCategory::AgentConfig => AttemptKey::AgentConfig,
        }
    }
}

vocabulary! {
    /// A judge's verdict (spec §1.11: the code has exactly two).
    Verdict {
        Approve => "approve",
        RequestChanges => "request_changes",
    }
}

vocabulary! {
    /// Merge queue item status (spec §1.8).
    MergeStatus {
        Pending => "pending",
        Processing => "processing",
        Merged => "merged",
        Failed => "failed",
        Cancelled => "cancelled",
    }
}

vocabulary! {
    /// Repository mode (DESIGN §8).
    Mode {
        Github => "github",
        LocalGit => "local-git",
        Direct => "direct",
    }
}

vocabulary! {
    /// When humans must approve work (DESIGN §9).
    ExecutionMode {
        AlwaysExecute => "always-execute",
        Ask => "ask",
        Decide => "decide",
    }
}

vocabulary! {
    /// Where a task is in its lifecycle, for people (issue 14 item 7): derived from its status,
    /// block reason and a few stored facts ([`PhaseFacts`](super::PhaseFacts)) by
    /// `model::phase_of`, never stored.
    Phase {
        /// Accepted (imported or planned), not attempted yet.
        Intake => "intake",
        /// Planned, waiting for the GitHub issue that mirrors it.
        Planning => "planning",
        /// An agent works on it, or its next attempt (or a fix of it) is queued.
        Executing => "executing",
        /// A change exists and waits for CI, the judge or the merge.
        Verifying => "verifying",
        /// Its outcome is decided (done or cancelled), and its issue is not told yet: the
        /// progress comment still shows an earlier phase (github mode only).
        Reporting => "reporting",
        /// Waiting on a person: a review, an approval, a decision.
        AwaitingFeedback => "awaiting_feedback",
        /// Held by a quota, a spent budget or a pause; resumes when the cause clears (a day's
        /// budget on its own, a task's own budget when a person raises it).
        Paused => "paused",
        /// The last attempt failed; recovery decides what happens next.
        Blocked => "blocked",
        /// Merged, done, or cancelled.
        Completed => "completed",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_word_round_trips() {
        for s in TaskStatus::ALL {
            assert_eq!(s.as_str().parse::<TaskStatus>(), Ok(*s));
        }
        for r in BlockReason::ALL {
            assert_eq!(r.as_str().parse::<BlockReason>(), Ok(*r));
        }
        for c in FailureCode::ALL {
            assert_eq!(c.as_str().parse::<FailureCode>(), Ok(*c));
        }
        for k in AttemptKey::ALL {
            let json = serde_json::to_string(k).unwrap();
            assert_eq!(serde_json::from_str::<AttemptKey>(&json).unwrap(), *k);
        }
    }

    #[test]
    fn unknown_words_say_what_was_expected() {
        let err = "needs_human".parse::<BlockReason>().unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("`needs_human` is not a known BlockReason"),
            "{text}"
        );
        assert!(text.contains("awaiting_judge"), "{text}");
    }
}
