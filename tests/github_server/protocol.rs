//! The stand-in's HTTP as GitHub's: a matching conditional GET is a free 304, lists are paged
//! with absolute `Link` headers, injected failures look like GitHub's, requests without the
//! token are refused, every request is logged, and the server stops when dropped.

use super::*;

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
