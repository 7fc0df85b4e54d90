//! `limits:` — how much one tick and one task may do: runs and minutes per tick (the tick's
//! rounds), leases, and the bounds of every follow-up (rework, AutoFix, conflict fixes,
//! recreation) and lane; and what one run may use of the machine (`limits.run`, an agent's
//! own `limits`). Types and defaults only. Not for: the rules that read them — claims,
//! leases and lanes (`engine::dispatch`), rounds (`engine::rounds`), rework depth
//! (`engine::recovery`), AutoFix, merge and conflict attempts (`engine::verdict`), and the
//! enforcement of a run's limits (`sandbox::limits`).

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
    /// What one agent run, and each verification command, may use of the machine (an
    /// agent's own `agents.<name>.limits` win for it).
    pub run: RunLimits,
}

/// What one agent run or verification command may use; 0: no limit. Where the runner's
/// cgroup is delegated to it, memory and processes are the run's whole (a cgroup), else each
/// process's (rlimits). A run that reaches one fails naming it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct RunLimits {
    /// MiB of memory. Default 4096: an agent CLI peaks at a few hundred MiB (node, bun,
    /// python), and a `cargo test` or `npm test` it starts wants one to three GiB; a 16 GiB
    /// runner keeps room for the tick and git.
    pub memory_mb: u32,
    /// Processes and threads at once. Default 1024: a CLI runs a dozen threads, a build
    /// one compiler per core with a few dozen threads each; a fork bomb stops here.
    pub processes: u32,
    /// MiB of the largest file it may write, anywhere. Default 4096: above any source file,
    /// build artefact or test database a task makes, under a hosted runner's free disk.
    pub file_mb: u32,
    /// MiB of its temp folder (`TMPDIR`, `/tmp` in its view: memory-backed, counted in
    /// `memory_mb` under a cgroup). Default 1024: compilers and test runners keep scratch
    /// files of a few MiB to a few hundred there. Without a view it is the run's scratch
    /// folder on disk, bounded by `file_mb` per file only.
    pub tmp_mb: u32,
}

impl Default for RunLimits {
    fn default() -> Self {
        RunLimits {
            memory_mb: 4096,
            processes: 1024,
            file_mb: 4096,
            tmp_mb: 1024,
        }
    }
}

/// An agent's own limits (`agents.<name>.limits`), over `limits.run`: each key unset
/// inherits (from `agents.default`, then `limits.run`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct AgentLimits {
    /// MiB of memory (`limits.run.memory_mb`).
    pub memory_mb: Option<u32>,
    /// Processes and threads at once (`limits.run.processes`).
    pub processes: Option<u32>,
    /// MiB of the largest file (`limits.run.file_mb`).
    pub file_mb: Option<u32>,
    /// MiB of the temp folder (`limits.run.tmp_mb`).
    pub tmp_mb: Option<u32>,
}

impl AgentLimits {
    /// Each key of `self`, else of `under`.
    pub fn over(&self, under: &AgentLimits) -> AgentLimits {
        AgentLimits {
            memory_mb: self.memory_mb.or(under.memory_mb),
            processes: self.processes.or(under.processes),
            file_mb: self.file_mb.or(under.file_mb),
            tmp_mb: self.tmp_mb.or(under.tmp_mb),
        }
    }
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
            run: RunLimits::default(),
        }
    }
}
