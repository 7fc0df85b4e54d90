//! What a run or the repository spent and was refused, as `status` and `task show` show it:
//! spend against the budgets (DESIGN §9; by role, issue 37) and refused hosts with the line
//! that allows each (issue 37). Rendering only.
//! Not for: metering and pricing tokens (`egress::meter`, `egress::pricing`), the spend ledger
//! (`store::spend`, `store::record`), or holding work back on a spent budget (`engine::dispatch`).

use std::collections::BTreeMap;

use serde::Serialize;

/// Spend against the budgets (DESIGN §9), in USD.
#[derive(Clone, Debug, Default, Serialize)]
pub struct SpendView {
    pub today_usd: f64,
    pub per_day_usd: f64,
    pub per_task_usd: f64,
    pub per_tick_usd: Option<f64>,
    /// What each agent role has spent, all time kept (issue 37: the judge's and the planner's
    /// agent runs count too).
    #[serde(default)]
    pub by_role: BTreeMap<String, f64>,
}

impl SpendView {
    /// One line for reports: `$1.20 today of $50.00 per day (per task $5.00)`.
    pub fn line(&self) -> String {
        let per_day = if self.per_day_usd > 0.0 {
            format!("${:.2} per day", self.per_day_usd)
        } else {
            "no daily budget".to_string()
        };
        let mut text = format!("${:.2} today of {per_day}", self.today_usd);
        if self.per_task_usd > 0.0 {
            text.push_str(&format!(", ${:.2} per task", self.per_task_usd));
        }
        if let Some(t) = self.per_tick_usd {
            text.push_str(&format!(", ${t:.2} per tick"));
        }
        if self.per_day_usd > 0.0 && self.today_usd >= self.per_day_usd {
            text.push_str(" — daily budget spent: no run starts before midnight UTC");
        }
        let roles: Vec<String> = self
            .by_role
            .iter()
            .filter(|(_, usd)| **usd > 0.0)
            .map(|(role, usd)| format!("{role} ${usd:.2}"))
            .collect();
        if !roles.is_empty() {
            text.push_str(&format!("; by role: {}", roles.join(", ")));
        }
        text
    }
}

/// A refused host as `status --json` and `task show --json` show it; past the first ten hosts
/// of a list, the count of refusals of other hosts (`host` `*`, no `allow`).
#[derive(Clone, Debug, Serialize)]
pub struct RefusalView {
    pub host: String,
    pub port: u16,
    pub by: String,
    pub times: u32,
    /// The configuration line that would allow it.
    pub allow: Option<String>,
    /// The agent CLI whose own traffic it is (nothing to allow), if it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub own: Option<String>,
}

impl RefusalView {
    pub fn of(r: &crate::model::network::Refusal) -> RefusalView {
        RefusalView {
            host: if r.is_others() {
                r.host.clone()
            } else {
                crate::model::network::host_name(&r.host)
            },
            port: r.port,
            by: r.by.clone(),
            times: r.times,
            allow: r.allow_line(),
            own: r.own.clone(),
        }
    }
}
