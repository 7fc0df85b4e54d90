//! Branch rules and workflow dispatch: `GET /repos/{owner}/{repo}/rules/branches/{branch}` (the
//! rules that apply to a branch; only `required_status_checks` is modelled) and
//! `POST /repos/{owner}/{repo}/actions/workflows/{workflow_id}/dispatches` (recorded, refused
//! with GitHub's 403 unless the token was granted `actions: write`).

use serde_json::{json, Value};

use super::render::validation;
use super::routes::{str_field, Ctx, Reply};

/// A `workflow_dispatch` the server accepted: the workflow, the ref, the commit the ref was at
/// (what the started run would check out) and when.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dispatched {
    pub workflow: String,
    pub git_ref: String,
    pub sha: String,
    pub at: i64,
}

pub fn branch_rules(c: &Ctx<'_>) -> Reply {
    let branch = &c.params[2];
    let rules: Vec<Value> =
        c.s.required_checks
            .get(branch)
            .map(|contexts| {
                vec![json!({
                    "type": "required_status_checks",
                    "parameters": {
                        "strict_required_status_checks_policy": false,
                        "required_status_checks": contexts
                            .iter()
                            .map(|name| json!({ "context": name }))
                            .collect::<Vec<_>>(),
                    },
                    "ruleset_source_type": "Repository",
                    "ruleset_source": format!("{}/{}", c.s.owner, c.s.repo),
                    "ruleset_id": 42,
                })]
            })
            .unwrap_or_default();
    c.page(rules)
}

pub fn dispatch(c: &mut Ctx<'_>) -> Result<Reply, Reply> {
    let body = c.body()?;
    let workflow = c.params[2].clone();
    if !c.s.actions_write {
        return Err(Reply::error(403, "Resource not accessible by integration"));
    }
    let Some(&dispatchable) = c.s.workflows.get(&workflow) else {
        return Err(Reply::not_found());
    };
    if !dispatchable {
        return Err(Reply::json(
            422,
            validation(
                "Workflow",
                None,
                "custom",
                Some("Workflow does not have 'workflow_dispatch' trigger"),
            ),
        ));
    }
    let Some(git_ref) = str_field(&body, "ref").map(str::to_string) else {
        return Err(Reply::json(
            422,
            validation("Workflow", Some("ref"), "missing_field", None),
        ));
    };
    let Some(sha) = c.s.branches.get(&git_ref).cloned() else {
        return Err(Reply::json(
            422,
            validation(
                "Workflow",
                Some("ref"),
                "invalid",
                Some(&format!("No ref found for: {git_ref}")),
            ),
        ));
    };
    let at = c.s.now;
    c.s.dispatches.push(Dispatched {
        workflow,
        git_ref,
        sha,
        at,
    });
    Ok(Reply {
        status: 204,
        body: None,
        headers: Vec::new(),
        last_modified: None,
    })
}
