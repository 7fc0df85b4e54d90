//! The permissions table of docs/github.md ("Permissions") against the code and the
//! example workflows: every GitHub endpoint the source calls is a row of it, and the example
//! workflows' `permissions:` blocks grant exactly what its rows need.
//!
//! The calls are read off the source: each `.path("…")` / `.path(&format!("…"))` (the
//! `/repos/{owner}/{repo}` prefix of every request), with the `Method::…` of its statement, or
//! GET for a listing (`get_all`). No network, no binary.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A path template with every `{param}` (or format argument) as `{}` and no query.
fn normalise(path: &str) -> String {
    let path = path.split('?').next().unwrap_or_default();
    let mut out = String::new();
    let mut in_param = false;
    for c in path.chars() {
        match (c, in_param) {
            ('{', _) => {
                in_param = true;
                out.push_str("{}");
            }
            ('}', true) => in_param = false,
            (_, true) => {}
            (c, false) => out.push(c),
        }
    }
    out
}

/// One row of the table: the `scope: level` pairs of its permission column, and whether the
/// call is optional (its "what for" starts with `optional:`: the examples leave it commented).
struct Row {
    permissions: Vec<(String, String)>,
    optional: bool,
}

/// The table's rows, by (method, normalised endpoint).
fn table(readme: &str) -> BTreeMap<(String, String), Row> {
    let mut rows = BTreeMap::new();
    for line in readme.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        // `| method | endpoint | permission | what for |` → ["", m, e, p, w, ""]
        if cells.len() != 6 {
            continue;
        }
        let ticked = |cell: &str| -> Vec<String> {
            cell.split('`')
                .skip(1)
                .step_by(2)
                .map(str::to_string)
                .collect()
        };
        let method = cells[1].trim_matches('`');
        // Other four-column tables of the page (what is enforced) are not this one.
        if !matches!(method, "GET" | "POST" | "PUT" | "PATCH" | "DELETE" | "git") {
            continue;
        }
        let endpoints = ticked(cells[2]);
        let permissions: Vec<(String, String)> = ticked(cells[3])
            .iter()
            .filter_map(|p| p.split_once(": "))
            .map(|(scope, level)| (scope.to_string(), level.to_string()))
            .collect();
        if permissions.is_empty() {
            continue;
        }
        let endpoint = endpoints.first().cloned().unwrap_or_default();
        let optional = cells[4].starts_with("optional:");
        rows.insert(
            (method.to_string(), normalise(&endpoint)),
            Row {
                permissions,
                optional,
            },
        );
    }
    rows
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
}

/// Every (method, normalised `/repos/{}/{}…` path) the source calls.
fn calls(source: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (at, _) in source.match_indices(".path(") {
        let before = &source[..at];
        // `path: self.path(…)` fills an error's field; it is not a request.
        if before
            .trim_end_matches(|c: char| c.is_alphanumeric() || c == '_')
            .ends_with("path: ")
        {
            continue;
        }
        let rest = source[at + ".path(".len()..].trim_start();
        let rest = rest.strip_prefix("&format!(").unwrap_or(rest).trim_start();
        let Some(literal) = rest.strip_prefix('"') else {
            continue; // `.path()` of a file, or a variable
        };
        let Some(end) = literal.find('"') else {
            continue;
        };
        let literal = &literal[..end];
        if !(literal.is_empty() || literal.starts_with('/')) {
            continue;
        }
        // The statement this call is in: back to the last `;`, `{` or `}` before it.
        let start = before.rfind([';', '{', '}']).map_or(0, |i| i + 1);
        let statement = &before[start..];
        let method = ["GET", "POST", "PATCH", "PUT", "DELETE"]
            .into_iter()
            .filter_map(|m| statement.rfind(&format!("Method::{m}")).map(|i| (i, m)))
            .max()
            .map_or("GET", |(_, m)| m);
        out.push((
            method.to_string(),
            normalise(&format!("/repos/{{owner}}/{{repo}}{literal}")),
        ));
    }
    out
}

#[test]
fn every_endpoint_the_code_calls_is_in_the_readme_permissions_table() {
    let readme = std::fs::read_to_string(root().join("docs/github.md")).unwrap();
    let rows = table(&readme);
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    rust_files(&root().join("crates"), &mut files);
    let mut called = BTreeSet::new();
    for file in &files {
        let source = std::fs::read_to_string(file).unwrap();
        for call in calls(&source) {
            called.insert((call, file.strip_prefix(root()).unwrap().to_path_buf()));
        }
    }
    let endpoints: BTreeSet<&(String, String)> = called.iter().map(|(c, _)| c).collect();
    // The scanner still sees the calls (a rewrite of the forge module must not blind it).
    assert!(
        endpoints.len() >= 18,
        "only {} endpoints found in src/: {endpoints:?}",
        endpoints.len()
    );
    let missing: Vec<String> = called
        .iter()
        .filter(|(call, _)| !rows.contains_key(call))
        .map(|((method, path), file)| format!("{method} {path} ({})", file.display()))
        .collect();
    assert!(
        missing.is_empty(),
        "called but not in the permissions table of docs/github.md: {missing:#?}"
    );
    // And the table lists nothing the code no longer calls.
    let stale: Vec<&(String, String)> = rows
        .keys()
        .filter(|row| row.0 != "git" && !endpoints.contains(row))
        .collect();
    assert!(stale.is_empty(), "in the table but never called: {stale:?}");
}

#[test]
fn the_example_workflows_grant_exactly_what_the_table_needs() {
    #[derive(serde::Deserialize)]
    struct Workflow {
        permissions: BTreeMap<String, String>,
    }
    let readme = std::fs::read_to_string(root().join("docs/github.md")).unwrap();
    // The strongest level each scope needs; `metadata: read` comes with every token.
    let mut needed: BTreeMap<String, String> = BTreeMap::new();
    for row in table(&readme).into_values().filter(|r| !r.optional) {
        for (scope, level) in row.permissions {
            if scope == "metadata" {
                continue;
            }
            let entry = needed.entry(scope).or_insert_with(|| level.clone());
            if level == "write" {
                *entry = level;
            }
        }
    }
    assert_eq!(
        needed.keys().collect::<Vec<_>>(),
        ["checks", "contents", "issues", "pull-requests", "statuses"]
    );
    for name in ["opentiger.yml", "opentiger-fanout.yml"] {
        let text = std::fs::read_to_string(root().join("examples/workflows").join(name)).unwrap();
        let workflow: Workflow = serde_saphyr::from_str(&text).unwrap();
        assert_eq!(workflow.permissions, needed, "{name}");
    }
}

#[test]
fn the_scanner_reads_methods_paths_and_listings() {
    let source = r#"
        let path = self.path(&format!(
            "/issues?state=open&labels={}",
            encode(label)
        ));
        let raw: RawPull = self.call(
            Method::PATCH,
            &self.path(&format!("/pulls/{number}")),
            Some(&json!({ "state": "closed" })),
        )?;
        .ok_or_else(|| ForgeError::Http { method: "POST".into(), path: self.path("/pulls"), })?;
        self.send(Method::DELETE, &self.path(&format!("/issues/{issue}/labels/{}", encode(stale))), None)?;
        let answer = client.call(Method::GET, &client.path(""), None, now);
        let name = entry.path().display();
    "#;
    assert_eq!(
        calls(source),
        [
            ("GET".to_string(), "/repos/{}/{}/issues".to_string()),
            ("PATCH".to_string(), "/repos/{}/{}/pulls/{}".to_string()),
            (
                "DELETE".to_string(),
                "/repos/{}/{}/issues/{}/labels/{}".to_string()
            ),
            ("GET".to_string(), "/repos/{}/{}".to_string()),
        ]
    );
}
