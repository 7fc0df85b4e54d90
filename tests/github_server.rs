//! The GitHub test server itself, driven by a tiny blocking HTTP client: state changes, GitHub's
//! headers and behaviours (ETags, pagination, merges closing issues, rate limits), and its
//! responses against GitHub's published OpenAPI description.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Command;

use common::github::{Failure, GithubServer, TOKEN};
use serde_json::{json, Value};

/// One keep-alive connection to the server.
struct Client {
    base: String,
    token: Option<String>,
    reader: BufReader<TcpStream>,
}

struct Resp {
    status: u16,
    headers: Vec<(String, String)>,
    body: Value,
}

impl Resp {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn num(&self, name: &str) -> i64 {
        self.header(name)
            .unwrap_or_else(|| panic!("no {name} header"))
            .parse()
            .expect("a number")
    }

    /// The `rel="next"` URL of the `Link` header.
    fn next(&self) -> Option<String> {
        let link = self.header("link")?;
        link.split(", ")
            .find(|l| l.ends_with("rel=\"next\""))
            .map(|l| l[1..l.find('>').expect(">")].to_string())
    }
}

impl Client {
    fn new(server: &GithubServer) -> Client {
        Client::with_token(server, Some(server.token()))
    }

    fn with_token(server: &GithubServer, token: Option<&str>) -> Client {
        let base = server.base_url();
        let stream = TcpStream::connect(base.trim_start_matches("http://")).expect("connect");
        Client {
            base,
            token: token.map(|t| format!("Bearer {t}")),
            reader: BufReader::new(stream),
        }
    }

    /// `path` is relative (`/repos/..`) or an absolute URL of this server (from a `Link`).
    fn send(
        &mut self,
        method: &str,
        path: &str,
        body: Option<Value>,
        extra: &[(&str, &str)],
    ) -> Resp {
        let path = path.strip_prefix(&self.base).unwrap_or(path);
        let body = body.map(|b| b.to_string()).unwrap_or_default();
        let mut head = format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: opentiger-test\r\n\
             Accept: application/vnd.github+json\r\nContent-Length: {}\r\n",
            body.len()
        );
        if let Some(t) = &self.token {
            head.push_str(&format!("Authorization: {t}\r\n"));
        }
        for (k, v) in extra {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        let stream = self.reader.get_mut();
        stream
            .write_all(format!("{head}\r\n{body}").as_bytes())
            .expect("send");
        let mut line = String::new();
        self.reader.read_line(&mut line).expect("status line");
        let status: u16 = line
            .split_whitespace()
            .nth(1)
            .expect("status")
            .parse()
            .expect("status code");
        let mut headers = Vec::new();
        loop {
            let mut h = String::new();
            self.reader.read_line(&mut h).expect("header");
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            let (k, v) = h.split_once(':').expect("header colon");
            headers.push((k.trim().to_string(), v.trim().to_string()));
        }
        let mut resp = Resp {
            status,
            headers,
            body: Value::Null,
        };
        let length: usize = resp
            .header("content-length")
            .map_or(0, |l| l.parse().expect("length"));
        let mut bytes = vec![0; length];
        self.reader.read_exact(&mut bytes).expect("body");
        if !bytes.is_empty() {
            resp.body = serde_json::from_slice(&bytes).expect("JSON body");
        }
        resp
    }

    fn get(&mut self, path: &str) -> Resp {
        self.send("GET", path, None, &[])
    }

    fn post(&mut self, path: &str, body: Value) -> Resp {
        self.send("POST", path, Some(body), &[])
    }
    fn patch(&mut self, path: &str, body: Value) -> Resp {
        self.send("PATCH", path, Some(body), &[])
    }
    fn put(&mut self, path: &str, body: Value) -> Resp {
        self.send("PUT", path, Some(body), &[])
    }
    fn delete(&mut self, path: &str) -> Resp {
        self.send("DELETE", path, None, &[])
    }
}

const R: &str = "/repos/acme/widgets";

fn server() -> (GithubServer, Client) {
    let server = GithubServer::start("acme", "widgets");
    let client = Client::new(&server);
    (server, client)
}

fn names(labels: &Value) -> Vec<&str> {
    labels
        .as_array()
        .expect("labels array")
        .iter()
        .map(|l| l["name"].as_str().expect("name"))
        .collect()
}

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
fn a_matching_conditional_get_is_304_and_free() {
    let (server, mut c) = server();
    server.add_issue("Task", "", &["opentiger"], "acme", "OWNER");
    let path = format!("{R}/issues?labels=opentiger");
    let first = c.get(&path);
    let etag = first.header("etag").expect("ETag").to_string();
    assert!(
        etag.starts_with('"') && etag.ends_with('"'),
        "strong ETag: {etag}"
    );
    let last_modified = first
        .header("last-modified")
        .expect("Last-Modified")
        .to_string();
    assert_eq!(last_modified, "Sat, 21 Nov 2026 12:00:00 GMT");
    let remaining = first.num("x-ratelimit-remaining");
    assert_eq!(remaining, 4999);

    let again = c.send("GET", &path, None, &[("If-None-Match", &etag)]);
    assert_eq!(again.status, 304);
    assert_eq!(again.body, Value::Null);
    assert_eq!(again.header("etag"), Some(etag.as_str()));
    assert_eq!(
        again.num("x-ratelimit-remaining"),
        remaining,
        "a 304 costs nothing"
    );
    let by_date = c.send("GET", &path, None, &[("If-Modified-Since", &last_modified)]);
    assert_eq!(by_date.status, 304);

    c.post(
        &format!("{R}/issues"),
        json!({"title": "New", "labels": ["opentiger"]}),
    );
    let changed = c.send("GET", &path, None, &[("If-None-Match", &etag)]);
    assert_eq!(changed.status, 200);
    assert_eq!(changed.body.as_array().map(Vec::len), Some(2));
    assert_eq!(changed.num("x-ratelimit-remaining"), remaining - 2);
    let conditional: Vec<bool> = server.requests().iter().map(|r| r.conditional).collect();
    assert_eq!(conditional, [false, true, true, false, true]);
}

#[test]
fn lists_are_paginated_with_absolute_link_headers() {
    let (server, mut c) = server();
    for i in 0..65 {
        server.add_issue(&format!("Issue {i}"), "", &[], "acme", "OWNER");
    }
    let first = c.get(&format!("{R}/issues?state=open&per_page=30"));
    assert_eq!(first.body.as_array().map(Vec::len), Some(30));
    let page = format!(
        "{}{R}/issues?state=open&per_page=30&page=",
        server.base_url()
    );
    assert_eq!(
        first.header("link"),
        Some(format!("<{page}2>; rel=\"next\", <{page}3>; rel=\"last\"").as_str())
    );
    let mut seen: Vec<u64> = Vec::new();
    let mut next = Some(format!("{R}/issues?state=open&per_page=30"));
    let mut pages = 0;
    while let Some(url) = next {
        let page = c.get(&url);
        seen.extend(
            page.body
                .as_array()
                .expect("array")
                .iter()
                .map(|i| i["number"].as_u64().expect("n")),
        );
        next = page.next();
        pages += 1;
        if pages == 3 {
            let link = page.header("link").expect("link on the last page");
            assert!(
                link.contains("rel=\"prev\"")
                    && link.contains("rel=\"first\"")
                    && !link.contains("rel=\"next\""),
                "{link}"
            );
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(seen, (1..=65).rev().collect::<Vec<u64>>());
    assert_eq!(
        c.get(&format!("{R}/issues?per_page=500"))
            .body
            .as_array()
            .map(Vec::len),
        Some(65),
        "per_page caps at 100"
    );
    assert_eq!(
        c.get(&format!("{R}/issues")).body.as_array().map(Vec::len),
        Some(30),
        "30 by default"
    );
    assert!(c
        .get(&format!("{R}/issues?per_page=100"))
        .header("link")
        .is_none());
}

#[test]
fn injected_failures_look_like_githubs() {
    let (server, mut c) = server();
    let path = format!("{R}/issues");
    server.fail_next(1, Failure::PrimaryRateLimit);
    let primary = c.get(&path);
    assert_eq!(
        (primary.status, primary.num("x-ratelimit-remaining")),
        (403, 0)
    );
    assert_eq!(primary.num("x-ratelimit-reset"), 1_795_262_400 + 3600);
    assert!(primary.body["message"]
        .as_str()
        .expect("message")
        .starts_with("API rate limit exceeded"));

    server.fail_next(1, Failure::SecondaryRateLimit);
    let secondary = c.get(&path);
    assert_eq!(
        (secondary.status, secondary.header("retry-after")),
        (403, Some("60"))
    );
    assert!(secondary.body["message"]
        .as_str()
        .expect("message")
        .contains("secondary rate limit"));

    server.fail_next(2, Failure::ServerError);
    assert_eq!(c.get(&path).status, 502);
    assert_eq!(c.get(&path).status, 502);
    assert_eq!(c.get(&path).status, 200);

    // An exhausted window refuses everything but /rate_limit until it resets.
    server.set_rate_remaining(1);
    assert_eq!(c.get(&path).status, 200);
    assert_eq!(c.get(&path).status, 403);
    let limits = c.get("/rate_limit");
    assert_eq!(
        (
            limits.status,
            limits.body["resources"]["core"]["remaining"].as_u64()
        ),
        (200, Some(0))
    );
    server.advance(3600);
    let after = c.get(&path);
    assert_eq!(
        (after.status, after.num("x-ratelimit-remaining")),
        (200, 4999)
    );
}

#[test]
fn requests_without_the_token_are_refused() {
    let server = GithubServer::start("acme", "widgets");
    for token in [None, Some("wrong")] {
        let r = Client::with_token(&server, token).get(&format!("{R}/issues"));
        assert_eq!(
            (r.status, r.body["message"].as_str()),
            (401, Some("Bad credentials"))
        );
    }
    let mut legacy = Client::with_token(&server, None);
    legacy.token = Some(format!("token {TOKEN}"));
    assert_eq!(legacy.get(&format!("{R}/issues")).status, 200);
    let custom = GithubServer::with_token("acme", "widgets", "s3cret");
    assert_eq!(
        Client::with_token(&custom, Some(TOKEN))
            .get("/rate_limit")
            .status,
        401
    );
    assert_eq!(
        Client::with_token(&custom, Some("s3cret"))
            .get("/rate_limit")
            .status,
        200
    );
}

#[test]
fn the_request_log_counts_every_request() {
    let (server, mut c) = server();
    c.get(&format!("{R}/issues?state=all"));
    c.get(&format!("{R}/nope"));
    let log = server.requests();
    assert_eq!(server.request_count(), 2);
    assert_eq!(
        (
            log[0].method.as_str(),
            log[0].path_and_query.as_str(),
            log[0].status
        ),
        ("GET", "/repos/acme/widgets/issues?state=all", 200)
    );
    assert_eq!(log[1].status, 404);
    let responses = server.responses();
    assert_eq!(responses[0].route_template, "/repos/{owner}/{repo}/issues");
    assert_eq!(
        responses[1].body,
        Some(json!({
            "message": "Not Found",
            "documentation_url": "https://docs.github.com/rest",
            "status": "404",
        }))
    );
    server.reset_counts();
    assert_eq!(server.request_count(), 0);
    c.get("/rate_limit");
    assert_eq!(server.request_count(), 1);
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

#[test]
fn the_server_stops_when_dropped() {
    let server = GithubServer::start("acme", "widgets");
    let mut idle = Client::new(&server);
    assert_eq!(idle.get("/rate_limit").status, 200);
    let addr = server.base_url().trim_start_matches("http://").to_string();
    drop(server);
    assert!(
        TcpStream::connect(&addr).is_err(),
        "nothing listens on {addr} any more"
    );
    let mut rest = Vec::new();
    assert_eq!(
        idle.reader.read_to_end(&mut rest).map(|_| rest.len()).ok(),
        Some(0),
        "kept-alive connections are closed"
    );
}

/// Every endpoint once, successes and error shapes, checked by `tests/openapi/validate.mjs`
/// against GitHub's OpenAPI description (npm `@octokit/openapi`).
#[test]
fn responses_match_githubs_openapi_description() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/openapi");
    if !root.join("node_modules/@octokit/openapi").is_dir() {
        let why = format!(
            "{} has no node_modules: install with `npm ci --prefix tests/openapi` (Node 18+)",
            root.display()
        );
        if std::env::var_os("CI").is_some() {
            panic!("{why}; CI must run the OpenAPI check");
        }
        eprintln!("SKIPPED responses_match_githubs_openapi_description: {why}");
        return;
    }
    let (server, mut c) = server();
    let n = server.add_issue("Seeded", "body", &["opentiger"], "alice", "NONE");
    server.add_label_event(n, "approved", "acme");
    let sha = "abcabcabcabcabcabcabcabcabcabcabcabcabca";
    server.set_check_runs(
        sha,
        &[
            ("test", "completed", Some("success")),
            ("lint", "queued", None),
        ],
    );
    server.set_status(sha, &[("ci/build", "success")]);

    let issue = c.post(
        &format!("{R}/issues"),
        json!({"title": "Made", "body": "x", "labels": ["bug"]}),
    );
    let m = issue.body["number"].as_u64().expect("number");
    c.post(&format!("{R}/issues"), json!({}));
    c.get(&format!("{R}/issues/{n}"));
    c.get(&format!("{R}/issues/999"));
    c.patch(&format!("{R}/issues/{m}"), json!({"state": "closed"}));
    c.patch(&format!("{R}/issues/{m}"), json!({"state": "bogus"}));
    c.patch(&format!("{R}/issues/{m}"), json!({"state": "open"}));
    c.get(&format!("{R}/issues/{m}/events"));
    let comment = c.post(
        &format!("{R}/issues/{n}/comments"),
        json!({"body": "hello"}),
    );
    c.post(&format!("{R}/issues/{n}/comments"), json!({}));
    c.get(&format!("{R}/issues/{n}/comments"));
    let id = comment.body["id"].as_u64().expect("id");
    c.patch(
        &format!("{R}/issues/comments/{id}"),
        json!({"body": "edited"}),
    );
    c.get(&format!("{R}/issues/comments/{id}"));
    c.get(&format!(
        "{R}/issues/comments?sort=updated&direction=asc&since=2020-01-01T00:00:00Z&per_page=100"
    ));
    c.post(
        &format!("{R}/issues/{n}/labels"),
        json!({"labels": ["in progress"]}),
    );
    c.put(
        &format!("{R}/issues/{n}/labels"),
        json!({"labels": ["opentiger", "in progress"]}),
    );
    c.delete(&format!("{R}/issues/{n}/labels/in%20progress"));
    c.delete(&format!("{R}/issues/{n}/labels/absent"));
    c.get(&format!("{R}/issues/{n}/labels"));
    let closes = format!("Closes #{n}");
    let pr_body = json!({"title": "PR", "head": "opentiger/t1", "base": "main", "body": closes});
    let pr = c.post(&format!("{R}/pulls"), pr_body);
    let p = pr.body["number"].as_u64().expect("number");
    c.post(
        &format!("{R}/pulls"),
        json!({"title": "PR", "head": "opentiger/t1", "base": "main"}),
    );
    c.post(
        &format!("{R}/pulls"),
        json!({"title": "PR", "head": "opentiger/t2", "base": "main"}),
    );
    c.post(&format!("{R}/issues/{p}/labels"), json!(["opentiger"]));
    c.get(&format!("{R}/pulls?state=all&head=acme:opentiger/t1"));
    c.get(&format!("{R}/pulls/{p}"));
    c.get(&format!("{R}/pulls/999"));
    server.add_review(
        p,
        "acme",
        "CHANGES_REQUESTED",
        "Please fix",
        &[
            ("src/a.rs", Some(3), 5, "off by one"),
            ("b.md", None, 1, "typo"),
        ],
    );
    server.add_review(p, "acme", "APPROVED", "", &[]);
    c.get(&format!("{R}/pulls/{p}/reviews"));
    c.get(&format!("{R}/pulls/{p}/comments"));
    c.get(&format!("{R}/pulls/999/reviews"));
    c.patch(
        &format!("{R}/pulls/{p}"),
        json!({"body": format!("Closes #{n}\n\nmore")}),
    );
    c.put(
        &format!("{R}/pulls/{p}/merge"),
        json!({"sha": "0000000000000000000000000000000000000000"}),
    );
    c.put(
        &format!("{R}/pulls/{p}/merge"),
        json!({"merge_method": "squash"}),
    );
    c.put(&format!("{R}/pulls/{p}/merge"), json!({}));
    c.get(&format!("{R}/pulls/{p}"));
    c.patch(&format!("{R}/pulls/{}", p + 1), json!({"state": "closed"}));
    c.get(&format!("{R}/issues?state=all"));
    c.get(&format!("{R}/issues/{n}/events"));
    c.get(&format!("{R}/issues/{p}/events"));
    c.get(&format!("{R}/commits/{sha}/check-runs"));
    c.get(&format!("{R}/commits/{sha}/status"));
    // Issue 28: opentiger's own check runs and the statuses standing in for them.
    let annotation = json!({"path": "src/a.rs", "start_line": 3, "end_line": 3,
        "annotation_level": "failure", "title": "t", "message": "m"});
    let created = c.post(
        &format!("{R}/check-runs"),
        json!({"name": "opentiger / verify", "head_sha": sha, "external_id": "task=t run=r",
            "status": "completed", "conclusion": "failure", "completed_at": "2026-11-21T12:00:00Z",
            "output": {"title": "failed", "summary": "s", "text": "t", "annotations": [annotation]}}),
    );
    let run = created.body["id"].as_u64().expect("id");
    c.patch(
        &format!("{R}/check-runs/{run}"),
        json!({"status": "in_progress", "output": {"title": "again", "summary": "s"}}),
    );
    c.post(&format!("{R}/check-runs"), json!({"name": "no sha"}));
    c.post(
        &format!("{R}/check-runs"),
        json!({"name": "x", "head_sha": sha, "status": "completed"}),
    );
    c.patch(
        &format!("{R}/check-runs/99999"),
        json!({"status": "queued"}),
    );
    c.get(&format!(
        "{R}/commits/{sha}/check-runs?check_name=opentiger%20/%20verify&filter=latest&per_page=1"
    ));
    c.post(
        &format!("{R}/statuses/{sha}"),
        json!({"state": "pending", "context": "opentiger / judge", "description": "waiting"}),
    );
    c.post(&format!("{R}/statuses/{sha}"), json!({"state": "bogus"}));
    c.get(&format!("{R}/commits/{sha}/status"));
    server.set_checks_write(false);
    c.post(
        &format!("{R}/check-runs"),
        json!({"name": "opentiger / judge", "head_sha": sha, "status": "queued"}),
    );
    server.set_checks_write(true);
    server.set_required_checks("main", &["test", "ci/build"]);
    c.get(&format!("{R}/rules/branches/main"));
    c.get(&format!("{R}/rules/branches/no-rules"));
    server.add_workflow("ci.yml", true);
    server.add_workflow("release.yml", false);
    let dispatch = json!({"ref": "main"});
    c.post(
        &format!("{R}/actions/workflows/ci.yml/dispatches"),
        dispatch.clone(),
    );
    server.set_actions_write(true);
    c.post(
        &format!("{R}/actions/workflows/ci.yml/dispatches"),
        dispatch.clone(),
    );
    c.post(
        &format!("{R}/actions/workflows/release.yml/dispatches"),
        dispatch.clone(),
    );
    c.post(
        &format!("{R}/actions/workflows/nope.yml/dispatches"),
        dispatch,
    );
    c.post(
        &format!("{R}/actions/workflows/ci.yml/dispatches"),
        json!({"ref": "no-such-branch"}),
    );
    assert_eq!(server.dispatches().len(), 1, "{:?}", server.dispatches());
    c.patch(&format!("{R}/pulls/{p}"), json!({"base": "no-such-branch"}));
    c.get(&format!("{R}/collaborators/acme/permission"));
    c.get(&format!("{R}/collaborators/nobody/permission"));
    c.get(R);
    c.get("/rate_limit");
    c.get("/nope");
    let etag = c
        .get(&format!("{R}/issues/{n}"))
        .header("etag")
        .expect("etag")
        .to_string();
    c.send(
        "GET",
        &format!("{R}/issues/{n}"),
        None,
        &[("If-None-Match", &etag)],
    );
    Client::with_token(&server, None).get(&format!("{R}/issues"));
    for failure in [
        Failure::PrimaryRateLimit,
        Failure::SecondaryRateLimit,
        Failure::ServerError,
    ] {
        server.fail_next(1, failure);
        c.get(&format!("{R}/issues"));
    }

    let statuses: std::collections::BTreeSet<u16> =
        server.responses().iter().map(|r| r.status).collect();
    assert_eq!(
        statuses.into_iter().collect::<Vec<_>>(),
        [200, 201, 204, 304, 401, 403, 404, 405, 409, 422, 502]
    );
    let dir = tempfile::tempdir().expect("temp dir");
    let count = server.write_responses(dir.path());
    let out = Command::new("node")
        .arg(root.join("validate.mjs"))
        .arg(dir.path())
        .output()
        .expect("run node (Node 18+ is needed for the OpenAPI check)");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(
        out.status.success(),
        "{count} responses checked; mismatches:\n{stdout}{stderr}"
    );
    eprintln!("{stdout}");
}
