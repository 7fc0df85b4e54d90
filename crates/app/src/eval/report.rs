//! What an eval says: the summary with a column per configuration, a table of tasks per
//! configuration with links to their logs, the changes left out, as Markdown; the same as JSON
//! (`{"configs": [{"config", "summary", "tasks": [...]}, ...]}` and more fields); the picture.
//! All three are written to the eval's folder (`report.md`, `report.json`, `report.svg`), the
//! links relative to it.
//! Not for: the figures (`eval::rules`), or running anything (`eval::run`).

use crate::failure::Failure;

use super::results::{write_atomically, Evaluated, TaskResult};
use super::rules::{HiddenTests, Summary};
use super::svg;

fn usd(x: f64) -> String {
    format!("${x:.2}")
}

fn secs(x: f64) -> String {
    crate::time::human_span((x * 1000.0) as i64)
}

fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// A task's outcome in a few words, for the progress line and the table.
pub fn one_line(r: &TaskResult) -> String {
    let what = if r.resolved {
        "resolved".to_string()
    } else if r.wrong_merge {
        "WRONG MERGE (merged, hidden tests fail)".to_string()
    } else if r.merged {
        format!("merged, hidden tests {}", r.hidden_tests.word())
    } else if r.refused_passing {
        "not merged, though its last change passes the hidden tests".to_string()
    } else {
        format!(
            "not merged ({}), hidden tests {} on {}",
            crate::report::truncate(r.why_not.as_deref().unwrap_or(&r.state), 80),
            r.hidden_tests.word(),
            r.tested.replace('_', " ")
        )
    };
    format!(
        "{what}; {} run(s), {} rework(s), {}, {}",
        r.runs,
        r.reworks,
        usd(r.cost_usd),
        secs(r.seconds)
    )
}

fn rate(s: &Summary) -> String {
    format!("{} ({:.0}%)", s.resolved, s.resolve_rate * 100.0)
}

/// A summary row: its label, and its figure for one configuration.
type Row = (&'static str, fn(&Summary) -> String);

/// The summary rows.
fn summary_rows() -> Vec<Row> {
    vec![
        ("tasks", |s| s.tasks.to_string()),
        ("resolved", rate),
        ("wrong merges (approved, hidden tests fail)", |s| {
            s.wrong_merges.to_string()
        }),
        ("refused, yet the hidden tests pass", |s| {
            s.refused_passing.to_string()
        }),
        ("merged", |s| s.merged.to_string()),
        ("runs / reworks", |s| format!("{} / {}", s.runs, s.reworks)),
        ("tokens", |s| s.tokens.to_string()),
        ("cost", |s| usd(s.cost_usd)),
        ("cost per resolved task", |s| {
            s.cost_per_resolved_usd.map_or("–".into(), usd)
        }),
        ("time per resolved task", |s| {
            s.seconds_per_resolved.map_or("–".into(), secs)
        }),
        ("tasks whose tests pass without the change", |s| {
            s.weak_tests.to_string()
        }),
    ]
}

pub fn markdown(e: &Evaluated) -> String {
    let tasks = e.configs.first().map_or(0, |c| c.tasks.len());
    let mut md = format!(
        "# opentiger eval\n\n{tasks} change(s) replayed with {} configuration(s); logs and results in `{}` (the links below are relative to it).\n",
        e.configs.len(),
        e.eval_dir.display()
    );
    if let Some(stopped) = &e.stopped {
        md.push_str(&format!("\n**Not finished**: {stopped}.\n"));
    }
    md.push_str("\n| |");
    for c in &e.configs {
        md.push_str(&format!(" {} |", cell(&c.label)));
    }
    md.push_str("\n|---|");
    md.push_str(&"---|".repeat(e.configs.len()));
    md.push('\n');
    for (label, figure) in summary_rows() {
        md.push_str(&format!("| {label} |"));
        for c in &e.configs {
            md.push_str(&format!(" {} |", figure(&c.summary)));
        }
        md.push('\n');
    }
    md.push_str("\n![cost per task against resolve rate](report.svg)\n");
    for c in &e.configs {
        md.push_str(&format!("\n## {} (`{}`)\n\n", cell(&c.label), c.config));
        md.push_str("| commit | task | merged | hidden tests | runs | reworks | tokens | cost | time | logs |\n");
        md.push_str("|---|---|---|---|---|---|---|---|---|---|\n");
        for r in &c.tasks {
            let merged = if r.merged {
                "yes".to_string()
            } else {
                format!(
                    "no: {}",
                    crate::report::truncate(r.why_not.as_deref().unwrap_or(&r.state), 100)
                )
            };
            let hidden = match (r.hidden_tests, r.tested.as_str()) {
                (HiddenTests::None, _) => "none".to_string(),
                (h, "merged") => h.word().to_string(),
                (h, tested) => format!("{} (on the {})", h.word(), tested.replace('_', " ")),
            };
            let mark = if r.wrong_merge {
                " **wrong merge**"
            } else if r.weak_tests {
                " (pass without the change too)"
            } else {
                ""
            };
            md.push_str(&format!(
                "| `{}` | {} | {} | {hidden}{mark} | {} | {} | {} | {} | {} | [logs]({}/) |\n",
                &r.commit[..12.min(r.commit.len())],
                cell(&crate::report::truncate(&r.title, 70)),
                cell(&merged),
                r.runs,
                r.reworks,
                r.tokens,
                usd(r.cost_usd),
                secs(r.seconds),
                r.logs
            ));
        }
        for s in &c.invalid {
            md.push_str(&format!(
                "\nLeft out: `{}` {}: {}\n",
                &s.commit[..12.min(s.commit.len())],
                cell(&s.title),
                s.why
            ));
        }
        if !c.not_run.is_empty() {
            md.push_str(&format!("\nNot run: {} change(s).\n", c.not_run.len()));
        }
    }
    if !e.skipped.is_empty() {
        md.push_str("\n## Changes left out\n\n");
        for s in &e.skipped {
            md.push_str(&format!(
                "- `{}` {}: {}\n",
                &s.commit[..12.min(s.commit.len())],
                cell(&s.title),
                s.why
            ));
        }
    }
    md
}

pub fn json(e: &Evaluated) -> Result<String, Failure> {
    serde_json::to_string_pretty(e)
        .map_err(|err| Failure::tick(format!("eval: could not write the JSON report: {err}")))
}

pub fn picture(e: &Evaluated) -> String {
    let points: Vec<svg::Point<'_>> = e
        .configs
        .iter()
        .map(|c| svg::Point {
            label: &c.label,
            resolve_rate: c.summary.resolve_rate,
            cost_per_task: if c.summary.tasks == 0 {
                0.0
            } else {
                c.summary.cost_usd / f64::from(c.summary.tasks)
            },
        })
        .collect();
    svg::render(&points)
}

/// `report.md`, `report.json` and `report.svg` in the eval's folder.
pub fn write_files(e: &Evaluated) -> Result<(), Failure> {
    let write = |name: &str, text: &str| {
        write_atomically(&e.eval_dir.join(name), text.as_bytes()).map_err(|err| {
            Failure::tick(format!(
                "eval: could not write {}: {err}",
                e.eval_dir.join(name).display()
            ))
        })
    };
    write("report.md", &markdown(e))?;
    write("report.json", &json(e)?)?;
    write("report.svg", &picture(e))
}
