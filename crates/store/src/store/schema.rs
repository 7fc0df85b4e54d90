//! The SQLite schema (DESIGN §4) and its forward migrations, keyed by `PRAGMA user_version`.
//!
//! A migration is appended, never edited: version N's SQL turns a version N-1 file into version N.
//! Not for: running them or refusing a newer file (`store`, `Store::migrate`), or reading rows
//! (`store::rows`).

/// Each entry migrates from version `index` to version `index + 1`.
pub const MIGRATIONS: &[&str] = &[
    V1, V2, V3, V4, V5, V6, V7, V8, V9, V10, V11, V12, V13, V14, V15, V16,
];

pub const LATEST: i64 = MIGRATIONS.len() as i64;

const V1: &str = r#"
CREATE TABLE tasks (
    id              TEXT PRIMARY KEY,
    title           TEXT NOT NULL,
    goal            TEXT NOT NULL,
    kind            TEXT NOT NULL,
    role            TEXT NOT NULL,
    lane            TEXT NOT NULL,
    status          TEXT NOT NULL,
    block_reason    TEXT,
    status_reason   TEXT,
    priority        INTEGER NOT NULL DEFAULT 0,
    risk            TEXT NOT NULL DEFAULT 'low',
    target_area     TEXT,
    touches         TEXT NOT NULL DEFAULT '[]',
    allowed_paths   TEXT NOT NULL DEFAULT '[]',
    commands        TEXT NOT NULL DEFAULT '[]',
    parent_task_id  TEXT REFERENCES tasks(id),
    source_pr       INTEGER,
    issue_number    INTEGER,
    rework_depth    INTEGER NOT NULL DEFAULT 0,
    attempts        TEXT NOT NULL DEFAULT '{}',
    next_attempt_at INTEGER,
    timebox_minutes INTEGER NOT NULL DEFAULT 60,
    notes           TEXT NOT NULL DEFAULT '',
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    CHECK ((status = 'blocked') = (block_reason IS NOT NULL))
) STRICT;
CREATE INDEX tasks_by_status ON tasks(status);
CREATE INDEX tasks_by_parent ON tasks(parent_task_id) WHERE parent_task_id IS NOT NULL;

CREATE TABLE task_dependencies (
    task_id    TEXT NOT NULL REFERENCES tasks(id),
    depends_on TEXT NOT NULL REFERENCES tasks(id),
    PRIMARY KEY (task_id, depends_on),
    CHECK (task_id <> depends_on)
) STRICT, WITHOUT ROWID;
CREATE INDEX task_dependencies_reverse ON task_dependencies(depends_on);

CREATE TABLE runs (
    id                TEXT PRIMARY KEY,
    task_id           TEXT NOT NULL REFERENCES tasks(id),
    agent_id          TEXT NOT NULL,
    tick_id           TEXT NOT NULL,
    role              TEXT NOT NULL,
    executor          TEXT,
    status            TEXT NOT NULL,
    started_at        INTEGER NOT NULL,
    finished_at       INTEGER,
    failure_code      TEXT,
    error             TEXT,
    cost_usd          REAL NOT NULL DEFAULT 0,
    input_tokens      INTEGER NOT NULL DEFAULT 0,
    output_tokens     INTEGER NOT NULL DEFAULT 0,
    session_id        TEXT,
    branch            TEXT,
    head_sha          TEXT,
    pr_number         INTEGER,
    summary           TEXT,
    judged_at         INTEGER,
    judgement_version INTEGER NOT NULL DEFAULT 0
) STRICT;
CREATE INDEX runs_by_task ON runs(task_id, started_at);
CREATE INDEX runs_running ON runs(task_id) WHERE status = 'running';

CREATE TABLE leases (
    task_id     TEXT PRIMARY KEY REFERENCES tasks(id),
    run_id      TEXT NOT NULL REFERENCES runs(id),
    agent_id    TEXT NOT NULL,
    tick_id     TEXT NOT NULL,
    acquired_at INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL
) STRICT;

CREATE TABLE judgements (
    id             INTEGER PRIMARY KEY,
    run_id         TEXT NOT NULL REFERENCES runs(id),
    task_id        TEXT NOT NULL REFERENCES tasks(id),
    head_sha       TEXT NOT NULL,
    verdict        TEXT NOT NULL,
    summary        TEXT NOT NULL,
    findings       TEXT NOT NULL DEFAULT '[]',
    created_at     INTEGER NOT NULL,
    invalidated_at INTEGER
) STRICT;
CREATE INDEX judgements_by_run ON judgements(run_id);

CREATE TABLE merge_queue (
    id              INTEGER PRIMARY KEY,
    task_id         TEXT NOT NULL REFERENCES tasks(id),
    run_id          TEXT NOT NULL REFERENCES runs(id),
    pr_number       INTEGER,
    head_sha        TEXT NOT NULL,
    status          TEXT NOT NULL,
    attempt_count   INTEGER NOT NULL DEFAULT 0,
    max_attempts    INTEGER NOT NULL,
    next_attempt_at INTEGER NOT NULL,
    last_error      TEXT,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    UNIQUE (task_id, run_id)
) STRICT;

CREATE TABLE events (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    at         INTEGER NOT NULL,
    tick_id    TEXT,
    actor      TEXT NOT NULL,
    kind       TEXT NOT NULL,
    task_id    TEXT,
    run_id     TEXT,
    from_state TEXT,
    to_state   TEXT,
    reason     TEXT NOT NULL,
    payload    TEXT NOT NULL DEFAULT '{}'
) STRICT;
CREATE INDEX events_by_task ON events(task_id) WHERE task_id IS NOT NULL;
CREATE TRIGGER events_are_append_only BEFORE UPDATE ON events
BEGIN
    SELECT RAISE(ABORT, 'events are append-only');
END;

CREATE TABLE forge_cursors (
    key        TEXT PRIMARY KEY,
    etag       TEXT,
    since      TEXT,
    updated_at INTEGER NOT NULL
) STRICT;

CREATE TABLE ticks (
    id          TEXT PRIMARY KEY,
    agent_id    TEXT NOT NULL,
    started_at  INTEGER NOT NULL,
    finished_at INTEGER,
    outcome     TEXT,
    summary     TEXT NOT NULL DEFAULT '{}'
) STRICT;
CREATE INDEX ticks_by_start ON ticks(started_at);

CREATE TABLE budgets (
    scope         TEXT NOT NULL,
    key           TEXT NOT NULL,
    spent_usd     REAL NOT NULL DEFAULT 0,
    input_tokens  INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    runs          INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (scope, key)
) STRICT, WITHOUT ROWID;
"#;

/// Plans: one row per planner attempt, keyed by the signature of what was planned (requirement
/// content and base head), so the same inputs are never planned twice (spec §2.1 step 9, here
/// without a time window).
const V2: &str = r#"
CREATE TABLE plans (
    id               TEXT PRIMARY KEY,
    signature        TEXT NOT NULL,
    requirement_hash TEXT NOT NULL,
    base_head        TEXT NOT NULL,
    status           TEXT NOT NULL,
    source           TEXT NOT NULL,
    task_count       INTEGER NOT NULL DEFAULT 0,
    errors           TEXT NOT NULL DEFAULT '[]',
    tick_id          TEXT,
    created_at       INTEGER NOT NULL
) STRICT;
CREATE INDEX plans_by_signature ON plans(signature, created_at);

-- `execution_mode: ask`: a task waiting for a person's approval before it may run.
ALTER TABLE tasks ADD COLUMN needs_approval INTEGER NOT NULL DEFAULT 0;
"#;

/// Totals that survive pruning (runs and events of long-finished tasks are deleted to keep the
/// state small enough to push every tick; what they counted stays here).
const V3: &str = r#"
CREATE TABLE counters (
    name  TEXT PRIMARY KEY,
    value INTEGER NOT NULL DEFAULT 0
) STRICT, WITHOUT ROWID;
CREATE INDEX runs_by_finish ON runs(finished_at) WHERE finished_at IS NOT NULL;
CREATE INDEX events_by_time ON events(at);
"#;

/// What the forge sync last saw (github mode): the state of task PRs, and the cached bodies of
/// conditional requests (a 304 says "unchanged", so the last body is still the answer).
const V4: &str = r#"
CREATE TABLE pull_states (
    number     INTEGER PRIMARY KEY,
    state      TEXT NOT NULL,
    head_sha   TEXT,
    updated_at INTEGER NOT NULL
) STRICT;
ALTER TABLE forge_cursors ADD COLUMN body TEXT;
"#;

/// What CI said about a task PR's head (github mode), for the judge.
const V5: &str = r#"
ALTER TABLE pull_states ADD COLUMN checks TEXT;
"#;

/// Executors parked on a quota (issue 9 fallbacks), by key (`claude-code`, `codex:o4-mini`):
/// until when, how many quota hits in a row, and what parked it.
const V6: &str = r#"
CREATE TABLE executor_waits (
    key        TEXT PRIMARY KEY,
    until      INTEGER NOT NULL,
    hits       INTEGER NOT NULL,
    reason     TEXT NOT NULL,
    updated_at INTEGER NOT NULL
) STRICT;
"#;

/// Executors parked for their configuration (issue 18: `agent_config`): the fingerprint of the
/// configuration they failed with; such a park holds until it changes, not until a time.
const V7: &str = r#"
ALTER TABLE executor_waits ADD COLUMN config TEXT;
"#;

/// People steering from GitHub (issue 17): each comment command acted on, keyed by its comment
/// id (exactly once) with the reply owed and when it was posted; per-task budgets set by a
/// command; the repository's pause; one escalation comment per task and question.
const V8: &str = r#"
CREATE TABLE commands (
    comment_id INTEGER PRIMARY KEY,
    thread     INTEGER NOT NULL,
    author     TEXT NOT NULL,
    line       TEXT NOT NULL,
    outcome    TEXT NOT NULL,
    reply      TEXT,
    replied_at INTEGER,
    created_at INTEGER NOT NULL
) STRICT;
CREATE INDEX commands_unreplied ON commands(replied_at) WHERE replied_at IS NULL;
CREATE TABLE task_budgets (
    task_id TEXT PRIMARY KEY,
    usd     REAL NOT NULL,
    set_by  TEXT NOT NULL,
    set_at  INTEGER NOT NULL
) STRICT;
CREATE TABLE repo_pause (
    id        INTEGER PRIMARY KEY CHECK (id = 1),
    paused_by TEXT NOT NULL,
    paused_at INTEGER NOT NULL,
    comment   TEXT
) STRICT;
CREATE TABLE escalations (
    task_id     TEXT NOT NULL,
    question    TEXT NOT NULL,
    thread      INTEGER NOT NULL,
    body        TEXT NOT NULL,
    comment_id  INTEGER,
    posted_body TEXT,
    opened_at   INTEGER NOT NULL,
    resolved_at INTEGER,
    defaults    INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (task_id, question)
) STRICT;
"#;

/// The issue a task comes from, kept as the task's spec (issue 14): title and body redacted and
/// size-capped, a hash to notice edits, keyed by issue number (its AutoFix and conflict-fix
/// children share the issue).
const V9: &str = r#"
CREATE TABLE issue_specs (
    number     INTEGER PRIMARY KEY,
    title      TEXT NOT NULL,
    body       TEXT NOT NULL,
    author     TEXT NOT NULL,
    url        TEXT NOT NULL,
    hash       TEXT NOT NULL,
    updated_at INTEGER NOT NULL
) STRICT;
-- Comments by trusted people on a task's issue or PR, written after its import (context for
-- the next attempt); untrusted comments are never stored.
CREATE TABLE thread_comments (
    id         INTEGER PRIMARY KEY,
    thread     INTEGER NOT NULL,
    author     TEXT NOT NULL,
    association TEXT NOT NULL,
    body       TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
) STRICT;
CREATE INDEX thread_comments_by_thread ON thread_comments(thread, created_at);
-- Trusted people's reviews of task PRs (JSON of model::PullReview), by PR.
CREATE TABLE pull_reviews (
    id     INTEGER PRIMARY KEY,
    pr     INTEGER NOT NULL,
    review TEXT NOT NULL
) STRICT;
CREATE INDEX pull_reviews_by_pr ON pull_reviews(pr);
-- The judge's answer per acceptance criterion of the issue (JSON list of CriterionCheck).
ALTER TABLE judgements ADD COLUMN criteria TEXT NOT NULL DEFAULT '[]';
"#;

/// Which plan made each planned task (issue 17, `/opentiger replan`: a plan's unstarted tasks
/// are cancelled together). Tasks planned before this version have no row.
const V10: &str = r#"
CREATE TABLE plan_tasks (
    task_id TEXT PRIMARY KEY,
    plan_id TEXT NOT NULL
) STRICT, WITHOUT ROWID;
"#;

/// Research tasks (issue 28): each one's latest report (redacted, capped, evidence linked),
/// its answers per acceptance criterion and its proposals (JSON lists of `CriterionCheck` and
/// `Proposal`), kept in the record phase so a tick killed before posting loses nothing.
const V11: &str = r#"
CREATE TABLE research_reports (
    task_id    TEXT PRIMARY KEY REFERENCES tasks(id),
    run_id     TEXT NOT NULL,
    base_sha   TEXT NOT NULL,
    body       TEXT NOT NULL,
    criteria   TEXT NOT NULL DEFAULT '[]',
    proposals  TEXT NOT NULL DEFAULT '[]',
    updated_at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
"#;

/// What the egress proxy saw of each run (issue 37): the spend the CLI reported besides the
/// metered one (`cost_usd` is the larger of the two), the tokens metered per model (JSON of
/// `model::network::Metering`, NULL when nothing was metered) and the hosts refused (JSON list
/// of `model::network::Refusal`). The judge's and the planner's agent runs, which are not task
/// runs, get a row each in `agent_spend`.
const V12: &str = r#"
ALTER TABLE runs ADD COLUMN reported_usd REAL NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN metered TEXT;
ALTER TABLE runs ADD COLUMN refused TEXT NOT NULL DEFAULT '[]';
CREATE TABLE agent_spend (
    id           INTEGER PRIMARY KEY,
    at           INTEGER NOT NULL,
    role         TEXT NOT NULL,
    task_id      TEXT,
    run_id       TEXT,
    executor     TEXT,
    cost_usd     REAL NOT NULL,
    reported_usd REAL NOT NULL,
    metered      TEXT,
    refused      TEXT NOT NULL DEFAULT '[]'
) STRICT;
CREATE INDEX agent_spend_by_task ON agent_spend(task_id) WHERE task_id IS NOT NULL;
CREATE INDEX agent_spend_by_time ON agent_spend(at);
"#;

/// Issue 36: a person's approval of a change the threat scan held, bound to its commit: the
/// next run delivers exactly that commit, nothing else.
const V13: &str = r#"
CREATE TABLE scan_approvals (
    task_id     TEXT NOT NULL REFERENCES tasks(id),
    head_sha    TEXT NOT NULL,
    approved_by TEXT NOT NULL,
    approved_at INTEGER NOT NULL,
    PRIMARY KEY (task_id, head_sha)
) STRICT, WITHOUT ROWID;
"#;

/// Issue 36: a held change is kept nowhere but on the runner's machine, so what a person
/// approves must name the change itself: its commit, tree and start (recorded when it is
/// held). An approval lets out that change once (`used_at`).
const V14: &str = r#"
CREATE TABLE held_changes (
    task_id    TEXT NOT NULL REFERENCES tasks(id),
    head_sha   TEXT NOT NULL,
    tree_sha   TEXT NOT NULL,
    start_sha  TEXT NOT NULL,
    held_at    INTEGER NOT NULL,
    PRIMARY KEY (task_id, head_sha)
) STRICT, WITHOUT ROWID;
ALTER TABLE scan_approvals ADD COLUMN tree_sha TEXT;
ALTER TABLE scan_approvals ADD COLUMN start_sha TEXT;
ALTER TABLE scan_approvals ADD COLUMN used_at INTEGER;
"#;

/// Issue 52: what the loop learned about where agents run. The host snapshot (one row: the
/// facts as JSON of `model::learned::HostSnapshot`), the failure lessons (one row per
/// signature, JSON of `model::learned::Signature`, bounded by `context.max_lessons`), and each
/// run's prompt size (characters, and what the host context and failure hints took of them).
const V15: &str = r#"
CREATE TABLE host_snapshot (
    id       INTEGER PRIMARY KEY CHECK (id = 1),
    taken_at INTEGER NOT NULL,
    facts    TEXT NOT NULL
) STRICT;
CREATE TABLE lessons (
    id         TEXT PRIMARY KEY,
    signature  TEXT NOT NULL,
    count      INTEGER NOT NULL,
    first_seen INTEGER NOT NULL,
    last_seen  INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
ALTER TABLE runs ADD COLUMN prompt_chars INTEGER;
ALTER TABLE runs ADD COLUMN host_chars INTEGER;
ALTER TABLE runs ADD COLUMN hints_chars INTEGER;
"#;

/// Issue 51: a person asked a running run to stop (`opentiger task stop`, `/opentiger stop`).
/// The tick running it reads this while its agent runs; the record of the run removes it.
const V16: &str = r#"
CREATE TABLE stop_requests (
    run_id   TEXT PRIMARY KEY,
    task_id  TEXT NOT NULL REFERENCES tasks(id),
    asked_by TEXT NOT NULL,
    asked_at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
"#;
