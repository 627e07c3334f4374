//! What a run's hosts ran, call by call, as their journal keeps it: the
//! arguments each call ran with, and its outcome — a call the plan
//! answered without running (a denial) among them — for a run's page.

use serde_json::Value;
use toolgate::ToolOutput;
use toolgate::gate::Effect;
use toolgate::journal::{Action, CallRecord};

use crate::db::Query;
use crate::{Store, StoreError};

/// One call of a turn a host planned, and what became of it.
#[derive(Debug, Clone, PartialEq)]
pub struct RanCall {
    /// The model turn it was part of.
    pub turn: u32,
    /// The call's id.
    pub call_id: String,
    /// Its tool.
    pub tool: String,
    /// The arguments as the model wrote them.
    pub asked: Value,
    /// What the plan did with it.
    pub outcome: RanOutcome,
}

/// What became of one planned call.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum RanOutcome {
    /// It did not run: the plan answered it with this result (a denial,
    /// say, with the reason the model read).
    Answered(ToolOutput),
    /// It ran, or was to run, with these arguments (the model's, an
    /// operator's edit, or with a user's input laid over them), and this is
    /// what the journal knows of it.
    Ran {
        /// The arguments it ran with.
        arguments: Value,
        /// Its effect when the turn was planned (every remote tool counts
        /// as `non_idempotent_write`).
        effect: Effect,
        /// What the journal knows: not started, started and never ended,
        /// ended with its result, or an operator's choice.
        record: CallRecord,
    },
}

/// # What hosts ran
impl Store {
    /// Every call of every turn the hosts of run `run_id` planned, oldest
    /// first: the arguments each ran with and its outcome, from the journal
    /// — verified under this store's key when it has one.
    pub async fn ran_calls(&self, run_id: &str) -> Result<Vec<RanCall>, StoreError> {
        let rows = Query::new(
            "SELECT p.id, p.suspension_id, p.turn, p.plan, p.mac
             FROM turn_plan p JOIN suspended_run s ON s.id = p.suspension_id
             WHERE s.run_id = $1 ORDER BY p.suspension_id, p.turn",
        )
        .bind(run_id)
        .fetch_all(&self.pool)
        .await?;
        let mut calls = Vec::new();
        for row in rows {
            let plan_id: i64 = row.try_get("id")?;
            let suspension_id: i64 = row.try_get("suspension_id")?;
            let plan = self.read_plan(
                suspension_id,
                row.try_get("turn")?,
                &row.try_get::<String, _>("plan")?,
                row.try_get("mac")?,
            )?;
            let known = self.known_calls(suspension_id, &plan, plan_id).await?;
            for (step, record) in plan.steps().iter().zip(known) {
                let outcome = match step.action() {
                    Action::Answer { output } => RanOutcome::Answered(output.clone()),
                    Action::Execute { arguments, effect } => RanOutcome::Ran {
                        arguments: arguments.clone(),
                        effect: *effect,
                        record,
                    },
                };
                calls.push(RanCall {
                    turn: plan.turn(),
                    call_id: step.call().id.clone(),
                    tool: step.call().name.clone(),
                    asked: step.call().arguments.clone(),
                    outcome,
                });
            }
        }
        Ok(calls)
    }

    /// The model's final answer, when a resumed run finished with one.
    pub async fn final_answer(&self, run_id: &str) -> Result<Option<String>, StoreError> {
        let answer: Option<Option<String>> = Query::new(
            "SELECT final_answer FROM suspended_run
             WHERE run_id = $1 AND final_answer IS NOT NULL ORDER BY id DESC LIMIT 1",
        )
        .bind(run_id)
        .scalar_optional(&self.pool)
        .await?;
        Ok(answer.flatten())
    }
}
