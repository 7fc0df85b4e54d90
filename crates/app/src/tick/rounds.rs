//! A tick's rounds (issue 38, DESIGN §3 step 6 "again from 3"): act on what the round claimed,
//! record it (its own save, so a tick killed in round three keeps rounds one and two), then
//! plan again with a fresh `now` and go on while the plan starts work that needs nothing from
//! outside and fits before the deadline (`engine::rounds` decides both). The first round's
//! claim is the tick's (after it observed GitHub); later rounds observe only what they need:
//! CI on the heads the round before pushed (github mode) — everything else is in the state
//! just written.
//!
//! With `--now` the clock never moves, so each round counts as taking its whole bound: the
//! deadline a fixed-clock tick plans against comes closer by that much per round.
//!
//! Not for: deciding what fits or whether work needs the outside (the engine), or the phases
//! themselves ([`super::act`], [`super::record`], [`super::claim`]).

use std::collections::BTreeMap;

use super::act;
use super::claim::{self, Claimed, Work};
use super::done::Done;
use super::unsaved::Unsaved;
use super::{record, Context, Failure, TickSummary};
use crate::engine::rounds::{self, TickSoFar};
use crate::engine::verdict::JudgeConclusion;
use crate::forge::github::GithubClient;
use crate::model::{Checks, RunId};
use crate::runner::judge::JudgeResult;
use crate::runner::work::WorkResult;
use crate::time::{Millis, Timestamp, MINUTE};

/// How the rounds ended.
pub(super) enum Ended {
    /// Nothing left to do now, or no time for it: the tick reports and ends.
    Done,
    /// A signal stopped the tick: nothing new started, state saved; what is owed to GitHub
    /// waits for the next tick.
    Interrupted,
}

/// The first round's context: the tick's deadline counted from its start. None with
/// `limits.tick_minutes: 0`, which turns rounds off (one round per tick, as before issue 38),
/// nor for `fan_out`, whose claimed runs are worked by jobs of their own, side by side.
pub(super) fn first(ctx: &Context, fan_out: bool) -> Context {
    Context {
        so_far: TickSoFar {
            deadline: (rounds_on(ctx) && !fan_out).then(|| deadline(ctx, 0)),
            ..TickSoFar::default()
        },
        ..ctx.clone()
    }
}

/// `limits.tick_minutes: 0` turns the rounds off.
fn rounds_on(ctx: &Context) -> bool {
    ctx.config.limits.tick_minutes > 0
}

/// The deadline a round plans against: `limits.tick_minutes` after the tick's start, less
/// the simulated time of earlier rounds when the clock is fixed.
fn deadline(ctx: &Context, simulated: Millis) -> Timestamp {
    ctx.now
        .plus(i64::from(ctx.config.limits.tick_minutes) * MINUTE - simulated)
}

/// Acts on `claimed` and records it, then plans and claims the next round while there is one;
/// `ctx` is the first round's ([`first`]). Adds each round's lines and counts to `summary`.
/// What each round claims, starts and finishes is kept in `unsaved` until its record is saved
/// (issue 49; the first round's claim was kept by the tick's).
pub(super) fn run(
    ctx: &Context,
    forge: Option<&GithubClient>,
    claimed: Claimed,
    fan_out: bool,
    summary: &mut TickSummary,
    unsaved: &mut Unsaved,
) -> Result<Ended, Failure> {
    let mut round_ctx = ctx.clone();
    let mut claimed = claimed;
    let mut simulated: Millis = 0;
    // Where each round's lines start, and its header once a second round exists.
    let mut headers: Vec<(usize, String)> = Vec::new();
    let mut start = 0;
    loop {
        let round = round_ctx.so_far.rounds + 1;
        let bound = claimed.bound_ms;
        let left = round_ctx
            .so_far
            .deadline
            .map_or(0, |d| d.minus(round_ctx.now));
        let families = claimed.families.clone();
        let Claims {
            runs,
            reviewed,
            prs: review_prs,
            planned,
        } = what_it_claims(&claimed);
        // A round of GitHub effects alone is not followed by another.
        let effects_only = runs == 0 && reviewed.is_empty() && !planned;
        let done = act::act(
            &round_ctx,
            forge,
            claimed,
            fan_out,
            round == 1,
            summary,
            unsaved,
        )?;
        let now = round_ctx.later();
        let recorded = round_ctx.record_state(&format!("record (round {round})"), |store| {
            record::record(&round_ctx, store, &done, now, summary)
        })?;
        unsaved.saved();
        let merged = recorded.merged;
        let interrupted = recorded.interrupted;
        add_recorded(summary, recorded, ctx.config.budget.per_day_usd);
        headers.push((
            start,
            header(round, &done, merged, bound, left, round_ctx.so_far.deadline),
        ));
        if let Some(signal) = crate::process::interrupt::requested() {
            summary.lines.push(format!(
                "interrupted by {}: nothing new started; {interrupted} run(s) stopped, cancelled and queued again; state saved",
                signal.name(),
            ));
            insert_headers(summary, headers);
            return Ok(Ended::Interrupted);
        }
        // `tick --fan-out` lists its runs for work jobs: their outcomes come from those jobs,
        // so there is nothing for a next round to follow up here.
        if fan_out || !rounds_on(ctx) {
            break;
        }
        // A round that acted on nothing (it only wrote decisions), or whose work all went back
        // unstarted, did nothing: planning again would claim the same and get nowhere.
        if done.is_empty() {
            break;
        }
        if done
            .iter()
            .all(|d| matches!(d, Done::Unstarted(..) | Done::HostProbed(_)))
        {
            summary
                .lines
                .push("[rounds] no further round: the last one made no progress".to_string());
            break;
        }
        simulated += if ctx.fixed_clock { bound } else { 0 };
        let so_far = TickSoFar {
            rounds: round,
            deadline: Some(deadline(ctx, simulated)),
            runs: round_ctx.so_far.runs + runs,
            families: round_ctx
                .so_far
                .families
                .iter()
                .cloned()
                .chain(families)
                .collect(),
            reviewed: round_ctx
                .so_far
                .reviewed
                .iter()
                .cloned()
                .chain(reviewed)
                .collect(),
            planned: round_ctx.so_far.planned || planned,
            spent_usd: round_ctx.so_far.spent_usd + runs_spend(&done),
        };
        let next_ctx = Context {
            now: ctx.later(),
            so_far,
            ..ctx.clone()
        };
        let (checks, learned) = match forge {
            Some(client) if ctx.config.merge.require_checks => {
                let heads = pushed_heads(&done, &review_prs);
                let checks = read_pushed_checks(client, &heads, next_ctx.now);
                let learned = learn_for_round(&next_ctx, client, &heads, &checks)?;
                (checks, learned)
            }
            Some(_) | None => (Vec::new(), None),
        };
        let reviews = match forge {
            Some(client) => read_people(&next_ctx, client, &spoken(&done, &review_prs))?,
            None => None,
        };
        start = summary.lines.len();
        let next = next_ctx.write_state(&format!("claim (round {})", round + 1), |store| {
            for (pr, head, seen) in &checks {
                store.set_pull_checks(*pr, head, seen)?;
                let unknown = seen.mergeable.as_deref() == Some("unknown");
                store.note_mergeable(*pr, head, unknown, next_ctx.now)?;
            }
            if let Some(learned) = &learned {
                for (key, cursor) in &learned.cursors {
                    store.set_cursor(key, cursor, next_ctx.now)?;
                }
                store.learn_checks(&learned.names, next_ctx.now)?;
            }
            if let Some(fetched) = &reviews {
                for (key, cursor) in &fetched.cursors {
                    store.set_cursor(key, cursor, next_ctx.now)?;
                }
                for (pr, kept) in &fetched.changed {
                    store.set_pull_reviews(*pr, kept)?;
                }
            }
            let (snapshot, plan) = next_ctx.plan(store)?;
            let effects = rounds::has_effects(&plan) && !effects_only;
            if !rounds::starts_work(&plan) && !effects {
                return Ok(Err((
                    rounds::stopped_by_time(&plan),
                    rounds::why_no_round(&plan),
                )));
            }
            let claimed = claim::claim_plan(&next_ctx, store, &snapshot, &plan)?;
            unsaved.begin(&claimed, fan_out);
            Ok(Ok(claimed))
        });
        // A configuration problem a later round runs into (an agent program missing for work
        // an earlier round planned) ends the rounds with what was done recorded; the next
        // tick's first round reports it as the error it is, before it claims anything.
        let next = match next {
            Err(e) if e.code == 2 => {
                summary
                    .lines
                    .push(format!("no further round: {}", e.message));
                break;
            }
            other => other?,
        };
        match next {
            Ok(mut next) => {
                summary.decisions += next.decisions;
                summary.lines.append(&mut next.lines);
                summary.claimed += next
                    .work
                    .iter()
                    .filter(|w| matches!(w, Work::Run { .. }))
                    .count();
                summary.judged += next
                    .work
                    .iter()
                    .filter(|w| matches!(w, Work::Review { .. }))
                    .count();
                claimed = next;
                round_ctx = next_ctx;
            }
            Err((by_time, why)) => {
                // A tick of one round says why it stopped only when time stopped it; that
                // is for everyone (issue 51: a review pushed out of the tick is never silent),
                // the outside's usual waits are a detail.
                if by_time {
                    summary.lines.push(why);
                } else if headers.len() > 1 {
                    summary.lines.push(format!("[rounds] {why}"));
                }
                break;
            }
        }
    }
    insert_headers(summary, headers);
    Ok(Ended::Done)
}

/// What a round's claim starts, for the next round's count.
#[derive(Default)]
struct Claims {
    runs: u32,
    /// The heads it reviews: (run, head).
    reviewed: Vec<(RunId, String)>,
    /// Each reviewed run's PR.
    prs: BTreeMap<RunId, u64>,
    planned: bool,
}

fn what_it_claims(claimed: &Claimed) -> Claims {
    let mut claims = Claims::default();
    for work in &claimed.work {
        match work {
            Work::Run { .. } => claims.runs += 1,
            Work::Review { run, .. } => {
                claims
                    .reviewed
                    .push((run.id.clone(), run.head_sha.clone().unwrap_or_default()));
                if let Some(pr) = run.pr_number {
                    claims.prs.insert(run.id.clone(), pr);
                }
            }
            Work::Plan(_) => claims.planned = true,
            Work::OpenIssue(_) | Work::ClosePull(..) | Work::HealCi(_) | Work::RetargetPull(..) => {
            }
        }
    }
    claims
}

/// What the round's runs spent (`budget.per_tick_usd` counts runs, as the act phase does).
fn runs_spend(done: &[Done]) -> f64 {
    done.iter()
        .map(|d| match d {
            Done::Work(_, _, r) | Done::Interrupted(_, _, r, _) | Done::Stopped(_, _, r, _) => {
                r.record.cost_usd
            }
            Done::Issue(..)
            | Done::Review(..)
            | Done::Plan(_)
            | Done::PullClosed(..)
            | Done::CiHealed(..)
            | Done::Retargeted(..)
            | Done::HostProbed(_)
            | Done::Unstarted(..) => 0.0,
        })
        .sum()
}

/// The PR heads the round pushed: a run's new or updated PR, a PR brought up to date with the
/// base by its review.
fn pushed_heads(done: &[Done], review_prs: &BTreeMap<RunId, u64>) -> Vec<(u64, String)> {
    let mut heads = Vec::new();
    for d in done {
        match d {
            Done::Work(_, _, WorkResult { outcome, record }) if outcome.success => {
                if let (Some(pr), Some(head)) = (record.pr_number, &record.head_sha) {
                    heads.push((pr, head.clone()));
                }
            }
            Done::Review(_, run, JudgeResult { conclusion, .. }) => {
                if let (JudgeConclusion::Updated { head }, Some(pr)) =
                    (conclusion, review_prs.get(run))
                {
                    heads.push((*pr, head.clone()));
                }
            }
            Done::Work(..)
            | Done::Issue(..)
            | Done::Plan(_)
            | Done::PullClosed(..)
            | Done::CiHealed(..)
            | Done::Retargeted(..)
            | Done::Unstarted(..)
            | Done::HostProbed(_)
            | Done::Interrupted(..)
            | Done::Stopped(..) => {}
        }
    }
    heads
}

/// The PRs whose review the round ended in changes requested or a hold: people may have
/// spoken on them since the tick read GitHub (the last look before a merge reads them again),
/// and an AutoFix the next round runs must be told what they said.
fn spoken(done: &[Done], review_prs: &BTreeMap<RunId, u64>) -> Vec<u64> {
    let mut prs: Vec<u64> = done
        .iter()
        .filter_map(|d| match d {
            Done::Review(_, run, JudgeResult { conclusion, .. }) => match conclusion {
                JudgeConclusion::RequestChanges { .. } | JudgeConclusion::Held { .. } => {
                    review_prs.get(run).copied()
                }
                JudgeConclusion::Merged { .. }
                | JudgeConclusion::Failed { .. }
                | JudgeConclusion::BaseMoved { .. }
                | JudgeConclusion::Conflict { .. }
                | JudgeConclusion::Updated { .. }
                | JudgeConclusion::Refused { .. }
                | JudgeConclusion::Approved { .. }
                | JudgeConclusion::ApprovedBeforeCi { .. }
                | JudgeConclusion::WindowOpen { .. } => None,
            },
            Done::Work(..)
            | Done::Issue(..)
            | Done::Plan(_)
            | Done::PullClosed(..)
            | Done::CiHealed(..)
            | Done::Retargeted(..)
            | Done::Unstarted(..)
            | Done::HostProbed(_)
            | Done::Interrupted(..)
            | Done::Stopped(..) => None,
        })
        .collect();
    prs.sort_unstable();
    prs.dedup();
    prs
}

/// Trusted people's reviews of `prs`, read again (conditionally) for the next round; `None`
/// when there is nothing to read. A failure to read leaves them to the next tick's observe.
fn read_people(
    ctx: &Context,
    client: &GithubClient,
    prs: &[u64],
) -> Result<Option<super::people::Fetched<crate::model::PullReview>>, Failure> {
    if prs.is_empty() {
        return Ok(None);
    }
    let store = ctx.read_store()?;
    match super::people::read_reviews(ctx, client, &store, prs) {
        Ok(fetched) => Ok(Some(fetched)),
        Err(e) => {
            tracing::warn!("could not read people's reviews for the next round: {e}");
            Ok(None)
        }
    }
}

/// How long to wait before asking GitHub again whether a just-pushed head merges.
const MERGEABLE_PAUSE: std::time::Duration = std::time::Duration::from_secs(2);

/// What CI says about each pushed head, as the judge's gate reads it (github mode, with
/// `merge.require_checks`). GitHub works out a new head's mergeability in the background: an
/// `unknown` answer is asked again once, shortly. A head that could not be read is left out
/// (the gate then waits for the next tick's observe, as it did before rounds).
fn read_pushed_checks(
    client: &GithubClient,
    heads: &[(u64, String)],
    now: Timestamp,
) -> Vec<(u64, String, Checks)> {
    let mut out = Vec::new();
    for (pr, head) in heads {
        let read = client.checks(*pr, head, now).and_then(|checks| {
            if checks.mergeable.as_deref() == Some("unknown") {
                std::thread::sleep(MERGEABLE_PAUSE);
                client.checks(*pr, head, now)
            } else {
                Ok(checks)
            }
        });
        match read {
            Ok(checks) => out.push((*pr, head.clone(), checks)),
            Err(e) => tracing::warn!("could not read CI on PR #{pr} for the next round: {e}"),
        }
    }
    out
}

/// Issue 49: whether the repository has CI, learned before the next round gates the heads
/// this one pushed (the first PR of a repository is looked at right after its push): the base
/// branch's rules and, while nothing names a check, its tip's checks and statuses, all
/// conditional. `None` when nothing was pushed; a failed read leaves it unknown, so the gate
/// waits for the next tick's observe instead of merging on a head's silence.
fn learn_for_round(
    ctx: &Context,
    client: &GithubClient,
    heads: &[(u64, String)],
    checks: &[(u64, String, Checks)],
) -> Result<Option<super::ci_gate::Learned>, Failure> {
    if heads.is_empty() {
        return Ok(None);
    }
    let store = ctx.read_store()?;
    match super::ci_gate::learn_expected_checks(ctx, client, &store, checks) {
        Ok(learned) => Ok(Some(learned)),
        Err(e) => {
            tracing::warn!("could not learn whether the repository has CI for the next round: {e}");
            Ok(None)
        }
    }
}

/// The round's counts into the tick's summary.
fn add_recorded(summary: &mut TickSummary, recorded: record::RecordedLines, per_day_usd: f64) {
    summary.lines.extend(recorded.lines);
    summary.stray += recorded.stray;
    if summary.claimed > 0 {
        summary.spend_today = Some((recorded.spent_today, per_day_usd));
    }
    summary.tasks_done += recorded.tasks_done;
    summary.merged += recorded.merged;
    summary.spend_usd += recorded.spend_usd;
    summary.failures.extend(recorded.failures);
    summary.rounds += 1;
}

/// `[round 2] its work may take 11 min of the 39 min left: ran 1, reviewed 1, merged 1` (a
/// detail line, shown with `-v`).
fn header(
    round: u32,
    done: &[Done],
    merged: usize,
    bound: Millis,
    left: Millis,
    deadline: Option<Timestamp>,
) -> String {
    let count = |f: fn(&Done) -> bool| done.iter().filter(|d| f(d)).count();
    let ran = count(|d| {
        matches!(
            d,
            Done::Work(..) | Done::Interrupted(..) | Done::Stopped(..)
        )
    });
    let reviewed = count(|d| matches!(d, Done::Review(..)));
    let planned = count(|d| matches!(d, Done::Plan(_)));
    let mut what = Vec::new();
    if ran > 0 {
        what.push(format!("ran {ran}"));
    }
    if reviewed > 0 {
        what.push(format!("reviewed {reviewed}"));
    }
    if merged > 0 {
        what.push(format!("merged {merged}"));
    }
    if planned > 0 {
        what.push("planned".to_string());
    }
    if what.is_empty() {
        what.push("followed up on PRs and issues".to_string());
    }
    let time = match deadline {
        Some(_) => format!(
            " its work may take {} of the {} left:",
            rounds::minutes(bound),
            // Whole minutes, rounded down: never more time than there is.
            rounds::minutes(left.max(0) / MINUTE * MINUTE)
        ),
        None => String::new(),
    };
    format!("[round {round}]{time} {}", what.join(", "))
}

/// Each round's header before its lines, once the tick had more than one round.
fn insert_headers(summary: &mut TickSummary, headers: Vec<(usize, String)>) {
    if headers.len() < 2 {
        return;
    }
    for (at, line) in headers.into_iter().rev() {
        let at = at.min(summary.lines.len());
        summary.lines.insert(at, line);
    }
}
