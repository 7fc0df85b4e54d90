//! What the fake GitHub knows: issues and pull requests (one number space, as on GitHub),
//! labels, comments, issue events, users and their permission, branches, check runs and commit
//! statuses, the rate-limit window, and a clock that only moves when a test moves it.
//!
//! Plain data and the rules GitHub applies when it changes (labelling records a `labeled`
//! event, merging closes the issues a PR body says it closes, ...). No JSON, and no I/O but
//! the bare repository's git behind branches and merges (`branches`).

mod branches;

use std::collections::BTreeMap;

/// The clock starts here, like the other end-to-end tests' `NOW` (2026-11-21T12:00:00Z).
pub const START: i64 = 1_795_262_400;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Issue {
    pub number: u64,
    pub id: u64,
    pub title: String,
    pub body: Option<String>,
    /// `open` or `closed`.
    pub state: String,
    /// `completed`, `not_planned` or `reopened`, as GitHub sets it.
    pub state_reason: Option<String>,
    pub labels: Vec<String>,
    pub user: String,
    pub author_association: String,
    pub created_at: i64,
    pub updated_at: i64,
    pub closed_at: Option<i64>,
    pub closed_by: Option<String>,
    /// A pull request's issue half: listed by the issues endpoint with a `pull_request` key.
    pub is_pull: bool,
}

/// The pull-request half of a PR; title, body, state and author live in its `Issue`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pull {
    pub number: u64,
    pub id: u64,
    pub head_ref: String,
    pub head_sha: String,
    pub base_ref: String,
    pub base_sha: String,
    pub draft: bool,
    pub merged_at: Option<i64>,
    pub merged_by: Option<String>,
    pub merge_commit_sha: Option<String>,
    /// GitHub computes this in the background; `None` means "not yet known".
    pub mergeable: Option<bool>,
    pub mergeable_state: String,
}

/// A pull request as a test inspects it (both halves joined).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PullView {
    pub number: u64,
    pub title: String,
    pub body: Option<String>,
    pub state: String,
    pub merged: bool,
    pub head_ref: String,
    pub head_sha: String,
    pub base_ref: String,
    pub user: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Comment {
    pub id: u64,
    pub issue: u64,
    pub body: String,
    pub user: String,
    pub author_association: String,
    pub created_at: i64,
    pub updated_at: i64,
}

/// A review of a pull request (`APPROVED`, `CHANGES_REQUESTED` or `COMMENTED`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Review {
    pub id: u64,
    pub pull: u64,
    pub user: String,
    pub author_association: String,
    pub state: String,
    pub body: String,
    /// The PR head the review was written on.
    pub commit_id: String,
    pub submitted_at: i64,
}

/// A comment on lines of a pull request's diff, part of a review.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReviewComment {
    pub id: u64,
    pub pull: u64,
    pub review: u64,
    pub user: String,
    pub author_association: String,
    pub path: String,
    pub start_line: Option<u64>,
    pub line: u64,
    pub body: String,
    pub commit_id: String,
    pub created_at: i64,
}

/// An issue event (`labeled`, `unlabeled`, `closed`, `reopened`, `merged`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    pub id: u64,
    pub issue: u64,
    pub event: String,
    pub actor: String,
    pub label: Option<String>,
    pub commit_id: Option<String>,
    pub state_reason: Option<String>,
    pub created_at: i64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct User {
    pub login: String,
    pub id: u64,
    /// `User`, `Bot` or `Organization`.
    pub kind: String,
    /// The role on this repository: `admin`, `maintain`, `write`, `triage`, `read` or `none`.
    pub role: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Label {
    pub id: u64,
    pub name: String,
    pub color: String,
    pub description: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckRun {
    pub id: u64,
    pub name: String,
    pub status: String,
    pub conclusion: Option<String>,
    pub head_sha: String,
    pub started_at: i64,
    pub completed_at: Option<i64>,
    /// The run's `output.title` and `output.summary`.
    pub title: Option<String>,
    pub summary: Option<String>,
    /// `output.text`, `external_id` and the annotations written with it (`POST /check-runs`).
    pub text: Option<String>,
    pub external_id: String,
    pub annotations: Vec<CheckAnnotation>,
}

/// One annotation of a check run, as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckAnnotation {
    pub path: String,
    pub start_line: u64,
    pub end_line: u64,
    pub level: String,
    pub title: Option<String>,
    pub message: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommitStatus {
    pub id: u64,
    pub context: String,
    pub state: String,
    pub created_at: i64,
    pub description: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RateLimit {
    pub limit: u64,
    pub used: u64,
    pub reset: i64,
}

impl RateLimit {
    pub fn remaining(&self) -> u64 {
        self.limit.saturating_sub(self.used)
    }
}

/// Why a merge was refused.
pub enum MergeRefusal {
    NotFound,
    /// 405: closed, already merged, or not mergeable.
    NotMergeable,
    /// 409: the `sha` the caller expected is not the head any more.
    HeadModified,
    /// 405: a status check the base branch's rules require has not passed on the head.
    RequiredCheck(String),
}

pub struct State {
    pub owner: String,
    pub repo: String,
    pub default_branch: String,
    pub now: i64,
    pub created_at: i64,
    /// The login the token acts as (GitHub Actions' `GITHUB_TOKEN` acts as this bot).
    pub viewer: String,
    pub issues: BTreeMap<u64, Issue>,
    pub pulls: BTreeMap<u64, Pull>,
    pub labels: Vec<Label>,
    pub comments: Vec<Comment>,
    pub reviews: Vec<Review>,
    pub review_comments: Vec<ReviewComment>,
    pub events: Vec<Event>,
    pub users: BTreeMap<String, User>,
    pub branches: BTreeMap<String, String>,
    pub check_runs: BTreeMap<String, Vec<CheckRun>>,
    pub statuses: BTreeMap<String, Vec<CommitStatus>>,
    pub rate: RateLimit,
    /// Required status checks of each branch's rules, by branch.
    pub required_checks: BTreeMap<String, Vec<String>>,
    /// Workflow files, and whether each accepts `workflow_dispatch`.
    pub workflows: BTreeMap<String, bool>,
    /// Whether the token may dispatch workflows (`actions: write`).
    pub actions_write: bool,
    /// The token may write check runs (`checks: write` of an App or workflow token); without
    /// it `POST`/`PATCH` of check runs answer 403, as for a fork's token or a PAT.
    pub checks_write: bool,
    pub dispatches: Vec<super::actions::Dispatched>,
    /// A bare repository behind the API: branch heads are read from it and merges are real
    /// commits in it (`None`: made-up shas, no git).
    pub git_dir: Option<std::path::PathBuf>,
    next_id: u64,
    next_sha: u64,
}

impl State {
    pub fn new(owner: &str, repo: &str) -> State {
        let mut s = State {
            owner: owner.to_string(),
            repo: repo.to_string(),
            default_branch: "main".to_string(),
            now: START,
            created_at: START - 86_400,
            viewer: "github-actions[bot]".to_string(),
            issues: BTreeMap::new(),
            pulls: BTreeMap::new(),
            labels: Vec::new(),
            comments: Vec::new(),
            reviews: Vec::new(),
            review_comments: Vec::new(),
            events: Vec::new(),
            users: BTreeMap::new(),
            branches: BTreeMap::new(),
            check_runs: BTreeMap::new(),
            statuses: BTreeMap::new(),
            rate: RateLimit {
                limit: 5000,
                used: 0,
                reset: START + 3600,
            },
            required_checks: BTreeMap::new(),
            workflows: BTreeMap::new(),
            actions_write: false,
            checks_write: true,
            dispatches: Vec::new(),
            git_dir: None,
            next_id: 1000,
            next_sha: 0,
        };
        s.set_role(owner, "admin");
        s.set_role("github-actions[bot]", "write");
        let main_sha = s.new_sha();
        s.branches.insert("main".into(), main_sha);
        s
    }

    /// A fresh id for comments, events, labels, check runs and statuses.
    pub fn id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// A fresh, deterministic 40-hex commit id.
    pub fn new_sha(&mut self) -> String {
        self.next_sha += 1;
        let h = self.next_sha.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        format!("{:016x}{:016x}{:08x}", h, h.rotate_left(17), self.next_sha)
    }

    /// The user, created on first mention (a `[bot]` login is a Bot).
    pub fn user(&mut self, login: &str) -> User {
        if !self.users.contains_key(login) {
            let id = self.id();
            let kind = if login.ends_with("[bot]") {
                "Bot"
            } else {
                "User"
            };
            // A public repository: everyone can read it.
            self.users.insert(
                login.to_string(),
                User {
                    login: login.to_string(),
                    id,
                    kind: kind.to_string(),
                    role: "read".to_string(),
                },
            );
        }
        self.users[login].clone()
    }

    pub fn set_role(&mut self, login: &str, role: &str) {
        self.user(login);
        if let Some(u) = self.users.get_mut(login) {
            u.role = role.to_string();
        }
    }

    /// What GitHub would put in `author_association` for this login.
    pub fn association(&mut self, login: &str) -> String {
        let role = self.user(login).role;
        if login.eq_ignore_ascii_case(&self.owner) {
            "OWNER".into()
        } else if matches!(role.as_str(), "admin" | "maintain" | "write" | "triage") {
            "COLLABORATOR".into()
        } else {
            "NONE".into()
        }
    }

    /// The label, created (grey, like GitHub) when an issue is first given it.
    pub fn label(&mut self, name: &str) -> Label {
        if let Some(l) = self
            .labels
            .iter()
            .find(|l| l.name.eq_ignore_ascii_case(name))
        {
            return l.clone();
        }
        let label = Label {
            id: self.id(),
            name: name.to_string(),
            color: "ededed".to_string(),
            // Not `None`: the OpenAPI description types a PR list's label `description` as a
            // plain string, so a null there fails the conformance check.
            description: Some(String::new()),
        };
        self.labels.push(label.clone());
        label
    }

    pub fn create_issue(
        &mut self,
        title: &str,
        body: Option<&str>,
        labels: &[String],
        author: &str,
        association: &str,
    ) -> u64 {
        let number = self.issues.keys().next_back().map_or(1, |n| n + 1);
        let id = self.id();
        self.user(author);
        self.issues.insert(
            number,
            Issue {
                number,
                id,
                title: title.to_string(),
                body: body.map(str::to_string),
                state: "open".into(),
                state_reason: None,
                labels: Vec::new(),
                user: author.to_string(),
                author_association: association.to_string(),
                created_at: self.now,
                updated_at: self.now,
                closed_at: None,
                closed_by: None,
                is_pull: false,
            },
        );
        self.add_labels(number, labels, author);
        number
    }

    fn event(&mut self, issue: u64, event: &str, actor: &str) -> &mut Event {
        let id = self.id();
        self.user(actor);
        self.events.push(Event {
            id,
            issue,
            event: event.to_string(),
            actor: actor.to_string(),
            label: None,
            commit_id: None,
            state_reason: None,
            created_at: self.now,
        });
        self.events.last_mut().expect("just pushed")
    }

    /// A PR changed (a review dismissed or deleted): its `updated_at` moves, as on GitHub.
    pub fn touch_pull(&mut self, n: u64) {
        self.touch(n);
    }

    fn touch(&mut self, n: u64) {
        let now = self.now;
        if let Some(i) = self.issues.get_mut(&n) {
            i.updated_at = now;
        }
    }

    /// Adds the labels the issue lacks, each with a `labeled` event by `actor`.
    pub fn add_labels(&mut self, n: u64, names: &[String], actor: &str) {
        for name in names {
            let label = self.label(name);
            let has = self.issues[&n].labels.iter().any(|l| l == &label.name);
            if !has {
                self.issues
                    .get_mut(&n)
                    .expect("caller checked")
                    .labels
                    .push(label.name.clone());
                self.event(n, "labeled", actor).label = Some(label.name);
                self.touch(n);
            }
        }
    }

    /// Removes a label (an `unlabeled` event); false when the issue does not have it.
    pub fn remove_label(&mut self, n: u64, name: &str, actor: &str) -> bool {
        let issue = self.issues.get_mut(&n).expect("caller checked");
        let Some(pos) = issue
            .labels
            .iter()
            .position(|l| l.eq_ignore_ascii_case(name))
        else {
            return false;
        };
        let label = issue.labels.remove(pos);
        self.event(n, "unlabeled", actor).label = Some(label);
        self.touch(n);
        true
    }

    pub fn set_labels(&mut self, n: u64, names: &[String], actor: &str) {
        let current = self.issues[&n].labels.clone();
        for l in current {
            if !names.iter().any(|x| x.eq_ignore_ascii_case(&l)) {
                self.remove_label(n, &l, actor);
            }
        }
        self.add_labels(n, names, actor);
    }

    pub fn close(&mut self, n: u64, actor: &str, reason: &str, commit: Option<String>) {
        let now = self.now;
        let issue = self.issues.get_mut(&n).expect("caller checked");
        if issue.state == "closed" {
            return;
        }
        issue.state = "closed".into();
        issue.state_reason = Some(reason.to_string());
        issue.closed_at = Some(now);
        issue.closed_by = Some(actor.to_string());
        issue.updated_at = now;
        let e = self.event(n, "closed", actor);
        e.commit_id = commit;
        e.state_reason = Some(reason.to_string());
    }

    pub fn reopen(&mut self, n: u64, actor: &str) {
        let now = self.now;
        let issue = self.issues.get_mut(&n).expect("caller checked");
        if issue.state == "open" {
            return;
        }
        issue.state = "open".into();
        issue.state_reason = Some("reopened".into());
        issue.closed_at = None;
        issue.closed_by = None;
        issue.updated_at = now;
        self.event(n, "reopened", actor).state_reason = Some("reopened".into());
    }

    /// `author` submits a review of PR `n`'s current head, with comments on lines
    /// (`(path, start_line, line, body)`); the PR's `updated_at` moves, as on GitHub.
    pub fn add_review(
        &mut self,
        n: u64,
        author: &str,
        state: &str,
        body: &str,
        lines: &[(&str, Option<u64>, u64, &str)],
    ) -> u64 {
        let id = self.id();
        let association = self.association(author);
        let commit_id = self.pulls[&n].head_sha.clone();
        self.reviews.push(Review {
            id,
            pull: n,
            user: author.to_string(),
            author_association: association.clone(),
            state: state.to_string(),
            body: body.to_string(),
            commit_id: commit_id.clone(),
            submitted_at: self.now,
        });
        for (path, start_line, line, text) in lines {
            let cid = self.id();
            self.review_comments.push(ReviewComment {
                id: cid,
                pull: n,
                review: id,
                user: author.to_string(),
                author_association: association.clone(),
                path: path.to_string(),
                start_line: *start_line,
                line: *line,
                body: text.to_string(),
                commit_id: commit_id.clone(),
                created_at: self.now,
            });
        }
        self.touch(n);
        id
    }

    pub fn add_comment(&mut self, n: u64, body: &str, author: &str) -> u64 {
        let id = self.id();
        let association = self.association(author);
        self.comments.push(Comment {
            id,
            issue: n,
            body: body.to_string(),
            user: author.to_string(),
            author_association: association,
            created_at: self.now,
            updated_at: self.now,
        });
        self.touch(n);
        id
    }
}
