//! The judge's standing approvals (issue 38): an approval recorded inside the review window is
//! kept, bound to the head it judged, until the merge after the window — which then reviews
//! nothing again. Read for the plan (which runs are approved) and for the merge (the verdict).
//!
//! Not for: writing verdicts (`record.rs` does, with the run's outcome).

use std::collections::BTreeSet;

use rusqlite::{params, OptionalExtension};

use super::{JudgementRow, Store, StoreError};
use crate::model::{RunId, Verdict};

impl Store {
    /// Runs of tasks awaiting the judge whose newest verdict on their current head is an
    /// approval. A new head (a push) is judged afresh: an approval binds to its head only.
    pub fn approved_runs(&self) -> Result<BTreeSet<RunId>, StoreError> {
        let mut stmt = self.conn.prepare(
            "SELECT r.id FROM tasks t JOIN runs r ON r.task_id = t.id
             WHERE t.status = 'blocked' AND t.block_reason = 'awaiting_judge'
               AND r.status = 'success' AND r.head_sha IS NOT NULL
               AND (SELECT j.verdict FROM judgements j
                    WHERE j.run_id = r.id AND j.head_sha = r.head_sha AND j.invalidated_at IS NULL
                    ORDER BY j.id DESC LIMIT 1) = ?1",
        )?;
        let ids = stmt
            .query_map([Verdict::Approve.as_str()], |r| r.get::<_, String>(0))?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ids.into_iter().map(RunId).collect())
    }

    /// The judge's newest verdict on `run` at `head`, when it is an approval.
    pub fn approval(&self, run: &RunId, head: &str) -> Result<Option<JudgementRow>, StoreError> {
        let row: Option<(String, String, String, String)> = self
            .conn
            .query_row(
                "SELECT verdict, summary, findings, criteria FROM judgements
                 WHERE run_id = ?1 AND head_sha = ?2 AND invalidated_at IS NULL
                 ORDER BY id DESC LIMIT 1",
                params![run.as_str(), head],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )
            .optional()?;
        let Some((verdict, summary, findings, criteria)) = row else {
            return Ok(None);
        };
        let verdict: Verdict = verdict
            .parse()
            .map_err(|e| StoreError::Invalid(format!("judgement of run {run}: {e}")))?;
        if verdict != Verdict::Approve {
            return Ok(None);
        }
        Ok(Some(JudgementRow {
            head_sha: head.to_string(),
            verdict,
            summary,
            findings: serde_json::from_str(&findings).unwrap_or_default(),
            criteria: serde_json::from_str(&criteria).unwrap_or_default(),
        }))
    }
}
