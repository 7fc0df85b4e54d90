//! The REST endpoints: a route table in the OpenAPI description's own path templates (so a
//! recorded response names the operation it must conform to), what a handler gets (`Ctx`) and
//! gives (`Reply`), pagination, and the dispatch to the handlers in `issues.rs` and `pulls.rs`.
//!
//! Handlers see the parsed request and the state; authentication, rate limits, ETags and
//! recording happen around them, in `mod.rs`.

use serde_json::{json, Value};

use super::http::{decode_path, Request};
use super::render::{error, Render};
use super::state::State;
use super::{actions, checks, issues, pulls};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Endpoint {
    ListIssues,
    CreateIssue,
    GetIssue,
    UpdateIssue,
    ListComments,
    ListRepoComments,
    CreateComment,
    GetComment,
    UpdateComment,
    ListIssueLabels,
    AddLabels,
    SetLabels,
    RemoveLabel,
    ListEvents,
    ListPulls,
    CreatePull,
    GetPull,
    UpdatePull,
    MergePull,
    ListReviews,
    ListReviewComments,
    CheckRuns,
    CreateCheckRun,
    UpdateCheckRun,
    CombinedStatus,
    CreateStatus,
    Permission,
    GetRepo,
    RateLimit,
    BranchRules,
    DispatchWorkflow,
}

/// (method, OpenAPI path template, endpoint); literal segments before parameters where both
/// could match.
pub const ROUTES: &[(&str, &str, Endpoint)] = &[
    ("GET", "/rate_limit", Endpoint::RateLimit),
    ("GET", "/repos/{owner}/{repo}", Endpoint::GetRepo),
    ("GET", "/repos/{owner}/{repo}/issues", Endpoint::ListIssues),
    (
        "POST",
        "/repos/{owner}/{repo}/issues",
        Endpoint::CreateIssue,
    ),
    (
        "GET",
        "/repos/{owner}/{repo}/issues/comments",
        Endpoint::ListRepoComments,
    ),
    (
        "GET",
        "/repos/{owner}/{repo}/issues/comments/{comment_id}",
        Endpoint::GetComment,
    ),
    (
        "PATCH",
        "/repos/{owner}/{repo}/issues/comments/{comment_id}",
        Endpoint::UpdateComment,
    ),
    (
        "GET",
        "/repos/{owner}/{repo}/issues/{issue_number}",
        Endpoint::GetIssue,
    ),
    (
        "PATCH",
        "/repos/{owner}/{repo}/issues/{issue_number}",
        Endpoint::UpdateIssue,
    ),
    (
        "GET",
        "/repos/{owner}/{repo}/issues/{issue_number}/comments",
        Endpoint::ListComments,
    ),
    (
        "POST",
        "/repos/{owner}/{repo}/issues/{issue_number}/comments",
        Endpoint::CreateComment,
    ),
    (
        "GET",
        "/repos/{owner}/{repo}/issues/{issue_number}/labels",
        Endpoint::ListIssueLabels,
    ),
    (
        "POST",
        "/repos/{owner}/{repo}/issues/{issue_number}/labels",
        Endpoint::AddLabels,
    ),
    (
        "PUT",
        "/repos/{owner}/{repo}/issues/{issue_number}/labels",
        Endpoint::SetLabels,
    ),
    (
        "DELETE",
        "/repos/{owner}/{repo}/issues/{issue_number}/labels/{name}",
        Endpoint::RemoveLabel,
    ),
    (
        "GET",
        "/repos/{owner}/{repo}/issues/{issue_number}/events",
        Endpoint::ListEvents,
    ),
    ("GET", "/repos/{owner}/{repo}/pulls", Endpoint::ListPulls),
    ("POST", "/repos/{owner}/{repo}/pulls", Endpoint::CreatePull),
    (
        "GET",
        "/repos/{owner}/{repo}/pulls/{pull_number}",
        Endpoint::GetPull,
    ),
    (
        "PATCH",
        "/repos/{owner}/{repo}/pulls/{pull_number}",
        Endpoint::UpdatePull,
    ),
    (
        "PUT",
        "/repos/{owner}/{repo}/pulls/{pull_number}/merge",
        Endpoint::MergePull,
    ),
    (
        "GET",
        "/repos/{owner}/{repo}/pulls/{pull_number}/reviews",
        Endpoint::ListReviews,
    ),
    (
        "GET",
        "/repos/{owner}/{repo}/pulls/{pull_number}/comments",
        Endpoint::ListReviewComments,
    ),
    (
        "GET",
        "/repos/{owner}/{repo}/commits/{ref}/check-runs",
        Endpoint::CheckRuns,
    ),
    (
        "GET",
        "/repos/{owner}/{repo}/commits/{ref}/status",
        Endpoint::CombinedStatus,
    ),
    (
        "POST",
        "/repos/{owner}/{repo}/check-runs",
        Endpoint::CreateCheckRun,
    ),
    (
        "PATCH",
        "/repos/{owner}/{repo}/check-runs/{check_run_id}",
        Endpoint::UpdateCheckRun,
    ),
    (
        "POST",
        "/repos/{owner}/{repo}/statuses/{sha}",
        Endpoint::CreateStatus,
    ),
    (
        "GET",
        "/repos/{owner}/{repo}/collaborators/{username}/permission",
        Endpoint::Permission,
    ),
    (
        "GET",
        "/repos/{owner}/{repo}/rules/branches/{branch}",
        Endpoint::BranchRules,
    ),
    (
        "POST",
        "/repos/{owner}/{repo}/actions/workflows/{workflow_id}/dispatches",
        Endpoint::DispatchWorkflow,
    ),
];

/// The route a request hits, with its template and decoded path parameters.
pub fn find(method: &str, path: &str) -> Option<(Endpoint, &'static str, Vec<String>)> {
    let segs: Vec<&str> = path.trim_end_matches('/').split('/').collect();
    ROUTES.iter().find_map(|(m, template, endpoint)| {
        let tsegs: Vec<&str> = template.split('/').collect();
        if *m != method || tsegs.len() != segs.len() {
            return None;
        }
        let mut params = Vec::new();
        for (t, s) in tsegs.iter().zip(&segs) {
            if t.starts_with('{') {
                params.push(decode_path(s));
            } else if t != s {
                return None;
            }
        }
        Some((*endpoint, *template, params))
    })
}

/// What a handler answers; `mod.rs` adds the common headers.
pub struct Reply {
    pub status: u16,
    pub body: Option<Value>,
    pub headers: Vec<(String, String)>,
    /// For `Last-Modified`; the clock when `None`.
    pub last_modified: Option<i64>,
}

impl Reply {
    pub fn json(status: u16, body: Value) -> Reply {
        Reply {
            status,
            body: Some(body),
            headers: Vec::new(),
            last_modified: None,
        }
    }

    pub fn error(status: u16, message: &str) -> Reply {
        Reply::json(status, error(status, message))
    }

    pub fn not_found() -> Reply {
        Reply::error(404, "Not Found")
    }

    pub fn modified(mut self, t: i64) -> Reply {
        self.last_modified = Some(t);
        self
    }

    pub fn created(mut self, location: String) -> Reply {
        self.headers.push(("Location".into(), location));
        self
    }
}

pub struct Ctx<'a> {
    pub s: &'a mut State,
    pub base: &'a str,
    pub req: &'a Request,
    pub params: Vec<String>,
}

impl Ctx<'_> {
    pub fn r(&self) -> Render<'_> {
        Render {
            s: self.s,
            base: self.base,
        }
    }

    pub fn number(&self, i: usize) -> Option<u64> {
        self.params.get(i)?.parse().ok()
    }

    pub fn body(&self) -> Result<Value, Reply> {
        if self.req.body.is_empty() {
            return Ok(json!({}));
        }
        serde_json::from_slice(&self.req.body)
            .map_err(|_| Reply::error(400, "Problems parsing JSON"))
    }

    pub fn api(&self) -> String {
        format!("{}/repos/{}/{}", self.base, self.s.owner, self.s.repo)
    }

    /// One page of `items`, with GitHub's `Link` header (absolute URLs) when there are more.
    pub fn page(&self, items: Vec<Value>) -> Reply {
        let per_page = match self
            .req
            .param("per_page")
            .and_then(|p| p.parse::<usize>().ok())
        {
            Some(n) if n > 0 => n.min(100),
            _ => 30,
        };
        let page = self
            .req
            .param("page")
            .and_then(|p| p.parse::<usize>().ok())
            .unwrap_or(1)
            .max(1);
        let last = items.len().div_ceil(per_page).max(1);
        let body: Vec<Value> = items
            .into_iter()
            .skip((page - 1) * per_page)
            .take(per_page)
            .collect();
        let mut reply = Reply::json(200, Value::Array(body));
        let link = |p: usize, rel: &str| {
            let mut query: Vec<String> = self
                .req
                .target
                .split_once('?')
                .map(|(_, q)| {
                    q.split('&')
                        .filter(|kv| !kv.starts_with("page=") && !kv.is_empty())
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default();
            query.push(format!("page={p}"));
            format!(
                "<{}{}?{}>; rel=\"{rel}\"",
                self.base,
                self.req.path,
                query.join("&")
            )
        };
        let mut links = Vec::new();
        if page > 1 {
            links.push(link(page - 1, "prev"));
        }
        if page < last {
            links.push(link(page + 1, "next"));
            links.push(link(last, "last"));
        }
        if page > 1 {
            links.push(link(1, "first"));
        }
        if !links.is_empty() {
            reply.headers.push(("Link".into(), links.join(", ")));
        }
        reply
    }

    pub fn direction_desc(&self) -> bool {
        self.req.param("direction") != Some("asc")
    }
}

/// Label names from `{"labels": [..]}` or a bare array, each a string or `{"name": ..}`.
pub fn label_names(body: &Value) -> Option<Vec<String>> {
    let list = body.get("labels").unwrap_or(body).as_array()?;
    list.iter()
        .map(|l| {
            l.as_str()
                .or_else(|| l.get("name")?.as_str())
                .map(str::to_string)
        })
        .collect()
}

pub fn str_field<'v>(body: &'v Value, key: &str) -> Option<&'v str> {
    body.get(key).and_then(Value::as_str)
}

pub fn dispatch(endpoint: Endpoint, mut c: Ctx<'_>) -> Reply {
    if endpoint != Endpoint::RateLimit {
        let (owner, repo) = (&c.params[0], &c.params[1]);
        if !owner.eq_ignore_ascii_case(&c.s.owner) || !repo.eq_ignore_ascii_case(&c.s.repo) {
            return Reply::not_found();
        }
    }
    let viewer = c.s.viewer.clone();
    let result = match endpoint {
        Endpoint::RateLimit => Ok(Reply::json(200, c.r().rate_limit(&c.s.rate))),
        Endpoint::GetRepo => Ok(Reply::json(200, c.r().repo())),
        Endpoint::ListIssues => issues::list(&c),
        Endpoint::CreateIssue => issues::create(&mut c, &viewer),
        Endpoint::GetIssue => issues::with_issue(&c, |c, n| Reply::json(200, c.r().issue(n))),
        Endpoint::UpdateIssue => issues::update(&mut c, &viewer),
        Endpoint::ListComments => issues::with_issue(&c, issues::list_comments),
        Endpoint::ListRepoComments => Ok(issues::list_repo_comments(&c)),
        Endpoint::CreateComment => issues::create_comment(&mut c, &viewer),
        Endpoint::GetComment | Endpoint::UpdateComment => issues::comment(&mut c, endpoint),
        Endpoint::ListIssueLabels => issues::with_issue(&c, issues::labels),
        Endpoint::AddLabels | Endpoint::SetLabels => {
            issues::change_labels(&mut c, endpoint, &viewer)
        }
        Endpoint::RemoveLabel => issues::remove_label(&mut c, &viewer),
        Endpoint::ListEvents => issues::with_issue(&c, issues::events),
        Endpoint::ListPulls => pulls::list(&c),
        Endpoint::CreatePull => pulls::create(&mut c, &viewer),
        Endpoint::GetPull => Ok(match c.number(2).filter(|n| c.s.pulls.contains_key(n)) {
            Some(n) => Reply::json(200, c.r().pull(n, true)).modified(c.s.issues[&n].updated_at),
            None => Reply::not_found(),
        }),
        Endpoint::UpdatePull => pulls::update(&mut c, &viewer),
        Endpoint::MergePull => pulls::merge(&mut c, &viewer),
        Endpoint::ListReviews => Ok(pulls::reviews(&c)),
        Endpoint::ListReviewComments => Ok(pulls::review_comments(&c)),
        Endpoint::CheckRuns => Ok(pulls::check_runs(&c)),
        Endpoint::CreateCheckRun => checks::create(&mut c),
        Endpoint::UpdateCheckRun => checks::update(&mut c),
        Endpoint::CreateStatus => checks::create_status(&mut c),
        Endpoint::CombinedStatus => {
            let sha = resolve_ref(c.s, &c.params[2]);
            Ok(Reply::json(200, c.r().combined_status(&sha)))
        }
        Endpoint::BranchRules => Ok(actions::branch_rules(&c)),
        Endpoint::DispatchWorkflow => actions::dispatch(&mut c),
        Endpoint::Permission => Ok(match c.s.users.get(&c.params[2]) {
            Some(u) => Reply::json(200, c.r().permission(u)),
            None => Reply::error(404, &format!("{} is not a user", c.params[2])),
        }),
    };
    result.unwrap_or_else(|e| e)
}

/// A branch name to its sha; anything else is taken as a sha.
pub fn resolve_ref(s: &State, r: &str) -> String {
    s.branches.get(r).cloned().unwrap_or_else(|| r.to_string())
}
