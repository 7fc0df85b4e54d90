//! Pull-request endpoints (list, open, update, merge), their checks, and GitHub's rule for
//! which issues a merged PR closes.

use serde_json::{json, Value};

use super::render::validation;
use super::routes::{resolve_ref, str_field, Ctx, Reply};
use super::state::{CheckRun, MergeRefusal, State};

/// `GET /commits/{ref}/check-runs`: paginated runs inside `{total_count, check_runs}`.
pub fn check_runs(c: &Ctx<'_>) -> Reply {
    let sha = resolve_ref(c.s, &c.params[2]);
    let name = c.req.param("check_name");
    let all = c.req.param("filter") == Some("all");
    let listed = c.s.check_runs.get(&sha).map(Vec::as_slice).unwrap_or(&[]);
    // `filter=latest` (the default) keeps the newest run of each name.
    let runs: Vec<Value> = listed
        .iter()
        .enumerate()
        .filter(|(_, r)| name.is_none_or(|n| n == r.name))
        .filter(|(i, r)| all || !listed[i + 1..].iter().any(|newer| newer.name == r.name))
        .map(|(_, r)| c.r().check_run(r))
        .collect();
    let total = runs.len();
    let mut reply = c.page(runs);
    reply.body = Some(json!({ "total_count": total, "check_runs": reply.body.take() }));
    reply
}

/// `GET /pulls/{n}/reviews`: oldest first, as GitHub lists them.
pub fn reviews(c: &Ctx<'_>) -> Reply {
    let Some(n) = c.number(2).filter(|n| c.s.pulls.contains_key(n)) else {
        return Reply::not_found();
    };
    let items: Vec<_> = c.s.reviews.iter().filter(|r| r.pull == n).collect();
    let newest = items.iter().map(|r| r.submitted_at).max();
    let reply = c.page(items.into_iter().map(|r| c.r().review(r)).collect());
    match newest {
        Some(t) => reply.modified(t),
        None => reply,
    }
}

/// `GET /pulls/{n}/comments`: the review comments on lines, oldest first.
pub fn review_comments(c: &Ctx<'_>) -> Reply {
    let Some(n) = c.number(2).filter(|n| c.s.pulls.contains_key(n)) else {
        return Reply::not_found();
    };
    let items: Vec<_> = c.s.review_comments.iter().filter(|r| r.pull == n).collect();
    let newest = items.iter().map(|r| r.created_at).max();
    let reply = c.page(items.into_iter().map(|r| c.r().review_comment(r)).collect());
    match newest {
        Some(t) => reply.modified(t),
        None => reply,
    }
}

pub fn list(c: &Ctx<'_>) -> Result<Reply, Reply> {
    let state = c.req.param("state").unwrap_or("open");
    if !matches!(state, "open" | "closed" | "all") {
        return Err(Reply::json(
            422,
            validation("PullRequest", Some("state"), "invalid", None),
        ));
    }
    // `head` is `owner:branch`; another owner's branch has no PR here.
    let head = c.req.param("head").map(|h| match h.split_once(':') {
        Some((o, b)) if o.eq_ignore_ascii_case(&c.s.owner) => Some(b),
        Some(_) => None,
        None => Some(h),
    });
    let base = c.req.param("base");
    let mut pulls: Vec<u64> =
        c.s.pulls
            .values()
            .filter(|p| state == "all" || c.s.issues[&p.number].state == state)
            .filter(|p| head.is_none_or(|h| h == Some(p.head_ref.as_str())))
            .filter(|p| base.is_none_or(|b| b == p.base_ref))
            .map(|p| p.number)
            .collect();
    if c.req.param("sort") == Some("updated") {
        pulls.sort_by_key(|n| (c.s.issues[n].updated_at, *n));
    }
    let desc = match c.req.param("sort") {
        None | Some("created") => c.direction_desc(),
        Some(_) => c.req.param("direction") == Some("desc"),
    };
    if desc {
        pulls.reverse();
    }
    let newest = pulls.iter().map(|n| c.s.issues[n].updated_at).max();
    let reply = c.page(pulls.iter().map(|n| c.r().pull(*n, false)).collect());
    Ok(match newest {
        Some(t) => reply.modified(t),
        None => reply,
    })
}

pub fn create(c: &mut Ctx<'_>, viewer: &str) -> Result<Reply, Reply> {
    let body = c.body()?;
    for field in ["title", "head", "base"] {
        if str_field(&body, field).is_none_or(str::is_empty) {
            return Ok(Reply::json(
                422,
                validation("PullRequest", Some(field), "missing_field", None),
            ));
        }
    }
    let (title, base) = (
        str_field(&body, "title").unwrap_or_default(),
        str_field(&body, "base").unwrap_or_default(),
    );
    let head_arg = str_field(&body, "head").unwrap_or_default();
    let head = match head_arg.split_once(':') {
        Some((o, b)) if o.eq_ignore_ascii_case(&c.s.owner) => b,
        Some(_) => {
            return Ok(Reply::json(
                422,
                validation("PullRequest", Some("head"), "invalid", None),
            ))
        }
        None => head_arg,
    };
    if head == base {
        let msg = format!("No commits between {base} and {head}");
        return Ok(Reply::json(
            422,
            validation("PullRequest", None, "custom", Some(&msg)),
        ));
    }
    if c.s.open_pull_for(head, base).is_some() {
        let msg = format!("A pull request already exists for {}:{head}.", c.s.owner);
        return Ok(Reply::json(
            422,
            validation("PullRequest", None, "custom", Some(&msg)),
        ));
    }
    let draft = body.get("draft").and_then(Value::as_bool).unwrap_or(false);
    let n =
        c.s.create_pull(title, str_field(&body, "body"), head, base, viewer, draft);
    Ok(Reply::json(201, c.r().pull(n, true)).created(format!("{}/pulls/{n}", c.api())))
}

pub fn update(c: &mut Ctx<'_>, viewer: &str) -> Result<Reply, Reply> {
    let Some(n) = c.number(2).filter(|n| c.s.pulls.contains_key(n)) else {
        return Ok(Reply::not_found());
    };
    let body = c.body()?;
    let state = str_field(&body, "state");
    if state.is_some_and(|s| s != "open" && s != "closed") {
        return Ok(Reply::json(
            422,
            validation("PullRequest", Some("state"), "invalid", None),
        ));
    }
    if let Some(base) = str_field(&body, "base") {
        if !c.s.branch_exists(base) {
            return Ok(Reply::json(
                422,
                validation(
                    "PullRequest",
                    Some("base"),
                    "invalid",
                    Some(&format!("Proposed base branch '{base}' was not found")),
                ),
            ));
        }
    }
    let now = c.s.now;
    let issue = c.s.issues.get_mut(&n).expect("a PR has an issue");
    if let Some(t) = str_field(&body, "title") {
        issue.title = t.to_string();
    }
    if let Some(b) = body.get("body") {
        issue.body = b.as_str().map(str::to_string);
    }
    issue.updated_at = now;
    if let Some(base) = str_field(&body, "base") {
        let sha = c.s.branch_sha(base);
        let p = c.s.pulls.get_mut(&n).expect("checked above");
        p.base_ref = base.to_string();
        p.base_sha = sha;
    }
    match state {
        Some("closed") => c.s.close(n, viewer, "not_planned", None),
        Some("open") if c.s.pulls[&n].merged_at.is_none() => c.s.reopen(n, viewer),
        _ => {}
    }
    Ok(Reply::json(200, c.r().pull(n, true)))
}

pub fn merge(c: &mut Ctx<'_>, viewer: &str) -> Result<Reply, Reply> {
    let body = c.body()?;
    let Some(n) = c.number(2) else {
        return Ok(Reply::not_found());
    };
    let message = match (
        str_field(&body, "commit_title"),
        str_field(&body, "commit_message"),
    ) {
        (Some(title), Some(text)) => Some(format!("{title}\n\n{text}")),
        (Some(title), None) => Some(title.to_string()),
        (None, _) => None,
    };
    Ok(
        match c
            .s
            .merge(n, viewer, str_field(&body, "sha"), message.as_deref())
        {
            Ok(sha) => Reply::json(
                200,
                json!({ "sha": sha, "merged": true, "message": "Pull Request successfully merged" }),
            ),
            Err(MergeRefusal::NotFound) => Reply::not_found(),
            Err(MergeRefusal::NotMergeable) => Reply::error(405, "Pull Request is not mergeable"),
            Err(MergeRefusal::HeadModified) => Reply::error(
                409,
                "Head branch was modified. Review and try the merge again.",
            ),
            Err(MergeRefusal::RequiredCheck(name)) => Reply::error(
                405,
                &format!("Required status check \"{name}\" is expected."),
            ),
        },
    )
}

/// Check runs for the server's seeding helper: `(name, status, conclusion)`.
pub fn new_check_runs(
    s: &mut State,
    sha: &str,
    runs: &[(&str, &str, Option<&str>)],
) -> Vec<CheckRun> {
    runs.iter()
        .map(|(name, status, conclusion)| CheckRun {
            id: s.id(),
            name: name.to_string(),
            status: status.to_string(),
            conclusion: conclusion.map(str::to_string),
            head_sha: sha.to_string(),
            started_at: s.now,
            completed_at: (*status == "completed").then_some(s.now),
            title: None,
            summary: None,
            text: None,
            external_id: String::new(),
            annotations: Vec::new(),
        })
        .collect()
}

/// The issue numbers a PR body closes: `close(s|d)`, `fix(es|ed)`, `resolve(s|d)`, an optional
/// colon, then `#N` or `owner/repo#N` for this repository.
pub fn closing_references(body: &str, owner: &str, repo: &str) -> Vec<u64> {
    const KEYWORDS: [&str; 9] = [
        "close", "closes", "closed", "fix", "fixes", "fixed", "resolve", "resolves", "resolved",
    ];
    let words: Vec<&str> = body.split_whitespace().collect();
    let this_repo = format!("{owner}/{repo}").to_ascii_lowercase();
    let mut out = Vec::new();
    for pair in words.windows(2) {
        let keyword = pair[0]
            .trim_start_matches(|c: char| !c.is_alphanumeric())
            .trim_end_matches(':')
            .to_ascii_lowercase();
        if !KEYWORDS.contains(&keyword.as_str()) {
            continue;
        }
        let target = pair[1].trim_end_matches(|c: char| !c.is_ascii_digit());
        let number = match target.split_once('#') {
            Some(("", n)) => n,
            Some((r, n)) if r.to_ascii_lowercase() == this_repo => n,
            _ => continue,
        };
        if let Ok(n) = number.parse::<u64>() {
            if !out.contains(&n) {
                out.push(n);
            }
        }
    }
    out
}
