//! Issue endpoints: issues (and PRs' issue halves), their comments, labels and events.

use serde_json::Value;

use super::http::parse_rfc3339;
use super::render::validation;
use super::routes::{label_names, str_field, Ctx, Endpoint, Reply};

pub fn create(c: &mut Ctx<'_>, viewer: &str) -> Result<Reply, Reply> {
    let body = c.body()?;
    let Some(title) = str_field(&body, "title").filter(|t| !t.is_empty()) else {
        return Ok(Reply::json(
            422,
            validation("Issue", Some("title"), "missing_field", None),
        ));
    };
    let labels = label_names(&body).unwrap_or_default();
    let association = c.s.association(viewer);
    let n = c.s.create_issue(
        title,
        str_field(&body, "body"),
        &labels,
        viewer,
        &association,
    );
    Ok(Reply::json(201, c.r().issue(n)).created(format!("{}/issues/{n}", c.api())))
}

pub fn list_comments(c: &Ctx<'_>, n: u64) -> Reply {
    let since = c.req.param("since").and_then(parse_rfc3339);
    let items =
        c.s.comments
            .iter()
            .filter(|x| x.issue == n && since.is_none_or(|t| x.updated_at >= t));
    c.page(items.map(|x| c.r().comment(x)).collect())
}

/// Every issue and PR comment of the repository (`sort=created|updated`, `direction`, `since`).
pub fn list_repo_comments(c: &Ctx<'_>) -> Reply {
    let since = c.req.param("since").and_then(parse_rfc3339);
    let mut items: Vec<&super::state::Comment> =
        c.s.comments
            .iter()
            .filter(|x| since.is_none_or(|t| x.updated_at >= t))
            .collect();
    let by_update = c.req.param("sort") == Some("updated");
    items.sort_by_key(|x| {
        (
            if by_update {
                x.updated_at
            } else {
                x.created_at
            },
            x.id,
        )
    });
    // GitHub's default direction here is ascending (unlike most lists).
    if c.req.param("direction") == Some("desc") {
        items.reverse();
    }
    c.page(items.into_iter().map(|x| c.r().comment(x)).collect())
}

pub fn create_comment(c: &mut Ctx<'_>, viewer: &str) -> Result<Reply, Reply> {
    let Some(n) = c.number(2).filter(|n| c.s.issues.contains_key(n)) else {
        return Ok(Reply::not_found());
    };
    let body = c.body()?;
    let Some(text) = str_field(&body, "body").filter(|b| !b.is_empty()) else {
        return Ok(Reply::json(
            422,
            validation("IssueComment", Some("body"), "missing_field", None),
        ));
    };
    let id = c.s.add_comment(n, text, viewer);
    let comment = c.s.comments.last().expect("just added").clone();
    Ok(Reply::json(201, c.r().comment(&comment))
        .created(format!("{}/issues/comments/{id}", c.api())))
}

pub fn remove_label(c: &mut Ctx<'_>, viewer: &str) -> Result<Reply, Reply> {
    let Some(n) = c.number(2).filter(|n| c.s.issues.contains_key(n)) else {
        return Ok(Reply::not_found());
    };
    let name = c.params[3].clone();
    Ok(if c.s.remove_label(n, &name, viewer) {
        labels(c, n)
    } else {
        Reply::error(404, "Label does not exist")
    })
}

pub fn events(c: &Ctx<'_>, n: u64) -> Reply {
    c.page(
        c.s.events
            .iter()
            .filter(|e| e.issue == n)
            .map(|e| c.r().event(e))
            .collect(),
    )
}

pub fn with_issue(c: &Ctx<'_>, f: impl FnOnce(&Ctx<'_>, u64) -> Reply) -> Result<Reply, Reply> {
    match c.number(2).filter(|n| c.s.issues.contains_key(n)) {
        Some(n) => Ok(f(c, n).modified(c.s.issues[&n].updated_at)),
        None => Ok(Reply::not_found()),
    }
}

pub fn labels(c: &Ctx<'_>, n: u64) -> Reply {
    let r = c.r();
    Reply::json(
        200,
        Value::Array(
            c.s.issues[&n]
                .labels
                .iter()
                .map(|l| r.label_named(l))
                .collect(),
        ),
    )
}

pub fn list(c: &Ctx<'_>) -> Result<Reply, Reply> {
    let state = c.req.param("state").unwrap_or("open");
    if !matches!(state, "open" | "closed" | "all") {
        return Err(Reply::json(
            422,
            validation("Issue", Some("state"), "invalid", None),
        ));
    }
    let since = match c.req.param("since") {
        Some(s) => Some(parse_rfc3339(s).ok_or_else(|| {
            Reply::json(422, validation("Issue", Some("since"), "invalid", None))
        })?),
        None => None,
    };
    let wanted: Vec<&str> = c
        .req
        .param("labels")
        .unwrap_or("")
        .split(',')
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let mut issues: Vec<_> =
        c.s.issues
            .values()
            .filter(|i| state == "all" || i.state == state)
            .filter(|i| {
                wanted
                    .iter()
                    .all(|w| i.labels.iter().any(|l| l.eq_ignore_ascii_case(w)))
            })
            .filter(|i| since.is_none_or(|t| i.updated_at >= t))
            .collect();
    let updated = c.req.param("sort") == Some("updated");
    issues.sort_by_key(|i| (if updated { i.updated_at } else { i.created_at }, i.number));
    if c.direction_desc() {
        issues.reverse();
    }
    let newest = issues.iter().map(|i| i.updated_at).max();
    let reply = c.page(issues.iter().map(|i| c.r().issue(i.number)).collect());
    Ok(match newest {
        Some(t) => reply.modified(t),
        None => reply,
    })
}

pub fn update(c: &mut Ctx<'_>, viewer: &str) -> Result<Reply, Reply> {
    let Some(n) = c.number(2).filter(|n| c.s.issues.contains_key(n)) else {
        return Ok(Reply::not_found());
    };
    let body = c.body()?;
    let state = str_field(&body, "state");
    if state.is_some_and(|s| s != "open" && s != "closed") {
        return Ok(Reply::json(
            422,
            validation("Issue", Some("state"), "invalid", None),
        ));
    }
    let issue = c.s.issues.get_mut(&n).expect("checked above");
    if let Some(t) = str_field(&body, "title") {
        issue.title = t.to_string();
    }
    if let Some(b) = body.get("body") {
        issue.body = b.as_str().map(str::to_string);
    }
    issue.updated_at = c.s.now;
    if let Some(labels) = body.get("labels").and_then(|_| label_names(&body)) {
        c.s.set_labels(n, &labels, viewer);
    }
    match state {
        Some("closed") => {
            let reason = str_field(&body, "state_reason").unwrap_or("completed");
            c.s.close(n, viewer, reason, None);
        }
        Some("open") => c.s.reopen(n, viewer),
        _ => {}
    }
    Ok(Reply::json(200, c.r().issue(n)))
}

pub fn comment(c: &mut Ctx<'_>, endpoint: Endpoint) -> Result<Reply, Reply> {
    let id = c.number(2);
    let Some(pos) = c.s.comments.iter().position(|x| Some(x.id) == id) else {
        return Ok(Reply::not_found());
    };
    if endpoint == Endpoint::UpdateComment {
        let body = c.body()?;
        let Some(text) = str_field(&body, "body") else {
            return Ok(Reply::json(
                422,
                validation("IssueComment", Some("body"), "missing_field", None),
            ));
        };
        let now = c.s.now;
        let x = &mut c.s.comments[pos];
        x.body = text.to_string();
        x.updated_at = now;
        let issue = x.issue;
        if let Some(i) = c.s.issues.get_mut(&issue) {
            i.updated_at = now;
        }
    }
    let x = &c.s.comments[pos];
    Ok(Reply::json(200, c.r().comment(x)).modified(x.updated_at))
}

pub fn change_labels(c: &mut Ctx<'_>, endpoint: Endpoint, viewer: &str) -> Result<Reply, Reply> {
    let Some(n) = c.number(2).filter(|n| c.s.issues.contains_key(n)) else {
        return Ok(Reply::not_found());
    };
    let Some(names) = label_names(&c.body()?) else {
        return Ok(Reply::json(
            422,
            validation("Label", Some("labels"), "invalid", None),
        ));
    };
    if endpoint == Endpoint::SetLabels {
        c.s.set_labels(n, &names, viewer);
    } else {
        c.s.add_labels(n, &names, viewer);
    }
    Ok(labels(c, n))
}
