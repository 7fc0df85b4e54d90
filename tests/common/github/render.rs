//! GitHub's JSON for the server's state: every field GitHub's OpenAPI description marks as
//! required (checked by `tests/openapi/validate.mjs`), with GitHub's URL layout under the
//! server's own address (`url` fields are API URLs, `html_url` fields web URLs).

use serde_json::{json, Value};

use super::http::{encode, rfc3339};
use super::state::{
    CheckRun, Comment, CommitStatus, Event, Label, RateLimit, Review, ReviewComment, State, User,
};

pub const DOCS: &str = "https://docs.github.com/rest";

pub struct Render<'a> {
    pub s: &'a State,
    /// `http://127.0.0.1:PORT`
    pub base: &'a str,
}

fn time(t: i64) -> Value {
    Value::String(rfc3339(t))
}

fn opt_time(t: Option<i64>) -> Value {
    t.map_or(Value::Null, time)
}

/// A GraphQL-ish global id: GitHub's are opaque strings.
fn node_id(kind: &str, id: u64) -> String {
    format!("{kind}_kw{id:08}")
}

impl Render<'_> {
    fn api(&self) -> String {
        format!("{}/repos/{}/{}", self.base, self.s.owner, self.s.repo)
    }

    fn html(&self) -> String {
        format!("{}/{}/{}", self.base, self.s.owner, self.s.repo)
    }

    pub fn user(&self, login: &str) -> Value {
        let fallback;
        let u = match self.s.users.get(login) {
            Some(u) => u,
            None => {
                fallback = User {
                    login: login.to_string(),
                    id: 0,
                    kind: "User".into(),
                    role: "none".into(),
                };
                &fallback
            }
        };
        let url = format!("{}/users/{}", self.base, encode(&u.login));
        json!({
            "login": u.login,
            "id": u.id,
            "node_id": node_id(if u.kind == "Bot" { "BOT" } else { "U" }, u.id),
            "avatar_url": format!("{}/avatars/u/{}?v=4", self.base, u.id),
            "gravatar_id": "",
            "url": url,
            "html_url": format!("{}/{}", self.base, encode(&u.login)),
            "followers_url": format!("{url}/followers"),
            "following_url": format!("{url}/following{{/other_user}}"),
            "gists_url": format!("{url}/gists{{/gist_id}}"),
            "starred_url": format!("{url}/starred{{/owner}}{{/repo}}"),
            "subscriptions_url": format!("{url}/subscriptions"),
            "organizations_url": format!("{url}/orgs"),
            "repos_url": format!("{url}/repos"),
            "events_url": format!("{url}/events{{/privacy}}"),
            "received_events_url": format!("{url}/received_events"),
            "type": u.kind,
            "user_view_type": "public",
            "site_admin": false,
        })
    }

    pub fn label(&self, l: &Label) -> Value {
        json!({
            "id": l.id,
            "node_id": node_id("LA", l.id),
            "url": format!("{}/labels/{}", self.api(), encode(&l.name)),
            "name": l.name,
            "color": l.color,
            "default": false,
            "description": l.description,
        })
    }

    pub fn label_named(&self, name: &str) -> Value {
        match self.s.labels.iter().find(|l| l.name == name) {
            Some(l) => self.label(l),
            None => json!({ "name": name }),
        }
    }

    pub fn issue(&self, n: u64) -> Value {
        let i = &self.s.issues[&n];
        let url = format!("{}/issues/{n}", self.api());
        let comments = self.s.comments.iter().filter(|c| c.issue == n).count();
        let kind = if i.is_pull { "pull" } else { "issues" };
        let mut v = json!({
            "id": i.id,
            "node_id": node_id("I", i.id),
            "url": url,
            "repository_url": self.api(),
            "labels_url": format!("{url}/labels{{/name}}"),
            "comments_url": format!("{url}/comments"),
            "events_url": format!("{url}/events"),
            "html_url": format!("{}/{kind}/{n}", self.html()),
            "number": n,
            "state": i.state,
            "state_reason": i.state_reason,
            "title": i.title,
            "body": i.body,
            "user": self.user(&i.user),
            "labels": i.labels.iter().map(|l| self.label_named(l)).collect::<Vec<_>>(),
            "assignee": null,
            "assignees": [],
            "milestone": null,
            "locked": false,
            "active_lock_reason": null,
            "comments": comments,
            "closed_at": opt_time(i.closed_at),
            "created_at": time(i.created_at),
            "updated_at": time(i.updated_at),
            "closed_by": i.closed_by.as_deref().map(|u| self.user(u)),
            "author_association": i.author_association,
            "timeline_url": format!("{url}/timeline"),
            "performed_via_github_app": null,
        });
        if let Some(p) = self.s.pulls.get(&n) {
            v["pull_request"] = json!({
                "url": format!("{}/pulls/{n}", self.api()),
                "html_url": format!("{}/pull/{n}", self.html()),
                "diff_url": format!("{}/pull/{n}.diff", self.html()),
                "patch_url": format!("{}/pull/{n}.patch", self.html()),
                "merged_at": opt_time(p.merged_at),
            });
            v["draft"] = json!(p.draft);
        }
        v
    }

    pub fn comment(&self, c: &Comment) -> Value {
        json!({
            "id": c.id,
            "node_id": node_id("IC", c.id),
            "url": format!("{}/issues/comments/{}", self.api(), c.id),
            "html_url": format!("{}/issues/{}#issuecomment-{}", self.html(), c.issue, c.id),
            "issue_url": format!("{}/issues/{}", self.api(), c.issue),
            "body": c.body,
            "user": self.user(&c.user),
            "created_at": time(c.created_at),
            "updated_at": time(c.updated_at),
            "author_association": c.author_association,
            "performed_via_github_app": null,
        })
    }

    pub fn review(&self, r: &Review) -> Value {
        let html = format!("{}/pull/{}#pullrequestreview-{}", self.html(), r.pull, r.id);
        let pull = format!("{}/pulls/{}", self.api(), r.pull);
        json!({
            "id": r.id,
            "node_id": node_id("PRR", r.id),
            "user": self.user(&r.user),
            "body": r.body,
            "state": r.state,
            "html_url": html,
            "pull_request_url": pull,
            "_links": {"html": {"href": html}, "pull_request": {"href": pull}},
            "submitted_at": time(r.submitted_at),
            "commit_id": r.commit_id,
            "author_association": r.author_association,
        })
    }

    pub fn review_comment(&self, c: &ReviewComment) -> Value {
        let url = format!("{}/pulls/comments/{}", self.api(), c.id);
        let html = format!("{}/pull/{}#discussion_r{}", self.html(), c.pull, c.id);
        let pull = format!("{}/pulls/{}", self.api(), c.pull);
        json!({
            "url": url,
            "id": c.id,
            "node_id": node_id("PRRC", c.id),
            "pull_request_review_id": c.review,
            "diff_hunk": format!("@@ -{0},1 +{0},1 @@", c.line),
            "path": c.path,
            "position": 1,
            "original_position": 1,
            "commit_id": c.commit_id,
            "original_commit_id": c.commit_id,
            "user": self.user(&c.user),
            "body": c.body,
            "created_at": time(c.created_at),
            "updated_at": time(c.created_at),
            "html_url": html,
            "pull_request_url": pull,
            "author_association": c.author_association,
            "_links": {"self": {"href": url}, "html": {"href": html}, "pull_request": {"href": pull}},
            "start_line": c.start_line,
            "original_start_line": c.start_line,
            "start_side": c.start_line.map(|_| "RIGHT"),
            "line": c.line,
            "original_line": c.line,
            "side": "RIGHT",
            "subject_type": "line",
        })
    }

    pub fn event(&self, e: &Event) -> Value {
        let mut v = json!({
            "id": e.id,
            "node_id": node_id("E", e.id),
            "url": format!("{}/issues/events/{}", self.api(), e.id),
            "actor": self.user(&e.actor),
            "event": e.event,
            "commit_id": e.commit_id,
            "commit_url": e.commit_id.as_ref().map(|c| format!("{}/commits/{c}", self.api())),
            "created_at": time(e.created_at),
            "performed_via_github_app": null,
        });
        if let Some(name) = &e.label {
            let color = self
                .s
                .labels
                .iter()
                .find(|l| &l.name == name)
                .map_or("ededed", |l| l.color.as_str());
            v["label"] = json!({ "name": name, "color": color });
        }
        if let Some(reason) = &e.state_reason {
            v["state_reason"] = json!(reason);
        }
        v
    }

    /// The full repository object (a superset of `repository` and `minimal-repository`).
    pub fn repo(&self) -> Value {
        let api = self.api();
        let open = self.s.issues.values().filter(|i| i.state == "open").count();
        let full_name = format!("{}/{}", self.s.owner, self.s.repo);
        let id = 424_242;
        let mut v = json!({
            "id": id,
            "node_id": node_id("R", id),
            "name": self.s.repo,
            "full_name": full_name,
            "owner": self.user(&self.s.owner),
            "private": false,
            "visibility": "public",
            "html_url": self.html(),
            "description": null,
            "fork": false,
            "url": api,
            "git_url": format!("{}/{full_name}.git", self.base.replacen("http", "git", 1)),
            "ssh_url": format!("git@127.0.0.1:{full_name}.git"),
            "clone_url": format!("{}.git", self.html()),
            "svn_url": self.html(),
            "mirror_url": null,
            "homepage": null,
            "language": "Rust",
            "default_branch": self.s.default_branch,
            "open_issues_count": open,
            "open_issues": open,
            "topics": [],
            "pushed_at": time(self.s.now),
            "created_at": time(self.s.created_at),
            "updated_at": time(self.s.now),
            "license": null,
            "permissions": {
                "admin": false, "maintain": false, "push": true, "triage": true, "pull": true,
            },
        });
        for key in [
            "forks_count",
            "forks",
            "stargazers_count",
            "watchers_count",
            "watchers",
            "subscribers_count",
            "network_count",
        ] {
            v[key] = json!(0);
        }
        v["size"] = json!(1);
        let yes = [
            "has_issues",
            "has_downloads",
            "allow_merge_commit",
            "allow_squash_merge",
            "allow_rebase_merge",
            "allow_forking",
        ];
        let no = [
            "is_template",
            "has_projects",
            "has_wiki",
            "has_pages",
            "has_discussions",
            "archived",
            "disabled",
            "allow_auto_merge",
            "delete_branch_on_merge",
            "web_commit_signoff_required",
        ];
        for key in yes {
            v[key] = json!(true);
        }
        for key in no {
            v[key] = json!(false);
        }
        // Every `*_url` GitHub lists, hypermedia templates included.
        for (key, path) in [
            ("archive_url", "/{archive_format}{/ref}"),
            ("assignees_url", "/assignees{/user}"),
            ("blobs_url", "/git/blobs{/sha}"),
            ("branches_url", "/branches{/branch}"),
            ("collaborators_url", "/collaborators{/collaborator}"),
            ("comments_url", "/comments{/number}"),
            ("commits_url", "/commits{/sha}"),
            ("compare_url", "/compare/{base}...{head}"),
            ("contents_url", "/contents/{+path}"),
            ("contributors_url", "/contributors"),
            ("deployments_url", "/deployments"),
            ("downloads_url", "/downloads"),
            ("events_url", "/events"),
            ("forks_url", "/forks"),
            ("git_commits_url", "/git/commits{/sha}"),
            ("git_refs_url", "/git/refs{/sha}"),
            ("git_tags_url", "/git/tags{/sha}"),
            ("hooks_url", "/hooks"),
            ("issue_comment_url", "/issues/comments{/number}"),
            ("issue_events_url", "/issues/events{/number}"),
            ("issues_url", "/issues{/number}"),
            ("keys_url", "/keys{/key_id}"),
            ("labels_url", "/labels{/name}"),
            ("languages_url", "/languages"),
            ("merges_url", "/merges"),
            ("milestones_url", "/milestones{/number}"),
            (
                "notifications_url",
                "/notifications{?since,all,participating}",
            ),
            ("pulls_url", "/pulls{/number}"),
            ("releases_url", "/releases{/id}"),
            ("stargazers_url", "/stargazers"),
            ("statuses_url", "/statuses/{sha}"),
            ("subscribers_url", "/subscribers"),
            ("subscription_url", "/subscription"),
            ("tags_url", "/tags"),
            ("teams_url", "/teams"),
            ("trees_url", "/git/trees{/sha}"),
        ] {
            v[key] = json!(format!("{api}{path}"));
        }
        v
    }

    /// A pull request: `full` for the single-PR endpoints, else the list's `pull-request-simple`
    /// (which, like GitHub's, has no `merged`/`mergeable`: a list reader must use `merged_at`).
    pub fn pull(&self, n: u64, full: bool) -> Value {
        let p = &self.s.pulls[&n];
        let i = &self.s.issues[&n];
        let api = format!("{}/pulls/{n}", self.api());
        let issue_api = format!("{}/issues/{n}", self.api());
        let html = format!("{}/pull/{n}", self.html());
        let statuses = format!("{}/statuses/{}", self.api(), p.head_sha);
        let branch = |r: &str, sha: &str| {
            json!({
                "label": format!("{}:{r}", self.s.owner),
                "ref": r,
                "sha": sha,
                "user": self.user(&self.s.owner),
                "repo": self.repo(),
            })
        };
        let href = |h: String| json!({ "href": h });
        let links = json!({
            "self": href(api.clone()),
            "html": href(html.clone()),
            "issue": href(issue_api.clone()),
            "comments": href(format!("{issue_api}/comments")),
            "review_comments": href(format!("{api}/comments")),
            "review_comment": href(format!("{}/pulls/comments{{/number}}", self.api())),
            "commits": href(format!("{api}/commits")),
            "statuses": href(statuses.clone()),
        });
        let mut v = json!({
            "url": api,
            "id": p.id,
            "node_id": node_id("PR", p.id),
            "html_url": html,
            "diff_url": format!("{html}.diff"),
            "patch_url": format!("{html}.patch"),
            "issue_url": issue_api,
            "commits_url": format!("{api}/commits"),
            "review_comments_url": format!("{api}/comments"),
            "review_comment_url": format!("{}/pulls/comments{{/number}}", self.api()),
            "comments_url": format!("{issue_api}/comments"),
            "statuses_url": statuses,
            "number": n,
            "state": i.state,
            "locked": false,
            "active_lock_reason": null,
            "title": i.title,
            "user": self.user(&i.user),
            "body": i.body,
            "labels": i.labels.iter().map(|l| self.label_named(l)).collect::<Vec<_>>(),
            "milestone": null,
            "draft": p.draft,
            "created_at": time(i.created_at),
            "updated_at": time(i.updated_at),
            "closed_at": opt_time(i.closed_at),
            "merged_at": opt_time(p.merged_at),
            "merge_commit_sha": p.merge_commit_sha,
            "assignee": null,
            "assignees": [],
            "requested_reviewers": [],
            "requested_teams": [],
            "head": branch(&p.head_ref, &p.head_sha),
            "base": branch(&p.base_ref, &p.base_sha),
            "author_association": i.author_association,
            "auto_merge": null,
        });
        v["_links"] = links;
        if full {
            let comments = self.s.comments.iter().filter(|c| c.issue == n).count();
            for (k, val) in [
                ("merged", json!(p.merged_at.is_some())),
                ("mergeable", json!(p.mergeable)),
                ("rebaseable", json!(p.mergeable)),
                ("mergeable_state", json!(p.mergeable_state)),
                (
                    "merged_by",
                    p.merged_by.as_deref().map_or(Value::Null, |u| self.user(u)),
                ),
                ("comments", json!(comments)),
                ("review_comments", json!(0)),
                ("maintainer_can_modify", json!(false)),
                ("commits", json!(1)),
                ("additions", json!(1)),
                ("deletions", json!(0)),
                ("changed_files", json!(1)),
            ] {
                v[k] = val;
            }
        }
        v
    }

    pub fn check_run(&self, c: &CheckRun) -> Value {
        let html = format!("{}/runs/{}", self.html(), c.id);
        json!({
            "id": c.id,
            "node_id": node_id("CR", c.id),
            "head_sha": c.head_sha,
            "external_id": c.external_id,
            "url": format!("{}/check-runs/{}", self.api(), c.id),
            "html_url": html,
            "details_url": html,
            "status": c.status,
            "conclusion": c.conclusion,
            "started_at": time(c.started_at),
            "completed_at": opt_time(c.completed_at),
            "output": {
                "title": c.title,
                "summary": c.summary,
                "text": c.text,
                "annotations_count": c.annotations.len(),
                "annotations_url": format!("{}/check-runs/{}/annotations", self.api(), c.id),
            },
            "name": c.name,
            "check_suite": { "id": c.id + 1_000_000 },
            "app": null,
            "pull_requests": [],
        })
    }

    pub fn status(&self, sha: &str, s: &CommitStatus) -> Value {
        json!({
            "url": format!("{}/statuses/{sha}", self.api()),
            "avatar_url": null,
            "id": s.id,
            "node_id": node_id("SC", s.id),
            "state": s.state,
            "description": s.description,
            "target_url": null,
            "context": s.context,
            "created_at": time(s.created_at),
            "updated_at": time(s.created_at),
        })
    }

    /// The newest status of each context, newest first, as GitHub combines them.
    pub fn combined_status(&self, sha: &str) -> Value {
        let all = self.s.statuses.get(sha).map(Vec::as_slice).unwrap_or(&[]);
        let mut seen = std::collections::BTreeSet::new();
        let statuses: Vec<Value> = all
            .iter()
            .rev()
            .filter(|s| seen.insert(s.context.clone()))
            .map(|s| self.status(sha, s))
            .collect();
        json!({
            "state": self.s.combined_state(sha),
            "total_count": statuses.len(),
            "statuses": statuses,
            "sha": sha,
            "repository": self.repo(),
            "commit_url": format!("{}/commits/{sha}", self.api()),
            "url": format!("{}/commits/{sha}/status", self.api()),
        })
    }

    /// `GET /collaborators/{user}/permission`: `permission` is the legacy level
    /// (`maintain` reads as `write`, `triage` as `read`), `role_name` the role itself.
    pub fn permission(&self, u: &User) -> Value {
        let permission = match u.role.as_str() {
            "admin" => "admin",
            "maintain" | "write" => "write",
            "triage" | "read" => "read",
            _ => "none",
        };
        let at_least = |roles: &[&str]| roles.contains(&u.role.as_str());
        let mut user = self.user(&u.login);
        user["role_name"] = json!(u.role);
        user["permissions"] = json!({
            "admin": at_least(&["admin"]),
            "maintain": at_least(&["admin", "maintain"]),
            "push": at_least(&["admin", "maintain", "write"]),
            "triage": at_least(&["admin", "maintain", "write", "triage"]),
            "pull": at_least(&["admin", "maintain", "write", "triage", "read"]),
        });
        json!({ "permission": permission, "role_name": u.role, "user": user })
    }

    pub fn rate_limit(&self, r: &RateLimit) -> Value {
        let window = |limit: u64, used: u64, reset: i64, resource: &str| {
            json!({
                "limit": limit,
                "used": used,
                "remaining": limit.saturating_sub(used),
                "reset": reset,
                "resource": resource,
            })
        };
        let core = window(r.limit, r.used, r.reset, "core");
        json!({
            "resources": {
                "core": core,
                "search": window(30, 0, self.s.now + 60, "search"),
                "graphql": window(5000, 0, self.s.now + 3600, "graphql"),
            },
            "rate": core,
        })
    }
}

/// GitHub's error body: `{message, documentation_url, status}`.
pub fn error(status: u16, message: &str) -> Value {
    json!({ "message": message, "documentation_url": DOCS, "status": status.to_string() })
}

/// GitHub's 422: `Validation Failed` with one `errors[]` entry.
pub fn validation(resource: &str, field: Option<&str>, code: &str, message: Option<&str>) -> Value {
    let mut e = json!({ "resource": resource, "code": code });
    if let Some(f) = field {
        e["field"] = json!(f);
    }
    if let Some(m) = message {
        e["message"] = json!(m);
    }
    json!({
        "message": "Validation Failed",
        "errors": [e],
        "documentation_url": DOCS,
        "status": "422",
    })
}
