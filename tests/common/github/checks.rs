//! Writing checks: `POST /check-runs`, `PATCH /check-runs/{id}` (403 unless the token may write
//! check runs, as GitHub answers a fork's token, `checks: read` or a personal access token) and
//! `POST /statuses/{sha}`, with GitHub's validation: required fields, the words `status`,
//! `conclusion` and `state` take, output within 65,535 characters, at most 50 annotations a
//! request (an update's are added to the run's).

use serde_json::Value;

use super::render::validation;
use super::routes::{str_field, Ctx, Reply};
use super::state::{CheckAnnotation, CheckRun, CommitStatus};

const OUTPUT_MAX: usize = 65_535;
const CONCLUSIONS: [&str; 8] = [
    "action_required",
    "cancelled",
    "failure",
    "neutral",
    "success",
    "skipped",
    "stale",
    "timed_out",
];

fn invalid(field: &str, message: &str) -> Reply {
    Reply::json(
        422,
        validation("CheckRun", Some(field), "invalid", Some(message)),
    )
}

fn may_write(c: &Ctx<'_>) -> Result<(), Reply> {
    if c.s.checks_write {
        Ok(())
    } else {
        Err(Reply::error(403, "Resource not accessible by integration"))
    }
}

/// `status`/`conclusion`/`completed_at` and `output` of a create or update body, onto `run`.
fn apply(run: &mut CheckRun, body: &Value, now: i64) -> Result<(), Reply> {
    let conclusion = str_field(body, "conclusion");
    if let Some(c) = conclusion.filter(|c| !CONCLUSIONS.contains(c)) {
        return Err(invalid("conclusion", &format!("{c} is not a conclusion")));
    }
    if let Some(status) = str_field(body, "status") {
        if !["queued", "in_progress", "completed"].contains(&status) {
            return Err(invalid("status", &format!("{status} is not a status")));
        }
        if status == "completed" && conclusion.is_none() {
            return Err(invalid(
                "conclusion",
                "a completed check run needs a conclusion",
            ));
        }
        run.status = status.to_string();
        if status != "completed" {
            run.conclusion = None;
            run.completed_at = None;
        }
    }
    if let Some(c) = conclusion {
        // A conclusion completes the run, whatever `status` said.
        run.status = "completed".to_string();
        run.conclusion = Some(c.to_string());
        run.completed_at = Some(now);
    }
    let Some(output) = body.get("output") else {
        return Ok(());
    };
    let (Some(title), Some(summary)) = (str_field(output, "title"), str_field(output, "summary"))
    else {
        return Err(invalid("output", "an output needs a title and a summary"));
    };
    let text = str_field(output, "text");
    if summary.chars().count() > OUTPUT_MAX || text.is_some_and(|t| t.chars().count() > OUTPUT_MAX)
    {
        return Err(invalid(
            "output",
            "summary and text are at most 65535 characters",
        ));
    }
    let annotations = output
        .get("annotations")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if annotations.len() > 50 {
        return Err(invalid("annotations", "at most 50 annotations per request"));
    }
    let mut added = Vec::new();
    for a in &annotations {
        let line = |key: &str| a.get(key).and_then(Value::as_u64);
        let (Some(path), Some(start), Some(end), Some(level), Some(message)) = (
            str_field(a, "path"),
            line("start_line"),
            line("end_line"),
            str_field(a, "annotation_level"),
            str_field(a, "message"),
        ) else {
            return Err(invalid(
                "annotations",
                "an annotation needs path, start_line, end_line, annotation_level and message",
            ));
        };
        if !["notice", "warning", "failure"].contains(&level) || start == 0 || end < start {
            return Err(invalid("annotations", "bad annotation_level or lines"));
        }
        added.push(CheckAnnotation {
            path: path.to_string(),
            start_line: start,
            end_line: end,
            level: level.to_string(),
            title: str_field(a, "title").map(str::to_string),
            message: message.to_string(),
        });
    }
    run.title = Some(title.to_string());
    run.summary = Some(summary.to_string());
    if let Some(text) = text {
        run.text = Some(text.to_string());
    }
    run.annotations.extend(added);
    Ok(())
}

/// `POST /check-runs`.
pub fn create(c: &mut Ctx<'_>) -> Result<Reply, Reply> {
    let body = c.body()?;
    may_write(c)?;
    let (Some(name), Some(sha)) = (str_field(&body, "name"), str_field(&body, "head_sha")) else {
        return Err(Reply::json(
            422,
            validation("CheckRun", Some("head_sha"), "missing_field", None),
        ));
    };
    let now = c.s.now;
    let mut run = CheckRun {
        id: c.s.id(),
        name: name.to_string(),
        status: "queued".to_string(),
        conclusion: None,
        head_sha: sha.to_string(),
        started_at: now,
        completed_at: None,
        title: None,
        summary: None,
        text: None,
        external_id: str_field(&body, "external_id")
            .unwrap_or_default()
            .to_string(),
        annotations: Vec::new(),
    };
    apply(&mut run, &body, now)?;
    let reply = c.r().check_run(&run);
    c.s.check_runs.entry(sha.to_string()).or_default().push(run);
    Ok(Reply::json(201, reply))
}

/// `PATCH /check-runs/{check_run_id}`.
pub fn update(c: &mut Ctx<'_>) -> Result<Reply, Reply> {
    let body = c.body()?;
    may_write(c)?;
    let id = c.number(2).ok_or_else(Reply::not_found)?;
    let now = c.s.now;
    let Some(run) = c.s.check_runs.values_mut().flatten().find(|r| r.id == id) else {
        return Err(Reply::not_found());
    };
    let mut changed = run.clone();
    apply(&mut changed, &body, now)?;
    *run = changed.clone();
    Ok(Reply::json(200, c.r().check_run(&changed)))
}

/// `POST /statuses/{sha}`.
pub fn create_status(c: &mut Ctx<'_>) -> Result<Reply, Reply> {
    let body = c.body()?;
    let sha = c.params[2].clone();
    let state = str_field(&body, "state").unwrap_or_default();
    if !["error", "failure", "pending", "success"].contains(&state) {
        return Err(Reply::json(
            422,
            validation("Status", Some("state"), "invalid", None),
        ));
    }
    let description = str_field(&body, "description").map(str::to_string);
    if description
        .as_ref()
        .is_some_and(|d| d.chars().count() > 140)
    {
        return Err(Reply::json(
            422,
            validation(
                "Status",
                Some("description"),
                "custom",
                Some("description is too long (maximum is 140 characters)"),
            ),
        ));
    }
    let status = CommitStatus {
        id: c.s.id(),
        context: str_field(&body, "context").unwrap_or("default").to_string(),
        state: state.to_string(),
        created_at: c.s.now,
        description,
    };
    // The full `status` object (with its creator), where the combined status lists the short one.
    let mut reply = c.r().status(&sha, &status);
    reply["creator"] = c.r().user(&c.s.viewer.clone());
    c.s.statuses.entry(sha).or_default().push(status);
    Ok(Reply::json(201, reply))
}
