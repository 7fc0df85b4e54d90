//! Table tests of requirement parsing (spec §2.1 step 1).

use super::*;

const FULL: &str = "\
# Todo service

## Goal
Build a small todo API.

## Background
Teams track work in spreadsheets.
They want an API.

## Constraints
- Rust only
- No new dependencies

## Acceptance Criteria
- [ ] `GET /todos` lists todos
- [x] `POST /todos` creates a todo
  and returns its id

## Scope
### In Scope
- REST API
### Out of Scope
- Web UI

## Allowed Paths
- `src/**`
- `tests/**`
- docs/api.md

## Risk Assessment
| Risk | Impact | Mitigation |
|------|--------|------------|
| Data loss | high | Backups |
| Slow queries | low | Indexes |

## Notes
Keep it small.
";

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

#[test]
fn a_full_document_fills_every_field() {
    let req = parse_requirement(FULL);
    let expected = Requirement {
        goal: "Build a small todo API.".into(),
        background: "Teams track work in spreadsheets.\nThey want an API.".into(),
        constraints: strings(&["Rust only", "No new dependencies"]),
        acceptance_criteria: strings(&[
            "`GET /todos` lists todos",
            "`POST /todos` creates a todo and returns its id",
        ]),
        in_scope: strings(&["REST API"]),
        out_of_scope: strings(&["Web UI"]),
        allowed_paths: strings(&["src/**", "tests/**", "docs/api.md"]),
        risks: vec![
            RiskRow {
                risk: "Data loss".into(),
                level: Risk::High,
                mitigation: "Backups".into(),
            },
            RiskRow {
                risk: "Slow queries".into(),
                level: Risk::Low,
                mitigation: "Indexes".into(),
            },
        ],
        notes: "Keep it small.".into(),
    };
    assert_eq!(req, expected);
    assert_eq!(req.max_risk(), Risk::High);
}

#[test]
fn goal_fallbacks() {
    let cases: &[(&str, &str, &str)] = &[
        ("goal section", "# T\n## Goal\nShip it\n", "Ship it"),
        (
            "multi-line goal",
            "## Goal\n\nLine one\nLine two\n\n## Notes\nx",
            "Line one\nLine two",
        ),
        (
            "no goal: first text line",
            "# Title\n\nMake the build green.\n\n## Notes\nx",
            "Make the build green.",
        ),
        (
            "empty goal section: first text line",
            "# T\n## Goal\n\n## Notes\nlater",
            "later",
        ),
        ("only headings", "# A\n## B\n", DEFAULT_GOAL),
        ("empty document", "", DEFAULT_GOAL),
        (
            "code is not text",
            "```\n# not a heading\n```\nReal goal",
            "Real goal",
        ),
    ];
    for (name, doc, goal) in cases {
        assert_eq!(parse_requirement(doc).goal, *goal, "{name}");
    }
}

#[test]
fn acceptance_fallbacks() {
    let cases: &[(&str, &str, &[&str])] = &[
        (
            "list items",
            "## Acceptance Criteria\n- a\n* b\n+ c\n1. d\n2) e\n",
            &["a", "b", "c", "d", "e"],
        ),
        (
            "checkboxes stripped",
            "## Acceptance Criteria\n- [ ] open\n- [x] done\n- [X] Done\n- [link](x) kept\n",
            &["open", "done", "Done", "[link](x) kept"],
        ),
        (
            "nested items belong to their parent",
            "## Acceptance Criteria\n- parent\n  - child\n- next\n",
            &["parent", "next"],
        ),
        (
            "no list: first line of the section",
            "## Acceptance Criteria\n\nIt works.\nReally.\n",
            &["It works."],
        ),
        (
            "no section",
            "## Goal\nShip it\n",
            &["Deliver a verifiable first increment toward: Ship it"],
        ),
        (
            "empty section",
            "## Goal\nShip it\n## Acceptance Criteria\n\n## Notes\nn",
            &["Deliver a verifiable first increment toward: Ship it"],
        ),
        (
            "empty document",
            "",
            &["Deliver a verifiable first increment toward: Deliver the requirement described in this document."],
        ),
    ];
    for (name, doc, expected) in cases {
        assert_eq!(
            parse_requirement(doc).acceptance_criteria,
            strings(expected),
            "{name}"
        );
    }
}

#[test]
fn allowed_paths() {
    let cases: &[(&str, &str, &[&str])] = &[
        ("missing section", "## Goal\nx", &["**"]),
        (
            "section without paths",
            "## Allowed Paths\n- anything\n",
            &["**"],
        ),
        (
            "backticks, lists, escapes, duplicates",
            "## Allowed Paths\n- `src/**` and `tests/**`\n- docs/\\*.md\n- `src/**`\n\
             - apps/web/\\*\\* (the web app)\n- README\n* packages/\\_\\_tests\\_\\_/**\n",
            &[
                "src/**",
                "tests/**",
                "docs/*.md",
                "apps/web/**",
                "packages/__tests__/**",
            ],
        ),
        (
            "backticks outside a list",
            "## Allowed Paths\nOnly `Cargo.toml` and `src/`.\n",
            &["Cargo.toml", "src/"],
        ),
    ];
    for (name, doc, expected) in cases {
        assert_eq!(
            parse_requirement(doc).allowed_paths,
            strings(expected),
            "{name}"
        );
    }
}

#[test]
fn risk_tables() {
    let doc = "## Risk Assessment\n\
               | リスク | 影響度 | 対策 |\n\
               | :--- | :---: | ---: |\n\
               | データ消失 | 高 | バックアップ |\n\
               | 遅延 | 中 | キャッシュ |\n\
               | 表記ゆれ | 低 | レビュー |\n\
               | Outage | **Medium** | Alerts |\n\
               | Unknown | maybe | ignored |\n\
               | No mitigation | LOW |\n";
    let req = parse_requirement(doc);
    let rows: Vec<(&str, Risk, &str)> = req
        .risks
        .iter()
        .map(|r| (r.risk.as_str(), r.level, r.mitigation.as_str()))
        .collect();
    assert_eq!(
        rows,
        vec![
            ("データ消失", Risk::High, "バックアップ"),
            ("遅延", Risk::Medium, "キャッシュ"),
            ("表記ゆれ", Risk::Low, "レビュー"),
            ("Outage", Risk::Medium, "Alerts"),
            ("No mitigation", Risk::Low, ""),
        ]
    );
    assert_eq!(req.max_risk(), Risk::High);
    assert_eq!(parse_requirement("").max_risk(), Risk::Low);
    let medium = parse_requirement("## Risk Assessment\n| a | medium | b |\n| c | low | d |");
    assert_eq!(medium.max_risk(), Risk::Medium);
}

#[test]
fn headings_match_in_any_case_with_a_colon() {
    let doc = "## GOAL:\nUpper goal\n\n## acceptance criteria :\n- one\n\n\
               ## allowed PATHS ##\n- `lib/**`\n\n##   Risk   assessment\n| r | High | m |\n\
               ## Notes:\nnote text\n";
    let req = parse_requirement(doc);
    assert_eq!(req.goal, "Upper goal");
    assert_eq!(req.acceptance_criteria, strings(&["one"]));
    assert_eq!(req.allowed_paths, strings(&["lib/**"]));
    assert_eq!(req.max_risk(), Risk::High);
    assert_eq!(req.notes, "note text");
}

#[test]
fn an_h1_section_runs_to_the_next_h1() {
    let doc = "# Goal\nBig goal\n## Detail\nmore\n# Notes\nn";
    let req = parse_requirement(doc);
    assert_eq!(req.goal, "Big goal\n## Detail\nmore");
    assert_eq!(req.notes, "n");
}

#[test]
fn sections_end_at_the_next_heading_of_the_same_or_higher_level() {
    let doc = "# Doc\n## Constraints\n- a\n### Detail\n- b\n## Notes\nn\n# Appendix\n\
               ## Constraints\n- ignored, only the first section counts\n";
    let req = parse_requirement(doc);
    assert_eq!(req.constraints, strings(&["a", "b"]));
    let doc = "## Notes\nfirst\n# Next\nafter";
    assert_eq!(parse_requirement(doc).notes, "first");
    let doc = "## Scope\n### In Scope\n- api\n### Out of Scope\n- ui\n## Goal\ng\n";
    let req = parse_requirement(doc);
    assert_eq!(
        (req.in_scope, req.out_of_scope, req.goal),
        (strings(&["api"]), strings(&["ui"]), "g".to_string())
    );
    let doc = "## In Scope\n- api\n";
    assert_eq!(parse_requirement(doc).in_scope, strings(&["api"]));
    let doc = "## Notes\n```\n## Goal\n```\nend";
    assert_eq!(parse_requirement(doc).notes, "```\n## Goal\n```\nend");
    let doc = "##Goal\nnot a heading";
    assert_eq!(parse_requirement(doc).goal, "##Goal");
}

#[test]
fn an_empty_document_gets_every_default() {
    let req = parse_requirement("");
    assert_eq!(req.goal, DEFAULT_GOAL);
    assert_eq!(req.acceptance_criteria.len(), 1);
    assert_eq!(req.allowed_paths, strings(&["**"]));
    assert!(req.background.is_empty() && req.notes.is_empty());
    assert!(req.constraints.is_empty() && req.in_scope.is_empty() && req.risks.is_empty());
}

#[test]
fn crlf_documents_parse_and_hash_like_lf_ones() {
    let lf = "## Goal\nShip\n## Constraints\n- a\n";
    let crlf = lf.replace('\n', "\r\n");
    assert_eq!(parse_requirement(&crlf), parse_requirement(lf));
    assert_eq!(content_hash(&crlf), content_hash(lf));
    assert_ne!(content_hash(lf), content_hash("## Goal\nShip it\n"));
    assert_eq!(
        content_hash(""),
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    );
}
