//! Branches and pull requests in the fake's state: branch heads (made-up shas, or read from a
//! bare repository behind the server, whose pushes open PRs follow), opening a PR, merging it
//! as GitHub's merge button does (a real squash commit when there is a repository), and what
//! CI says on a head.
//!
//! Not for: issues, labels, comments and reviews (the parent module); the HTTP routes
//! (`pulls.rs`).

use super::*;

impl State {
    /// The open PR from `head` into `base`, if any (GitHub allows only one).
    pub fn open_pull_for(&self, head: &str, base: &str) -> Option<u64> {
        self.pulls
            .values()
            .find(|p| {
                p.head_ref == head && p.base_ref == base && self.issues[&p.number].state == "open"
            })
            .map(|p| p.number)
    }

    /// Whether a branch exists (in the bare repository behind the server, or set by a test).
    pub fn branch_exists(&self, name: &str) -> bool {
        self.branches.contains_key(name)
            || self.git_dir.as_ref().is_some_and(|dir| {
                git_out(
                    dir,
                    &["rev-parse", "--verify", "-q", &format!("refs/heads/{name}")],
                )
                .is_some()
            })
    }

    /// The sha of a branch: from the bare repository when there is one; otherwise a branch
    /// nobody pushed is created with a made-up sha.
    pub fn branch_sha(&mut self, name: &str) -> String {
        if let Some(sha) = self.git_dir.as_ref().and_then(|dir| {
            git_out(
                dir,
                &["rev-parse", "--verify", "-q", &format!("refs/heads/{name}")],
            )
        }) {
            self.branches.insert(name.to_string(), sha.clone());
            return sha;
        }
        if let Some(sha) = self.branches.get(name) {
            return sha.clone();
        }
        let sha = self.new_sha();
        self.branches.insert(name.to_string(), sha.clone());
        sha
    }

    /// With a bare repository behind the server, open PRs follow pushes to their branch, as on
    /// GitHub: a push moves the PR head and bumps its `updated_at`.
    pub fn follow_pushes(&mut self) {
        let Some(dir) = self.git_dir.clone() else {
            return;
        };
        let open: Vec<(String, String)> = self
            .pulls
            .values()
            .filter(|p| p.merged_at.is_none() && self.issues[&p.number].state == "open")
            .map(|p| (p.head_ref.clone(), p.head_sha.clone()))
            .collect();
        for (branch, known) in open {
            let pushed = git_out(
                &dir,
                &[
                    "rev-parse",
                    "--verify",
                    "-q",
                    &format!("refs/heads/{branch}"),
                ],
            );
            if let Some(sha) = pushed.filter(|sha| *sha != known) {
                self.set_branch(&branch, &sha);
            }
        }
    }

    /// Moves a branch, as a push would: open PRs from it follow.
    pub fn set_branch(&mut self, name: &str, sha: &str) {
        self.branches.insert(name.to_string(), sha.to_string());
        let now = self.now;
        let moved: Vec<u64> = self
            .pulls
            .values_mut()
            .filter(|p| p.head_ref == name && p.merged_at.is_none())
            .map(|p| {
                p.head_sha = sha.to_string();
                p.number
            })
            .collect();
        for n in moved {
            if let Some(i) = self.issues.get_mut(&n) {
                i.updated_at = now;
            }
        }
    }

    pub fn create_pull(
        &mut self,
        title: &str,
        body: Option<&str>,
        head: &str,
        base: &str,
        author: &str,
        draft: bool,
    ) -> u64 {
        let association = self.association(author);
        let number = self.create_issue(title, body, &[], author, &association);
        let id = self.id();
        let head_sha = self.branch_sha(head);
        let base_sha = self.branch_sha(base);
        self.issues.get_mut(&number).expect("just created").is_pull = true;
        self.pulls.insert(
            number,
            Pull {
                number,
                id,
                head_ref: head.to_string(),
                head_sha,
                base_ref: base.to_string(),
                base_sha,
                draft,
                merged_at: None,
                merged_by: None,
                merge_commit_sha: None,
                mergeable: Some(true),
                mergeable_state: if draft { "draft" } else { "clean" }.to_string(),
            },
        );
        number
    }

    /// Merges a PR: it closes, the base branch moves, and (into the default branch only, like
    /// GitHub) the issues its body closes with a keyword (`Closes #3`) are closed.
    pub fn merge(
        &mut self,
        n: u64,
        actor: &str,
        expected_head: Option<&str>,
        message: Option<&str>,
    ) -> Result<String, MergeRefusal> {
        let Some(pull) = self.pulls.get(&n).cloned() else {
            return Err(MergeRefusal::NotFound);
        };
        if self.issues[&n].state != "open"
            || pull.merged_at.is_some()
            || pull.mergeable == Some(false)
            || pull.draft
        {
            return Err(MergeRefusal::NotMergeable);
        }
        if expected_head.is_some_and(|sha| sha != pull.head_sha) {
            return Err(MergeRefusal::HeadModified);
        }
        let required = self
            .required_checks
            .get(&pull.base_ref)
            .cloned()
            .unwrap_or_default();
        if let Some(missing) = required
            .iter()
            .find(|c| !self.check_passed(&pull.head_sha, c))
        {
            return Err(MergeRefusal::RequiredCheck(missing.clone()));
        }
        let sha = match &self.git_dir {
            Some(dir) => squash_merge(
                dir,
                &pull.base_ref,
                &pull.head_ref,
                message.unwrap_or(&self.issues[&n].title),
            )
            .ok_or(MergeRefusal::NotMergeable)?,
            None => self.new_sha(),
        };
        let now = self.now;
        let p = self.pulls.get_mut(&n).expect("checked above");
        p.merged_at = Some(now);
        p.merged_by = Some(actor.to_string());
        p.merge_commit_sha = Some(sha.clone());
        p.mergeable = None;
        p.mergeable_state = "unknown".into();
        self.branches.insert(pull.base_ref.clone(), sha.clone());
        self.event(n, "merged", actor).commit_id = Some(sha.clone());
        self.close(n, actor, "completed", Some(sha.clone()));
        if pull.base_ref == self.default_branch {
            let body = self.issues[&n].body.clone().unwrap_or_default();
            for closed in super::super::pulls::closing_references(&body, &self.owner, &self.repo) {
                let is_open_issue = self
                    .issues
                    .get(&closed)
                    .is_some_and(|i| !i.is_pull && i.state == "open");
                if is_open_issue {
                    self.close(closed, actor, "completed", Some(sha.clone()));
                }
            }
        }
        Ok(sha)
    }

    pub fn pull_view(&self, n: u64) -> Option<PullView> {
        let p = self.pulls.get(&n)?;
        let i = &self.issues[&n];
        Some(PullView {
            number: n,
            title: i.title.clone(),
            body: i.body.clone(),
            state: i.state.clone(),
            merged: p.merged_at.is_some(),
            head_ref: p.head_ref.clone(),
            head_sha: p.head_sha.clone(),
            base_ref: p.base_ref.clone(),
            user: i.user.clone(),
        })
    }

    /// GitHub's combined state: any failure or error fails it, any pending (or none at all)
    /// keeps it pending, else success.
    /// Whether `context` passed on `sha`, as branch protection reads it: the newest check run
    /// of that name (success, neutral, skipped) or the newest status of that context.
    pub fn check_passed(&self, sha: &str, context: &str) -> bool {
        let run = self
            .check_runs
            .get(sha)
            .and_then(|runs| runs.iter().rev().find(|r| r.name == context));
        if let Some(run) = run {
            return matches!(
                run.conclusion.as_deref(),
                Some("success" | "neutral" | "skipped")
            );
        }
        self.statuses
            .get(sha)
            .and_then(|list| list.iter().rev().find(|s| s.context == context))
            .is_some_and(|s| s.state == "success")
    }

    pub fn combined_state(&self, sha: &str) -> &'static str {
        let all = self.statuses.get(sha).map(Vec::as_slice).unwrap_or(&[]);
        let mut seen = std::collections::BTreeSet::new();
        // The newest status of each context counts.
        let statuses: Vec<&CommitStatus> = all
            .iter()
            .rev()
            .filter(|s| seen.insert(s.context.clone()))
            .collect();
        if statuses
            .iter()
            .any(|s| s.state == "failure" || s.state == "error")
        {
            "failure"
        } else if statuses.is_empty() || statuses.iter().any(|s| s.state == "pending") {
            "pending"
        } else {
            "success"
        }
    }
}

/// `git --git-dir <dir> <args>`, its trimmed stdout on success.
fn git_out(dir: &std::path::Path, args: &[&str]) -> Option<String> {
    let out = std::process::Command::new("git")
        .arg("--git-dir")
        .arg(dir)
        .args([
            "-c",
            "user.name=github",
            "-c",
            "user.email=noreply@github.com",
        ])
        .args(args)
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// A squash merge of `head` into `base` inside the bare repository, as GitHub's merge button
/// does: the merged tree (a conflict refuses), one commit on top of the base, the base moved.
fn squash_merge(dir: &std::path::Path, base: &str, head: &str, title: &str) -> Option<String> {
    let base_sha = git_out(dir, &["rev-parse", &format!("refs/heads/{base}")])?;
    let head_sha = git_out(dir, &["rev-parse", &format!("refs/heads/{head}")])?;
    let tree = git_out(dir, &["merge-tree", "--write-tree", &base_sha, &head_sha])?;
    let tree = tree.lines().next()?.to_string();
    let commit = git_out(dir, &["commit-tree", &tree, "-p", &base_sha, "-m", title])?;
    git_out(
        dir,
        &[
            "update-ref",
            &format!("refs/heads/{base}"),
            &commit,
            &base_sha,
        ],
    )?;
    Some(commit)
}
