//! The stand-in's resources as GitHub keeps them: issues, comments, labels with their
//! `labeled` events, pull requests merged closing their issues, check runs, statuses,
//! permissions and the repository.

use super::*;

#[test]
fn issues_are_created_read_updated_and_listed_like_github() {
    let (server, mut c) = server();
    let seeded = server.add_issue("Seeded", "from a human", &["backlog"], "alice", "NONE");
    let created = c.post(
        &format!("{R}/issues"),
        json!({"title": "Add a flag", "body": "details", "labels": ["opentiger", "bug"]}),
    );
    assert_eq!(created.status, 201, "{}", created.body);
    let n = created.body["number"].as_u64().expect("number");
    assert_eq!(n, seeded + 1);
    assert_eq!(
        created.header("location"),
        Some(format!("{}{R}/issues/{n}", server.base_url()).as_str())
    );
    assert_eq!(created.body["user"]["login"], "github-actions[bot]");
    assert_eq!(created.body["user"]["type"], "Bot");
    assert_eq!(names(&created.body["labels"]), ["opentiger", "bug"]);
    assert_eq!(created.body["state"], "open");
    assert_eq!(created.body["closed_at"], Value::Null);
    assert_eq!(created.body["created_at"], "2026-11-21T12:00:00Z");
    assert!(created.body.get("pull_request").is_none());

    let got = c.get(&format!("{R}/issues/{seeded}"));
    assert_eq!(got.status, 200);
    assert_eq!(
        (
            got.body["title"].as_str(),
            got.body["author_association"].as_str()
        ),
        (Some("Seeded"), Some("NONE"))
    );
    assert_eq!(got.body["user"]["login"], "alice");

    server.advance(60);
    let closed = c.patch(
        &format!("{R}/issues/{n}"),
        json!({"state": "closed", "title": "Add a --flag"}),
    );
    assert_eq!(closed.status, 200);
    assert_eq!(
        (
            closed.body["state"].as_str(),
            closed.body["state_reason"].as_str()
        ),
        (Some("closed"), Some("completed"))
    );
    assert_eq!(closed.body["closed_at"], "2026-11-21T12:01:00Z");
    assert_eq!(server.issue(n).expect("issue").title, "Add a --flag");
    assert_eq!(
        c.patch(&format!("{R}/issues/{n}"), json!({"state": "done"}))
            .status,
        422
    );

    let numbers = |r: &Resp| {
        r.body
            .as_array()
            .expect("array")
            .iter()
            .map(|i| i["number"].as_u64().expect("n"))
            .collect::<Vec<_>>()
    };
    assert_eq!(numbers(&c.get(&format!("{R}/issues"))), [seeded]);
    assert_eq!(numbers(&c.get(&format!("{R}/issues?state=closed"))), [n]);
    assert_eq!(
        numbers(&c.get(&format!("{R}/issues?state=all"))),
        [n, seeded]
    );
    assert_eq!(
        numbers(&c.get(&format!("{R}/issues?state=all&labels=bug,opentiger"))),
        [n]
    );
    assert_eq!(
        numbers(&c.get(&format!("{R}/issues?state=all&labels=bug,backlog"))),
        Vec::<u64>::new()
    );
    assert_eq!(
        numbers(&c.get(&format!("{R}/issues?state=all&since=2026-11-21T12:00:30Z"))),
        [n]
    );
    assert_eq!(c.get(&format!("{R}/issues?since=yesterday")).status, 422);

    // Pull requests are issues too: listed, with a `pull_request` key.
    let pr = server.add_pull("A change", "", "feature", "main", "alice");
    let all = c.get(&format!("{R}/issues?state=all&sort=created&direction=asc"));
    assert_eq!(numbers(&all), [seeded, n, pr]);
    assert!(all.body[2]["pull_request"]["url"]
        .as_str()
        .expect("url")
        .ends_with(&format!("/pulls/{pr}")));
    assert_eq!(c.get(&format!("{R}/issues/999")).status, 404);
    assert_eq!(
        c.post(&format!("{R}/issues"), json!({"body": "no title"}))
            .status,
        422
    );
    assert_eq!(c.get("/repos/acme/other/issues").status, 404);
}

#[test]
fn comments_are_posted_listed_and_edited() {
    let (server, mut c) = server();
    let n = server.add_issue("Task", "", &[], "acme", "OWNER");
    server.add_comment(n, "first", "alice");
    let posted = c.post(
        &format!("{R}/issues/{n}/comments"),
        json!({"body": "<!-- opentiger -->\nworking on it"}),
    );
    assert_eq!(posted.status, 201, "{}", posted.body);
    let id = posted.body["id"].as_u64().expect("id");
    assert!(posted.body["html_url"]
        .as_str()
        .expect("html")
        .ends_with(&format!("/acme/widgets/issues/{n}#issuecomment-{id}")));
    let listed = c.get(&format!("{R}/issues/{n}/comments"));
    let bodies: Vec<_> = listed
        .body
        .as_array()
        .expect("array")
        .iter()
        .map(|c| c["body"].as_str().expect("body").to_string())
        .collect();
    assert_eq!(bodies, ["first", "<!-- opentiger -->\nworking on it"]);
    assert_eq!(listed.body[0]["author_association"], "NONE");

    let edited = c.patch(
        &format!("{R}/issues/comments/{id}"),
        json!({"body": "done"}),
    );
    assert_eq!(
        (edited.status, edited.body["body"].as_str()),
        (200, Some("done"))
    );
    assert_eq!(server.comments(n).last().expect("comment").body, "done");
    assert_eq!(
        c.get(&format!("{R}/issues/comments/{id}")).body["body"],
        "done"
    );
    assert_eq!(
        c.post(&format!("{R}/issues/{n}/comments"), json!({"body": ""}))
            .status,
        422
    );
    assert_eq!(
        c.post(&format!("{R}/issues/77/comments"), json!({"body": "x"}))
            .status,
        404
    );
    assert_eq!(
        c.patch(&format!("{R}/issues/comments/1"), json!({"body": "x"}))
            .status,
        404
    );
}

#[test]
fn labels_are_added_replaced_and_removed_with_labeled_events() {
    let (server, mut c) = server();
    let n = server.add_issue("Task", "", &["triage"], "alice", "NONE");
    server.advance(5);
    server.add_label_event(n, "opentiger", "acme");
    let added = c.post(
        &format!("{R}/issues/{n}/labels"),
        json!({"labels": ["in progress"]}),
    );
    assert_eq!(
        (added.status, names(&added.body)),
        (200, vec!["triage", "opentiger", "in progress"])
    );
    assert!(added.body[2]["url"]
        .as_str()
        .expect("url")
        .ends_with("/labels/in%20progress"));
    let replaced = c.put(
        &format!("{R}/issues/{n}/labels"),
        json!(["opentiger", "done"]),
    );
    assert_eq!(names(&replaced.body), ["opentiger", "done"]);
    let removed = c.delete(&format!("{R}/issues/{n}/labels/done"));
    assert_eq!(
        (removed.status, names(&removed.body)),
        (200, vec!["opentiger"])
    );
    let missing = c.delete(&format!("{R}/issues/{n}/labels/done"));
    assert_eq!(
        (missing.status, missing.body["message"].as_str()),
        (404, Some("Label does not exist"))
    );

    let events = c.get(&format!("{R}/issues/{n}/events"));
    let labeled: Vec<(String, String, String)> = events
        .body
        .as_array()
        .expect("array")
        .iter()
        .map(|e| {
            (
                e["event"].as_str().unwrap().into(),
                e["label"]["name"].as_str().unwrap().into(),
                e["actor"]["login"].as_str().unwrap().into(),
            )
        })
        .collect();
    let expect = |e: &str, l: &str, a: &str| (e.to_string(), l.to_string(), a.to_string());
    assert_eq!(
        labeled,
        [
            expect("labeled", "triage", "alice"),
            expect("labeled", "opentiger", "acme"),
            expect("labeled", "in progress", "github-actions[bot]"),
            expect("unlabeled", "triage", "github-actions[bot]"),
            expect("unlabeled", "in progress", "github-actions[bot]"),
            expect("labeled", "done", "github-actions[bot]"),
            expect("unlabeled", "done", "github-actions[bot]"),
        ]
    );
    assert_eq!(events.body[1]["created_at"], "2026-11-21T12:00:05Z");
    assert_eq!(
        c.get(&format!("{R}/issues/{n}/labels"))
            .body
            .as_array()
            .map(Vec::len),
        Some(1)
    );
}

#[test]
fn pull_requests_are_opened_listed_updated_and_merged_closing_their_issues() {
    let (server, mut c) = server();
    let fixes = server.add_issue("Bug", "", &[], "alice", "NONE");
    let other = server.add_issue("Other", "", &[], "alice", "NONE");
    let elsewhere = server.add_issue("Elsewhere", "", &[], "alice", "NONE");
    let body = format!("Does it.\n\nFixes #{fixes}\nSee #{other}; closes acme/other#{elsewhere}");
    let opened = c.post(
        &format!("{R}/pulls"),
        json!({"title": "Fix the bug", "head": "opentiger/t1", "base": "main", "body": body}),
    );
    assert_eq!(opened.status, 201, "{}", opened.body);
    let n = opened.body["number"].as_u64().expect("number");
    assert_eq!(n, 4, "PRs and issues share numbers");
    assert_eq!(
        (
            opened.body["head"]["ref"].as_str(),
            opened.body["base"]["ref"].as_str()
        ),
        (Some("opentiger/t1"), Some("main"))
    );
    assert_eq!(opened.body["head"]["sha"].as_str().map(str::len), Some(40));
    assert_eq!(
        (
            opened.body["merged"].as_bool(),
            opened.body["mergeable"].as_bool()
        ),
        (Some(false), Some(true))
    );

    let dup = c.post(
        &format!("{R}/pulls"),
        json!({"title": "Again", "head": "acme:opentiger/t1", "base": "main"}),
    );
    assert_eq!(dup.status, 422);
    assert_eq!(dup.body["message"], "Validation Failed");
    assert_eq!(
        dup.body["errors"][0]["message"],
        "A pull request already exists for acme:opentiger/t1."
    );
    assert_eq!(
        c.post(
            &format!("{R}/pulls"),
            json!({"title": "No head", "base": "main"})
        )
        .status,
        422
    );

    let listed = c.get(&format!("{R}/pulls?head=acme:opentiger/t1&state=open"));
    assert_eq!(listed.body.as_array().map(Vec::len), Some(1));
    assert!(
        listed.body[0].get("merged").is_none(),
        "the list has no `merged`, like GitHub's"
    );
    assert_eq!(
        c.get(&format!("{R}/pulls?head=someone:opentiger/t1")).body,
        json!([])
    );
    assert_eq!(c.get(&format!("{R}/pulls?base=develop")).body, json!([]));

    let renamed = c.patch(
        &format!("{R}/pulls/{n}"),
        json!({"title": "Fix the bug properly"}),
    );
    assert_eq!(renamed.body["title"], "Fix the bug properly");

    let head = server.pull(n).expect("pr").head_sha;
    server.set_branch("opentiger/t1", "1111111111111111111111111111111111111111");
    let stale = c.put(&format!("{R}/pulls/{n}/merge"), json!({"sha": head}));
    assert_eq!(stale.status, 409, "{}", stale.body);
    server.set_mergeable(n, Some(false), "dirty");
    assert_eq!(
        c.put(&format!("{R}/pulls/{n}/merge"), json!({})).status,
        405
    );
    server.set_mergeable(n, Some(true), "clean");
    let merged = c.put(
        &format!("{R}/pulls/{n}/merge"),
        json!({"merge_method": "squash", "sha": "1111111111111111111111111111111111111111"}),
    );
    assert_eq!(
        (merged.status, merged.body["merged"].as_bool()),
        (200, Some(true)),
        "{}",
        merged.body
    );
    assert_eq!(
        server.branch("main").as_deref(),
        merged.body["sha"].as_str()
    );

    let pr = c.get(&format!("{R}/pulls/{n}"));
    assert_eq!(
        (pr.body["state"].as_str(), pr.body["merged"].as_bool()),
        (Some("closed"), Some(true))
    );
    assert_eq!(pr.body["merged_by"]["login"], "github-actions[bot]");
    assert_eq!(server.issue(fixes).expect("issue").state, "closed");
    assert_eq!(
        server.issue(fixes).expect("issue").state_reason.as_deref(),
        Some("completed")
    );
    assert_eq!(
        server.issue(other).expect("issue").state,
        "open",
        "a mention is not a closing keyword"
    );
    assert_eq!(
        server.issue(elsewhere).expect("issue").state,
        "open",
        "another repository's issue"
    );
    let closed_event = server
        .events(fixes)
        .into_iter()
        .find(|e| e.event == "closed")
        .expect("closed event");
    assert_eq!(
        closed_event.commit_id.as_deref(),
        merged.body["sha"].as_str()
    );
    assert_eq!(
        c.put(&format!("{R}/pulls/{n}/merge"), json!({})).status,
        405,
        "already merged"
    );

    // After the merge the branch may be reused for a new PR.
    assert_eq!(
        c.post(
            &format!("{R}/pulls"),
            json!({"title": "Next", "head": "opentiger/t1", "base": "main"})
        )
        .status,
        201
    );
    let pulls = server.pulls();
    assert_eq!(pulls.len(), 2);
    assert!(pulls[0].merged && !pulls[1].merged);
}

#[test]
fn checks_statuses_permissions_and_the_repository() {
    let (server, mut c) = server();
    let sha = "abcabcabcabcabcabcabcabcabcabcabcabcabca";
    server.set_check_runs(
        sha,
        &[
            ("test", "completed", Some("success")),
            ("lint", "in_progress", None),
        ],
    );
    let runs = c.get(&format!("{R}/commits/{sha}/check-runs"));
    assert_eq!(runs.body["total_count"], 2);
    assert_eq!(runs.body["check_runs"][0]["conclusion"], "success");
    assert_eq!(runs.body["check_runs"][1]["conclusion"], Value::Null);
    assert_eq!(runs.body["check_runs"][1]["head_sha"], sha);

    assert_eq!(
        c.get(&format!("{R}/commits/{sha}/status")).body["state"],
        "pending",
        "no statuses yet"
    );
    server.set_status(sha, &[("ci/build", "success"), ("ci/deploy", "success")]);
    let status = c.get(&format!("{R}/commits/{sha}/status"));
    assert_eq!(
        (
            status.body["state"].as_str(),
            status.body["total_count"].as_u64()
        ),
        (Some("success"), Some(2))
    );
    server.set_status(sha, &[("ci/build", "success"), ("ci/deploy", "error")]);
    assert_eq!(
        c.get(&format!("{R}/commits/{sha}/status")).body["state"],
        "failure"
    );
    // A branch name resolves to its head.
    let main = server.branch("main").expect("main");
    server.set_check_runs(&main, &[("test", "queued", None)]);
    assert_eq!(
        c.get(&format!("{R}/commits/main/check-runs")).body["check_runs"][0]["status"],
        "queued"
    );

    server.set_permission("bob", "maintain");
    let bob = c.get(&format!("{R}/collaborators/bob/permission"));
    assert_eq!(
        (
            bob.body["permission"].as_str(),
            bob.body["role_name"].as_str()
        ),
        (Some("write"), Some("maintain"))
    );
    assert_eq!(
        c.get(&format!("{R}/collaborators/acme/permission")).body["permission"],
        "admin"
    );
    server.add_issue("Drive-by", "", &[], "mallory", "NONE");
    assert_eq!(
        c.get(&format!("{R}/collaborators/mallory/permission")).body["permission"],
        "read"
    );
    assert_eq!(
        c.get(&format!("{R}/collaborators/nobody/permission"))
            .status,
        404
    );

    let repo = c.get(R);
    assert_eq!(
        (
            repo.body["full_name"].as_str(),
            repo.body["default_branch"].as_str()
        ),
        (Some("acme/widgets"), Some("main"))
    );
    let unknown = c.delete(&format!("{R}/issues/1/whatever"));
    assert_eq!(
        (unknown.status, unknown.body["message"].as_str()),
        (404, Some("Not Found"))
    );
}
