//! `limits:` — how much one tick and one task may do: runs and minutes per tick (the tick's
//! rounds), leases, and the bounds of every follow-up (rework, AutoFix, conflict fixes,
//! recreation) and lane. Types and defaults only. Not for: the rules that read them — claims,
//! leases and lanes (`engine::dispatch`), rounds (`engine::rounds`), rework depth
//! (`engine::recovery`), AutoFix, merge and conflict attempts (`engine::verdict`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct LimitsConfig {
    /// Runs one tick starts at most, over all its rounds (a run is one agent's work on one
    /// task; reviews and merges are not runs). Default 3: a chain of three dependent tasks lands
    /// in one job, and one job never works on more than three tasks before a person can see
    /// its report. The tick's time (`tick_minutes`) and the budgets bound it too.
    pub max_runs_per_tick: u32,
    /// Minutes a tick may take: after each round it plans again and goes on while a next step
    /// needs nothing from outside, but starts no round whose work could not end within this
    /// time of the tick's start (an agent's `timeout_minutes` plus `verify.timeout_seconds` for
    /// each verification command). Default 50: under the example workflow's `timeout-minutes:
    /// 60`, which also covers the job's set-up before the tick and the save and report after.
    /// 0: no rounds — every tick does one step, whatever it takes.
    pub tick_minutes: u32,
    /// How long a claim holds before another tick may reclaim the task.
    pub lease_minutes: u32,
    /// Rework children chained from one task before a person decides.
    pub max_rework_depth: u32,
    /// AutoFix children per task before a person decides.
    pub max_autofix_attempts: u32,
    /// Merge attempts per approved PR before conflict recovery.
    pub merge_attempts: u32,
    /// Conflict-fix children (`autofix_conflict`: merge the base into the branch and resolve)
    /// per change before it is recreated from the base.
    pub max_conflict_autofix_attempts: u32,
    /// Times a change whose conflicts could not be fixed is implemented again from the base
    /// (`recreate`: its PR closed, a new task with the same goal) before a person decides.
    pub max_recreate_attempts: u32,
    /// Conflict-recovery lane slots.
    pub conflict_lane_max: u32,
    /// Docs lane slots.
    pub docser_lane_max: u32,
    /// Feature-lane slots filled before other lanes.
    pub feature_lane_min: u32,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        LimitsConfig {
            max_runs_per_tick: 3,
            tick_minutes: 50,
            lease_minutes: 90,
            max_rework_depth: 2,
            max_autofix_attempts: 3,
            merge_attempts: 3,
            max_conflict_autofix_attempts: 2,
            max_recreate_attempts: 1,
            conflict_lane_max: 2,
            docser_lane_max: 1,
            feature_lane_min: 1,
        }
    }
}
