//! The planner (spec §2.1): from a requirement document to a validated graph of tasks.
//! `requirement` reads the markdown document, `plan` parses and validates the planner agent's
//! task list (or makes the deterministic fallback plan) and builds the tasks, `area` derives
//! target areas and the hot-file dependencies between tasks that would edit the same files.
//! Pure. Not for: running the planner agent (`runner::planner`), deciding when to plan again
//! (`engine::planner_gate`) or storing the plan and its tasks (`store::plans`).

pub mod area;
pub mod plan;
pub mod requirement;

pub use area::{add_hot_file_dependencies, paths_overlap, target_area};
pub use plan::{
    fallback_plan, parse_plan, task_id, validate_plan, PlanContext, PlannedTask, ValidPlan,
};
pub use requirement::{content_hash, parse_requirement, Requirement, RiskRow};
