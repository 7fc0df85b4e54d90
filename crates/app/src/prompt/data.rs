//! The data each prompt template renders, field by field (see the parent module for the
//! templates and the trust rules). Plain values, serialized for handlebars.
//!
//! Not for: rendering, fencing untrusted text (`prompt`).

use serde::Serialize;

/// Data of `worker.md.hbs`: one worker, tester or docser run.
#[derive(Clone, Debug, Default, Serialize)]
pub struct WorkerPrompt {
    /// `worker`, `tester` or `docser` (the words of `model::Role`); picks the role guidance.
    pub role: String,
    pub title: String,
    /// The completion condition.
    pub goal: String,
    pub notes: Option<String>,
    /// Globs the change may touch; empty: "any path allowed by the repository policy".
    pub allowed_paths: Vec<String>,
    /// The verification commands the runner runs after the agent exits (DESIGN §7).
    pub commands: Vec<String>,
    /// Earlier failed attempts of this task, oldest first.
    pub failures: Vec<PriorFailure>,
    /// The path in `$OPENTIGER_RESULT_FILE`; `None` when the agent's CLI cannot write a file of
    /// its own (aider, issue 39): its reply is read instead.
    pub result_file: Option<String>,
    /// The agent's CLI cannot run commands (aider): it is not asked to run the checks, the
    /// runner does.
    pub no_commands: bool,
    /// The issue the task comes from, shown as untrusted data.
    pub issue: Option<IssueText>,
    /// The issue's acceptance criteria, in order (`acceptance_criteria` of its body). Written by
    /// the issue's author: shown as untrusted data.
    pub acceptance_criteria: Vec<String>,
    /// Trusted people's comments on the issue and PR since the import, oldest first, each with a
    /// header line (`@alice (OWNER) on #3 at …:`). Shown as untrusted data.
    pub comments: Vec<String>,
    /// What the runner found inside the sandbox (issue 52): the system and the tools, within
    /// `context.host_chars`. Made by opentiger from its own probe: trusted.
    pub host_context: Option<String>,
    /// What earlier runs of the repository failed on, as opentiger classified it (issue 52),
    /// within `context.hints_chars`: opentiger's words and the configured commands, never a
    /// program's output. Trusted.
    pub failure_hints: Option<String>,
}

/// Data of `research.md.hbs`: a worker's data (the question is the issue) plus where the
/// report goes and what it is read against.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ResearchPrompt {
    #[serde(flatten)]
    pub work: WorkerPrompt,
    /// The commit the workspace holds: evidence is cited at it.
    pub base_sha: String,
    /// The path in `$OPENTIGER_REPORT_FILE`, in the run's scratch folder.
    pub report_file: String,
    pub max_proposals: usize,
}

/// An earlier attempt that failed.
#[derive(Clone, Debug, Default, Serialize)]
pub struct PriorFailure {
    pub attempt: u32,
    /// The failure category word (`model::FailureCategory`), e.g. `test`.
    pub category: String,
    /// A short, redacted excerpt of its output (`Redactor::excerpt`). Shown as untrusted data.
    pub excerpt: String,
}

/// An issue's text: title and body are untrusted; number and author are forge metadata.
#[derive(Clone, Debug, Default, Serialize)]
pub struct IssueText {
    pub number: Option<u64>,
    pub author: Option<String>,
    pub title: String,
    pub body: String,
}

/// Data of `detector.md.hbs`: the threat scan's detection agent on one change (issue 36).
#[derive(Clone, Debug, Default, Serialize)]
pub struct DetectorPrompt {
    /// The change (already size-limited, redacted). Shown as untrusted data.
    pub diff: String,
    /// The agent's texts that would be posted with it.
    pub texts: Vec<PlacedText>,
    pub result_file: Option<String>,
}

/// One of an agent's texts and where it would go (`the PR body`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct PlacedText {
    pub place: String,
    pub text: String,
}

/// Data of `judge.md.hbs`: one review of a change.
#[derive(Clone, Debug, Default, Serialize)]
pub struct JudgePrompt {
    pub title: String,
    pub goal: String,
    pub notes: Option<String>,
    pub allowed_paths: Vec<String>,
    /// The diff under review (already size-limited). Shown in the data section, with
    /// `agent_texts` (issue 48).
    pub diff: String,
    /// What the agents wrote with the change (the worker's summary, the PR body): data.
    pub agent_texts: Vec<PlacedText>,
    pub verification: Vec<VerificationResult>,
    /// What the policy check found (paths, sizes); empty when it passed.
    pub policy_findings: Vec<String>,
    /// What the runner's threat scan found in the change and its texts (a path held for a
    /// person, text aimed at a reviewer, …), in its own words: trusted (issue 48).
    pub scan_findings: Vec<String>,
    /// As in [`WorkerPrompt`]: `None` asks for the verdict in the reply.
    pub result_file: Option<String>,
    /// The issue the task comes from, shown as untrusted data: the change is reviewed against it.
    pub issue: Option<IssueText>,
    /// The issue's acceptance criteria, in order: the judge answers for each one, by number.
    /// Shown as untrusted data.
    pub acceptance_criteria: Vec<String>,
    /// As in [`WorkerPrompt`]: the sandbox the change's checks ran in.
    pub host_context: Option<String>,
}

/// One verification command the runner ran on the change.
#[derive(Clone, Debug, Default, Serialize)]
pub struct VerificationResult {
    pub command: String,
    pub passed: bool,
    /// A redacted excerpt of its output, usually only for failures. Shown as untrusted data.
    pub output: Option<String>,
}

/// Data of `planner.md.hbs`: one planning run for the requirement.
#[derive(Clone, Debug, Default, Serialize)]
pub struct PlannerPrompt {
    pub requirement: RequirementPrompt,
    /// Paths of the repository's files (a repo map), possibly cut short. Shown as untrusted data.
    pub repo_files: Vec<String>,
    /// How many files were left out of `repo_files`.
    pub repo_files_omitted: usize,
    /// Tasks queued, running or blocked, so the planner does not duplicate them.
    pub active_tasks: Vec<ActiveTask>,
    pub judge_feedback: Vec<JudgeFeedback>,
    pub max_tasks: Option<u32>,
    /// As in [`WorkerPrompt`]: `None` asks for the plan in the reply.
    pub result_file: Option<String>,
    /// As in [`WorkerPrompt`]: what the tasks' agents and checks will find.
    pub host_context: Option<String>,
    /// Tools the sandbox does not have (its snapshot, the lessons): no task's commands may
    /// need one (issue 52).
    pub missing_tools: Vec<String>,
}

/// The requirement (`docs/requirement.md`), as parsed.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RequirementPrompt {
    pub goal: String,
    pub acceptance_criteria: Vec<String>,
    pub constraints: Vec<String>,
    pub allowed_paths: Vec<String>,
    pub notes: Option<String>,
}

/// A task the planner must not duplicate.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ActiveTask {
    pub id: String,
    pub title: String,
    /// The status word, e.g. `queued`.
    pub status: String,
    pub role: String,
}

/// A recent judge verdict, so plans avoid problems reviewers keep finding.
#[derive(Clone, Debug, Default, Serialize)]
pub struct JudgeFeedback {
    pub task_title: String,
    /// `approve` or `request_changes`.
    pub verdict: String,
    pub summary: String,
    pub findings: Vec<String>,
}
