//! What tests do to the stand-in's state and read back from it: seeding issues, labels,
//! comments, reviews, pull requests, permissions, checks, statuses, branches and workflows, and
//! inspecting them after a tick, as GitHub would show them.
//!
//! Not for: serving requests (the parent module and `routes`) or the shapes of the answers
//! (`render`).

use super::*;

impl GithubServer {
    // --- seeding ---

    /// An issue opened by `author` (with `author_association` as given, e.g. `OWNER`, `NONE`);
    /// each label gets a `labeled` event by the author, as on GitHub.
    pub fn add_issue(
        &self,
        title: &str,
        body: &str,
        labels: &[&str],
        author: &str,
        association: &str,
    ) -> u64 {
        let labels: Vec<String> = labels.iter().map(|l| l.to_string()).collect();
        self.state()
            .create_issue(title, Some(body), &labels, author, association)
    }

    /// `actor` applies `label` to the issue (a `labeled` event; the label is added if missing).
    pub fn add_label_event(&self, issue: u64, label: &str, actor: &str) {
        let mut s = self.state();
        assert!(s.issues.contains_key(&issue), "no issue #{issue}");
        let had = s.issues[&issue]
            .labels
            .iter()
            .any(|l| l.eq_ignore_ascii_case(label));
        if had {
            s.remove_label(issue, label, actor);
            // Re-labelling by `actor`: GitHub shows both events; the last one is what counts.
        }
        s.add_labels(issue, &[label.to_string()], actor);
    }

    /// `actor` removes `label` from the issue or PR (an `unlabeled` event).
    pub fn remove_label_by(&self, issue: u64, label: &str, actor: &str) {
        let mut s = self.state();
        assert!(s.issues.contains_key(&issue), "no issue #{issue}");
        assert!(
            s.remove_label(issue, label, actor),
            "#{issue} has no {label}"
        );
    }

    /// A review GitHub's PR list does not show yet (its lists lag behind): the PR's
    /// `updated_at` stays as it was, so the open-PR list still answers 304; the review list
    /// has it.
    pub fn add_review_not_yet_listed(
        &self,
        pull: u64,
        author: &str,
        state: &str,
        body: &str,
    ) -> u64 {
        let mut s = self.state();
        let before = s.issues[&pull].updated_at;
        let id = s.add_review(pull, author, state, body, &[]);
        s.issues.get_mut(&pull).expect("checked").updated_at = before;
        id
    }

    /// A maintainer dismisses review `id`: its state becomes `DISMISSED`, as on GitHub.
    pub fn dismiss_review(&self, id: u64) {
        let mut s = self.state();
        let r = s
            .reviews
            .iter_mut()
            .find(|r| r.id == id)
            .unwrap_or_else(|| panic!("no review {id}"));
        r.state = "DISMISSED".to_string();
        let pull = r.pull;
        s.touch_pull(pull);
    }

    /// A review is deleted (a pending one, or by GitHub staff): it is no longer listed.
    pub fn delete_review(&self, id: u64) {
        let mut s = self.state();
        let pull = s.reviews.iter().find(|r| r.id == id).map(|r| r.pull);
        s.reviews.retain(|r| r.id != id);
        s.review_comments.retain(|c| c.review != id);
        if let Some(pull) = pull {
            s.touch_pull(pull);
        }
    }

    /// Someone edits the issue's body (its `updated_at` moves to the server's now).
    pub fn edit_issue_body(&self, issue: u64, body: &str) {
        let mut s = self.state();
        let now = s.now;
        let i = s.issues.get_mut(&issue).expect("no such issue");
        i.body = Some(body.to_string());
        i.updated_at = now;
    }

    /// `actor` reopens a closed issue (its `updated_at` moves to the server's now).
    pub fn reopen_issue(&self, issue: u64, actor: &str) {
        let mut s = self.state();
        assert!(s.issues.contains_key(&issue), "no issue #{issue}");
        s.reopen(issue, actor);
    }

    /// The issue is deleted, or transferred to another repository: it leaves this one's lists.
    pub fn remove_issue(&self, issue: u64) {
        self.state().issues.remove(&issue);
    }

    pub fn add_comment(&self, issue: u64, body: &str, author: &str) -> u64 {
        let mut s = self.state();
        assert!(s.issues.contains_key(&issue), "no issue #{issue}");
        s.add_comment(issue, body, author)
    }

    /// `author` edits their comment (its `updated_at` moves to the server's clock).
    pub fn edit_comment(&self, id: u64, body: &str) {
        let mut s = self.state();
        let now = s.now;
        let c = s
            .comments
            .iter_mut()
            .find(|c| c.id == id)
            .unwrap_or_else(|| panic!("no comment {id}"));
        c.body = body.to_string();
        c.updated_at = now;
        let issue = c.issue;
        if let Some(i) = s.issues.get_mut(&issue) {
            i.updated_at = now;
        }
    }

    /// `author` reviews PR `pull`'s head: `state` is `APPROVED`, `CHANGES_REQUESTED` or
    /// `COMMENTED`; `lines` are comments on the diff, `(path, start_line, line, body)`.
    pub fn add_review(
        &self,
        pull: u64,
        author: &str,
        state: &str,
        body: &str,
        lines: &[(&str, Option<u64>, u64, &str)],
    ) -> u64 {
        let mut s = self.state();
        assert!(s.pulls.contains_key(&pull), "no PR #{pull}");
        s.add_review(pull, author, state, body, lines)
    }

    /// A pull request opened by `author` from `head` into `base`.
    pub fn add_pull(&self, title: &str, body: &str, head: &str, base: &str, author: &str) -> u64 {
        self.state()
            .create_pull(title, Some(body), head, base, author, false)
    }

    /// `admin`, `maintain`, `write`, `triage`, `read` or `none` (users start at `read`; the
    /// owner is `admin`, `github-actions[bot]` is `write`).
    pub fn set_permission(&self, user: &str, role: &str) {
        assert!(
            ["admin", "maintain", "write", "triage", "read", "none"].contains(&role),
            "not a role: {role}"
        );
        self.state().set_role(user, role);
    }

    /// Replaces the check runs of a commit: `(name, status, conclusion)`, e.g.
    /// `("test", "completed", Some("success"))`.
    pub fn set_check_runs(&self, sha: &str, runs: &[(&str, &str, Option<&str>)]) {
        let mut s = self.state();
        let runs = pulls::new_check_runs(&mut s, sha, runs);
        s.check_runs.insert(sha.to_string(), runs);
    }

    /// Every check run named `name` on commit `sha`, oldest first.
    pub fn check_runs_named(&self, sha: &str, name: &str) -> Vec<CheckRun> {
        self.state()
            .check_runs
            .get(sha)
            .map(|runs| runs.iter().filter(|r| r.name == name).cloned().collect())
            .unwrap_or_default()
    }

    /// Every commit status of context `context` on `sha`, oldest first: (state, description).
    pub fn statuses_of(&self, sha: &str, context: &str) -> Vec<(String, Option<String>)> {
        self.state()
            .statuses
            .get(sha)
            .map(|list| {
                list.iter()
                    .filter(|s| s.context == context)
                    .map(|s| (s.state.clone(), s.description.clone()))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Whether `context` passed on `sha` as branch protection reads it (the newest check run
    /// of that name, else the newest status of that context).
    pub fn check_passed(&self, sha: &str, context: &str) -> bool {
        self.state().check_passed(sha, context)
    }

    /// Whether the token may write check runs (default yes); without, writes answer 403.
    pub fn set_checks_write(&self, allowed: bool) {
        self.state().checks_write = allowed;
    }

    /// Sets what a check run of a commit reported (`output.title` and `output.summary`).
    pub fn set_check_output(&self, sha: &str, name: &str, title: &str, summary: &str) {
        let mut s = self.state();
        for run in s.check_runs.get_mut(sha).into_iter().flatten() {
            if run.name == name {
                run.title = Some(title.to_string());
                run.summary = Some(summary.to_string());
            }
        }
    }

    /// Replaces the commit statuses of a commit: `(context, state)` with state `success`,
    /// `failure`, `error` or `pending`.
    pub fn set_status(&self, sha: &str, statuses: &[(&str, &str)]) {
        let mut s = self.state();
        let list = statuses
            .iter()
            .map(|(context, state)| CommitStatus {
                id: s.id(),
                context: context.to_string(),
                state: state.to_string(),
                created_at: s.now,
                description: None,
            })
            .collect();
        s.statuses.insert(sha.to_string(), list);
    }

    /// Points a branch at `sha`, as a push would; open PRs from it follow.
    pub fn set_branch(&self, name: &str, sha: &str) {
        self.state().set_branch(name, sha);
    }

    pub fn branch(&self, name: &str) -> Option<String> {
        self.state().branches.get(name).cloned()
    }

    /// What GitHub computed about a PR's mergeability (`None` = not yet), e.g.
    /// `(Some(false), "dirty")` for a conflict.
    pub fn set_mergeable(&self, pull: u64, mergeable: Option<bool>, state: &str) {
        let mut s = self.state();
        let p = s
            .pulls
            .get_mut(&pull)
            .unwrap_or_else(|| panic!("no PR #{pull}"));
        p.mergeable = mergeable;
        p.mergeable_state = state.to_string();
    }

    /// The required status checks of `branch`'s rules (an empty list: no rule).
    pub fn set_required_checks(&self, branch: &str, contexts: &[&str]) {
        let contexts = contexts.iter().map(|c| c.to_string()).collect();
        self.state()
            .required_checks
            .insert(branch.to_string(), contexts);
    }

    /// A workflow file of the repository, and whether it accepts `workflow_dispatch`.
    pub fn add_workflow(&self, file: &str, dispatchable: bool) {
        self.state()
            .workflows
            .insert(file.to_string(), dispatchable);
    }

    /// Whether the token may dispatch workflows (`actions: write`; off by default).
    pub fn set_actions_write(&self, allowed: bool) {
        self.state().actions_write = allowed;
    }

    /// Sets the base branch of a PR directly (as if its base had been renamed under it); the
    /// branch is created when missing.
    pub fn set_pull_base(&self, pull: u64, base: &str) {
        let mut s = self.state();
        let sha = s.branch_sha(base);
        let p = s
            .pulls
            .get_mut(&pull)
            .unwrap_or_else(|| panic!("no PR #{pull}"));
        p.base_ref = base.to_string();
        p.base_sha = sha;
    }

    /// Deletes a branch, as its owner would: GitHub closes the open PRs based on it.
    pub fn delete_branch(&self, name: &str) {
        let mut s = self.state();
        s.branches.remove(name);
        let based: Vec<u64> = s
            .pulls
            .values()
            .filter(|p| p.base_ref == name && p.merged_at.is_none())
            .map(|p| p.number)
            .collect();
        let owner = s.owner.clone();
        for n in based {
            if s.issues[&n].state == "open" {
                s.close(n, &owner, "not_planned", None);
            }
        }
    }

    // --- inspection ---

    /// The `workflow_dispatch` calls accepted so far.
    pub fn dispatches(&self) -> Vec<Dispatched> {
        self.state().dispatches.clone()
    }

    /// An issue or a PR's issue half.
    pub fn issue(&self, n: u64) -> Option<Issue> {
        self.state().issues.get(&n).cloned()
    }

    pub fn issues(&self) -> Vec<Issue> {
        self.state().issues.values().cloned().collect()
    }

    pub fn pull(&self, n: u64) -> Option<PullView> {
        self.state().pull_view(n)
    }

    pub fn pulls(&self) -> Vec<PullView> {
        let s = self.state();
        s.pulls.keys().filter_map(|n| s.pull_view(*n)).collect()
    }

    pub fn comments(&self, issue: u64) -> Vec<Comment> {
        self.state()
            .comments
            .iter()
            .filter(|c| c.issue == issue)
            .cloned()
            .collect()
    }

    pub fn events(&self, issue: u64) -> Vec<Event> {
        self.state()
            .events
            .iter()
            .filter(|e| e.issue == issue)
            .cloned()
            .collect()
    }
}
