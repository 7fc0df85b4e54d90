//! Spend beyond one run's row (issue 37): a task family's total (a budget covers the task with
//! its reworks and AutoFixes), and the agent runs that are not task runs — a judge's review, a
//! planner's plan — with what they cost, what the proxy metered and refused, in `agent_spend`
//! and in the ledger (`budgets`: the day, the judged task, the role). Not for: metering (`egress`),
//! a task run's own row (`store::record`), or what a spent budget holds back (`engine::dispatch`).

use std::collections::BTreeMap;

use rusqlite::{params, Transaction};

use super::journal::Writer;
use super::{Store, StoreError};
use crate::model::network::{Metering, Refusal};
use crate::model::{RunId, TaskId};

/// Each task id and the family it belongs to.
type Families = BTreeMap<String, String>;

/// One agent run that is not a task run, and what it spent.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AgentSpend {
    /// `judge` or `planner`.
    pub role: String,
    /// The task reviewed (the judge), none for the planner.
    pub task_id: Option<TaskId>,
    /// The run reviewed, or the planner's run id.
    pub run_id: Option<RunId>,
    pub executor: Option<String>,
    /// The larger of the metered and the reported spend.
    pub cost_usd: f64,
    pub reported_cost_usd: f64,
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub metered: Option<Metering>,
    pub refused: Vec<Refusal>,
}

/// A judge's or planner's agent run as `task show` lists it.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct AgentSpendRow {
    pub at: crate::time::Timestamp,
    pub role: String,
    pub run_id: Option<String>,
    pub cost_usd: f64,
    pub reported_cost_usd: f64,
    pub metered: Option<Metering>,
    pub refused: Vec<Refusal>,
}

/// Adds `usd` and tokens to one entry of the ledger.
pub(super) fn add_to_ledger(
    tx: &Transaction<'_>,
    scope: &str,
    key: &str,
    usd: f64,
    (input, output): (i64, i64),
) -> Result<(), StoreError> {
    tx.execute(
        "INSERT INTO budgets (scope, key, spent_usd, input_tokens, output_tokens, runs) VALUES (?1, ?2, ?3, ?4, ?5, 1) \
         ON CONFLICT(scope, key) DO UPDATE SET spent_usd = spent_usd + excluded.spent_usd, \
         input_tokens = input_tokens + excluded.input_tokens, output_tokens = output_tokens + excluded.output_tokens, runs = runs + 1",
        params![scope, key, usd, input, output],
    )?;
    Ok(())
}

impl Store {
    /// Records a judge's or planner's agent run: its row, and its spend in the ledger (the day,
    /// the judged task — so a family's budget covers its reviews —, the role).
    pub fn record_agent_spend(
        &mut self,
        spend: &AgentSpend,
        writer: Writer<'_>,
    ) -> Result<(), StoreError> {
        let tx = self.conn.transaction()?;
        tx.execute(
            "INSERT INTO agent_spend (at, role, task_id, run_id, executor, cost_usd, reported_usd, metered, refused) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            params![
                writer.now.0,
                spend.role,
                spend.task_id.as_ref().map(TaskId::as_str),
                spend.run_id.as_ref().map(RunId::as_str),
                spend.executor,
                spend.cost_usd,
                spend.reported_cost_usd,
                spend.metered.as_ref().map(super::rows::to_json),
                super::rows::to_json(&spend.refused),
            ],
        )?;
        let tokens = (spend.input_tokens, spend.output_tokens);
        add_to_ledger(&tx, "day", &writer.now.day(), spend.cost_usd, tokens)?;
        add_to_ledger(&tx, "role", &spend.role, spend.cost_usd, tokens)?;
        if let Some(task) = &spend.task_id {
            add_to_ledger(&tx, "task", task.as_str(), spend.cost_usd, tokens)?;
        }
        tx.commit()?;
        Ok(())
    }

    /// What each agent role has spent, from the ledger.
    pub fn spend_by_role(&self) -> Result<BTreeMap<String, f64>, StoreError> {
        Ok(self
            .conn
            .prepare("SELECT key, spent_usd FROM budgets WHERE scope = 'role'")?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<Result<_, _>>()?)
    }

    /// The judge's reviews of a task, newest first (at most `limit`).
    pub fn agent_spend_of(
        &self,
        task: &TaskId,
        limit: u32,
    ) -> Result<Vec<AgentSpendRow>, StoreError> {
        let mut stmt = self.conn.prepare(
            "SELECT at, role, run_id, cost_usd, reported_usd, metered, refused FROM agent_spend \
             WHERE task_id = ?1 ORDER BY at DESC, id DESC LIMIT ?2",
        )?;
        let rows = stmt
            .query_map(params![task.as_str(), limit], |r| {
                let metered: Option<String> = r.get(5)?;
                let refused: String = r.get(6)?;
                Ok(AgentSpendRow {
                    at: crate::time::Timestamp(r.get(0)?),
                    role: r.get(1)?,
                    run_id: r.get(2)?,
                    cost_usd: r.get(3)?,
                    reported_cost_usd: r.get(4)?,
                    metered: metered.and_then(|m| serde_json::from_str(&m).ok()),
                    refused: serde_json::from_str(&refused).unwrap_or_default(),
                })
            })?
            .collect::<Result<_, _>>()?;
        Ok(rows)
    }

    /// Every host refused for `task`'s runs and reviews (issue 37), with how often.
    pub fn refusals_of(&self, task: &TaskId) -> Result<Vec<Refusal>, StoreError> {
        let mut all = Vec::new();
        for sql in [
            "SELECT refused FROM runs WHERE task_id = ?1 AND refused <> '[]'",
            "SELECT refused FROM agent_spend WHERE task_id = ?1 AND refused <> '[]'",
        ] {
            let lists: Vec<String> = self
                .conn
                .prepare(sql)?
                .query_map([task.as_str()], |r| r.get(0))?
                .collect::<Result<_, _>>()?;
            for list in lists {
                let refused: Vec<Refusal> = serde_json::from_str(&list).unwrap_or_default();
                crate::model::network::merge_refusals(&mut all, &refused);
            }
        }
        Ok(all)
    }

    /// Hosts refused in the latest `limit` runs and reviews that had any, by task, newest
    /// first.
    pub fn recent_refusals(&self, limit: u32) -> Result<Vec<(TaskId, Refusal)>, StoreError> {
        let rows: Vec<(String, String)> = self
            .conn
            .prepare(
                "SELECT task_id, refused FROM (
                     SELECT task_id, refused, started_at AS at FROM runs WHERE refused <> '[]'
                     UNION ALL
                     SELECT task_id, refused, at FROM agent_spend WHERE refused <> '[]'
                 ) WHERE task_id IS NOT NULL ORDER BY at DESC LIMIT ?1",
            )?
            .query_map([limit], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<Result<_, _>>()?;
        // Each task's refusals merged as one list: ten hosts and a count, whatever its runs tried.
        let mut by_task: Vec<(String, Vec<Refusal>)> = Vec::new();
        for (task, list) in rows {
            let refused: Vec<Refusal> = serde_json::from_str(&list).unwrap_or_default();
            let at = match by_task.iter().position(|(t, _)| *t == task) {
                Some(at) => at,
                None => {
                    by_task.push((task, Vec::new()));
                    by_task.len() - 1
                }
            };
            crate::model::network::merge_refusals(&mut by_task[at].1, &refused);
        }
        Ok(by_task
            .into_iter()
            .flat_map(|(task, all)| all.into_iter().map(move |r| (TaskId(task.clone()), r)))
            .collect())
    }

    /// Each task's family (issue 27: its oldest ancestor the state holds, or names) and each
    /// task's own spend over all its attempts and reviews.
    fn families_and_spend(&self) -> Result<(Families, BTreeMap<String, f64>), StoreError> {
        let parents: BTreeMap<String, Option<String>> = self
            .conn
            .prepare("SELECT id, parent_task_id FROM tasks")?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<Result<_, _>>()?;
        let spent: BTreeMap<String, f64> = self
            .conn
            .prepare("SELECT key, spent_usd FROM budgets WHERE scope = 'task'")?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<Result<_, _>>()?;
        let family = |id: &str| {
            let mut current = id.to_string();
            let mut seen = vec![current.clone()];
            while let Some(Some(parent)) = parents.get(&current) {
                if seen.contains(parent) {
                    break;
                }
                seen.push(parent.clone());
                current = parent.clone();
                if !parents.contains_key(&current) {
                    break;
                }
            }
            current
        };
        let families = parents
            .keys()
            .chain(spent.keys())
            .map(|id| (id.clone(), family(id)))
            .collect();
        Ok((families, spent))
    }

    /// What each task family has spent (issue 37: a budget covers the family), keyed by the
    /// family as `engine::fairness::family_of` names it, for the families that spent something.
    pub fn spend_by_family(&self) -> Result<BTreeMap<TaskId, f64>, StoreError> {
        let (families, spent) = self.families_and_spend()?;
        let mut by_family: BTreeMap<TaskId, f64> = BTreeMap::new();
        for (id, usd) in &spent {
            let family = families.get(id).map_or(id.as_str(), String::as_str);
            *by_family.entry(TaskId(family.to_string())).or_default() += usd;
        }
        by_family.retain(|_, usd| *usd > 0.0);
        Ok(by_family)
    }

    /// What `id`'s family has spent so far.
    pub fn family_spend(&self, id: &TaskId) -> Result<f64, StoreError> {
        let (families, spent) = self.families_and_spend()?;
        let family = families
            .get(id.as_str())
            .map_or(id.as_str(), String::as_str);
        Ok(spent
            .iter()
            .filter(|(k, _)| families.get(*k).map_or(k.as_str(), String::as_str) == family)
            .map(|(_, usd)| usd)
            .sum())
    }
}
