//! doctor's tick-time check (issue 51): whether a review can follow its run in the same tick.
//! A tick goes on to the review only when the review's bound (the judge's timeout plus the
//! verification allowance) fits in what the run left of `limits.tick_minutes`; a bound as long
//! as the tick itself never fits (half-hour agents and two checks of ten minutes: 50 of 50),
//! and every change then waits a tick for its review. The bounds are the engine's
//! (`engine::rounds`), so what doctor says is what a tick does.
//!
//! Not for: deciding what a tick starts (`engine::rounds`), or the agents themselves
//! (`doctor::agents`).

use super::Check;
use crate::config::{AgentRole, Config};
use crate::engine::rounds::{commands_at_most, minutes, review_bound};
use crate::model::{Task, TaskId};
use crate::time::{Timestamp, MINUTE, SECOND};

const NAME: &str = "tick time";

/// The time a fix leaves a run before its review, in the same tick.
const ROOM_FOR_A_RUN: i64 = 10 * MINUTE;

/// `ci_gates`: the review of a run waits for CI anyway (github mode with CI workflows), so it
/// is a later tick's work whatever the time.
pub(super) fn tick_time(config: &Config, ci_gates: bool) -> Option<Check> {
    let tick = i64::from(config.limits.tick_minutes) * MINUTE;
    if tick == 0 {
        return None;
    }
    let task = Task::new(TaskId::from("doctor"), "", "", Timestamp(0));
    let review = review_bound(&task, config, true);
    if ci_gates {
        return Some(Check::ok(
            NAME,
            format!(
                "a review may take {}; it waits for CI, so it is a later tick's",
                minutes(review)
            ),
        ));
    }
    if review < tick {
        return Some(Check::ok(
            NAME,
            format!(
                "a review (up to {}) follows its run in the same tick when the run ends within {} (limits.tick_minutes: {})",
                minutes(review),
                minutes(tick - review),
                config.limits.tick_minutes
            ),
        ));
    }
    let judge_key = config
        .agents
        .written_at(AgentRole::Judge, |a| a.timeout_minutes.is_some());
    let judge_minutes = config.agents.effective(AgentRole::Judge).timeout_minutes;
    let checks = commands_at_most(&task, config);
    let each = config.verify.timeout_seconds;
    let allowance = if checks == 0 {
        String::new()
    } else {
        format!(" + {checks} verification command(s) × verify.timeout_seconds {each} s")
    };
    let detail = format!(
        "a review may take {} ({judge_key}.timeout_minutes {judge_minutes}{allowance}), not less than limits.tick_minutes ({}): it never follows its run in the same tick, so every change waits for the next tick to be reviewed and merged",
        minutes(review),
        config.limits.tick_minutes,
    );
    let mut fixes = Vec::new();
    // The longest each check may run for a review to fit after a ten-minute run, in whole
    // tens of seconds.
    let judge_ms = review - i64::from(checks) * i64::from(each) * SECOND;
    let room = tick - ROOM_FOR_A_RUN - judge_ms;
    if checks > 0 && room > 0 {
        let seconds = room / i64::from(checks) / SECOND / 10 * 10;
        if seconds >= 60 {
            fixes.push(format!(
                "under `verify:` in .opentiger.yml, set `timeout_seconds: {seconds}`"
            ));
        }
    }
    let needed = (review + ROOM_FOR_A_RUN + MINUTE - 1) / MINUTE;
    fixes.push(format!(
        "under `limits:`, set `tick_minutes: {needed}` (keep it below limits.lease_minutes, and in Actions below the job's timeout-minutes)"
    ));
    fixes.push(format!("lower `timeout_minutes` under `{judge_key}:`"));
    Some(Check::warn(NAME, detail, fixes.join("; or ")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::Level;

    fn config(yaml: &str) -> Config {
        crate::config::load_str(yaml, ".opentiger.yml").unwrap()
    }

    /// The case of issue 51: half-hour agents and two checks of ten minutes never review in
    /// the tick that ran; the fixes name the settings, with values that fit.
    #[test]
    fn a_review_that_cannot_follow_its_run_in_the_tick_is_named() {
        let two_checks = config(
            "mode: local-git\nagents:\n  default:\n    executor: command\n    command: [x]\n    timeout_minutes: 30\nverify:\n  commands: [\"npm install\", \"npm test\"]\n",
        );
        let check = tick_time(&two_checks, false).unwrap();
        assert_eq!(check.level, Level::Warn, "{}", check.detail);
        assert!(
            check.detail.starts_with("a review may take 50 min (agents.default.timeout_minutes 30 + 2 verification command(s) × verify.timeout_seconds 600 s), not less than limits.tick_minutes (50): it never follows its run"),
            "{}",
            check.detail
        );
        let fix = check.fix.unwrap();
        assert!(
            fix.starts_with("under `verify:` in .opentiger.yml, set `timeout_seconds: 300`; or under `limits:`, set `tick_minutes: 60`"),
            "{fix}"
        );
        assert!(
            fix.ends_with("or lower `timeout_minutes` under `agents.default:`"),
            "{fix}"
        );
        // The judge's own timeout is named where it is written.
        let judge = config(
            "mode: local-git\nagents:\n  judge:\n    timeout_minutes: 45\nverify:\n  commands: [\"npm test\"]\n",
        );
        let check = tick_time(&judge, false).unwrap();
        assert!(
            check
                .detail
                .contains("(agents.judge.timeout_minutes 45 + 1 verification"),
            "{}",
            check.detail
        );
        // One check fits (after a run of up to 10 min); CI gating or no rounds: nothing wrong.
        let one = config("mode: local-git\nverify:\n  commands: [\"npm test\"]\n");
        let ok = tick_time(&one, false).unwrap();
        assert_eq!(ok.level, Level::Ok);
        assert!(
            ok.detail.contains("when the run ends within 10 min"),
            "{}",
            ok.detail
        );
        assert_eq!(tick_time(&two_checks, true).unwrap().level, Level::Ok);
        let off = config("mode: local-git\nlimits:\n  tick_minutes: 0\n");
        assert_eq!(tick_time(&off, false), None);
    }
}
