//! The network of a run's agent or checks (issue 37): the door opened on opentiger's proxy
//! (`egress`), what the program is told (the proxy, its model API's base URL, placeholder
//! keys), what watches it while it runs ([`Watchdog`]: a quota answer, a refused model call, an
//! agent idle too long), and what it all comes to after the run.
//!
//! Not here: the proxy (`egress`), the namespace (`sandbox::netns`), what a failure means for
//! the task (`engine::outcome`).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use crate::config::{AgentRole, Config, EffectiveAgent, NetworkUser};
use crate::egress::{self, Door, SessionSpec, Traffic};
use crate::model::FailureCode;
use crate::sandbox::{netns, NetIsolation};

/// An agent's network for one run.
pub(super) struct AgentNet {
    door: Door,
    watchdog: Arc<Watchdog>,
}

/// What the network of a run came to.
pub(super) struct NetOutcome {
    pub traffic: Traffic,
    /// Why the run was ended from outside its own output, if it was: its failure code and
    /// message.
    pub stop: Option<(FailureCode, String)>,
}

impl AgentNet {
    /// Opens the agent's door: its model APIs (its provider's; without one, the keys of its CLI
    /// and the model keys it lists in `env_passthrough` that the runner holds), its role's allow
    /// list, its CLI's own traffic, `budget`; the door's variables go into `env`. `workspace` is
    /// watched for changes while the agent is quiet.
    pub fn open(
        config: &Config,
        agent: &EffectiveAgent,
        role: AgentRole,
        budget: Option<egress::Budget>,
        workspace: &Path,
        env: &mut Vec<(String, String)>,
    ) -> Result<AgentNet, String> {
        let cli = crate::executor::known_cli(agent.executor);
        let (routes, prices) = routes(config, agent, cli)?;
        let own_traffic = egress::OwnTraffic {
            cli: agent.executor.as_str().to_string(),
            hosts: cli
                .map(|c| c.background)
                .unwrap_or_default()
                .iter()
                .filter_map(|h| crate::config::HostRule::parse(h).ok())
                .collect(),
        };
        let spec = SessionSpec {
            user: NetworkUser::Agent(role),
            allow: config.sandbox.network.allow.rules(NetworkUser::Agent(role)),
            routes,
            prices,
            budget,
            resolve: egress::upstream::overrides().clone(),
            provider_tools: config.sandbox.network.provider_tools.clone(),
            secrets: secrets(config),
            own_traffic,
        };
        let door = open_door(config, spec)?;
        for (k, v) in door.env() {
            super::set_var(env, k, v);
        }
        let watchdog = Arc::new(Watchdog {
            session: door.session().clone(),
            idle: agent.idle().map(|limit| (limit, workspace.to_path_buf())),
            role,
            state: Mutex::new(WatchState::default()),
        });
        Ok(AgentNet { door, watchdog })
    }

    /// The port Landlock must let the agent connect to (the fallback isolation only).
    pub fn landlock_port(&self) -> Option<u16> {
        self.door.landlock_port()
    }

    pub fn netns(&self) -> Option<netns::Door> {
        self.door.netns()
    }

    pub fn sentinel(&self) -> Option<Arc<dyn crate::process::Sentinel>> {
        Some(self.watchdog.clone())
    }

    /// After the run: what the proxy saw, and the failure a quota answer, a spent budget or an
    /// idle agent makes of the run, whatever the agent reported.
    pub fn close(self) -> NetOutcome {
        let traffic = self.door.close();
        let idle = self
            .watchdog
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .idle
            .clone();
        let stop = if let Some(hit) = &traffic.quota {
            Some((FailureCode::QuotaFailure, hit.message()))
        } else if let Some(words) = &traffic.budget_refused {
            Some((
                FailureCode::BudgetExceeded,
                format!("budget_exceeded: {words}"),
            ))
        } else {
            idle.map(|message| (FailureCode::AgentStalled, message))
        };
        NetOutcome { traffic, stop }
    }
}

/// The door of a task's verification commands: `sandbox.network.allow.checks` (and `all`), no
/// model API, no budget.
pub(super) fn checks_door(config: &Config) -> Result<Door, String> {
    let spec = SessionSpec {
        user: NetworkUser::Checks,
        allow: config.sandbox.network.allow.rules(NetworkUser::Checks),
        routes: Vec::new(),
        prices: egress::pricing::Prices::default(),
        budget: None,
        resolve: egress::upstream::overrides().clone(),
        provider_tools: config.sandbox.network.provider_tools.clone(),
        secrets: secrets(config),
        own_traffic: egress::OwnTraffic::default(),
    };
    open_door(config, spec)
}

/// The door of the host probe (issue 52): a worker's, with nothing on its allow list and no
/// model API — the probe needs no network, and gets none.
pub(super) fn closed_door(config: &Config) -> Result<Door, String> {
    let spec = SessionSpec {
        user: NetworkUser::Agent(AgentRole::Task(crate::model::Role::Worker)),
        allow: Vec::new(),
        routes: Vec::new(),
        prices: egress::pricing::Prices::default(),
        budget: None,
        resolve: egress::upstream::overrides().clone(),
        provider_tools: Vec::new(),
        secrets: secrets(config),
        own_traffic: egress::OwnTraffic::default(),
    };
    open_door(config, spec)
}

/// The model APIs of `agent`'s door and what their tokens cost: its provider's (issue 50),
/// or, without one, the built-in ones whose keys its CLI reads or it lists and the runner
/// holds.
fn routes(
    config: &Config,
    agent: &EffectiveAgent,
    cli: Option<&crate::executor::Cli>,
) -> Result<(Vec<egress::Route>, egress::pricing::Prices), String> {
    let prices = egress::pricing::Prices::new(&config.pricing);
    let lookup = |k: &str| std::env::var(k).ok();
    match &agent.provider {
        Some(p) if !p.built_in => {
            let Some(entry) = config.providers.get(&p.name) else {
                return Err(format!(
                    "{}.provider: no provider `{}`",
                    agent.config_key, p.name
                ));
            };
            let provider = std::sync::Arc::new(egress::Provider::configured(&p.name, entry)?);
            let prices = prices.with_provider(&entry.prices);
            Ok((vec![egress::configured_route(provider, lookup)], prices))
        }
        Some(p) => {
            let vars: Vec<&str> = p.keys.iter().map(String::as_str).collect();
            Ok((egress::routes(&vars, lookup), prices))
        }
        None => {
            let mut vars: Vec<&str> = cli.map(|c| c.keys.to_vec()).unwrap_or_default();
            for name in &agent.env_passthrough {
                if egress::is_model_key(name) && !vars.contains(&name.as_str()) {
                    vars.push(name);
                }
            }
            Ok((egress::routes(&vars, lookup), prices))
        }
    }
}

/// What no answer through a door may carry back (issue 46): every model key and forge token the
/// runner holds, whichever role the door is for — the built-in providers' and each configured
/// provider's (issue 50).
fn secrets(config: &Config) -> egress::Secrets {
    let names = egress::model_keys(config);
    let held = crate::redact::Redactor::from_env(&names, crate::credentials::lookup);
    egress::Secrets::new(held.values().iter().cloned())
}

fn open_door(config: &Config, spec: SessionSpec) -> Result<Door, String> {
    let isolation = crate::sandbox::network_isolation(&config.sandbox)?;
    if !matches!(isolation, NetIsolation::Namespace) {
        // Once per process: the tick's output says what is left open.
        static SAID: std::sync::Once = std::sync::Once::new();
        SAID.call_once(|| tracing::warn!("network isolation: {}", isolation.describe()));
    }
    Door::open(spec, isolation)
}

/// What a run's agent may spend before the proxy refuses its next model call: what its
/// family's budget leaves (`family_spent` so far, against `task_budget` when a person set one,
/// else `budget.per_task_usd`). `None` when the budget is off (0). The day's budget is held at
/// dispatch, between runs.
pub(super) fn run_budget(
    config: &Config,
    task: &crate::model::Task,
    family_spent: f64,
    task_budget: Option<f64>,
) -> Option<egress::Budget> {
    let (limit, source) = match task_budget {
        Some(usd) => (usd, "the budget set for this task"),
        None => (config.budget.per_task_usd, "budget.per_task_usd"),
    };
    (limit > 0.0).then(|| egress::Budget {
        remaining_usd: limit - family_spent,
        what: format!(
            "{source} ${limit:.2} for task {}'s family, ${family_spent:.2} spent before this run",
            task.id
        ),
    })
}

/// Applies what the network saw to a run's record: refusals, the metered figure, and the
/// spend that counts — the larger of the metered and the CLI-reported one (both kept).
pub(super) fn account(
    record: &mut crate::store::RunRecord,
    traffic: &Traffic,
    reported_usd: f64,
    reported_tokens: (i64, i64),
) {
    crate::model::network::merge_refusals(&mut record.refused, &traffic.refused);
    record.reported_cost_usd = reported_usd;
    let metered = &traffic.metering;
    record.cost_usd = reported_usd.max(metered.usd);
    let total = metered.total();
    let clamp = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    record.input_tokens = reported_tokens.0.max(clamp(total.input));
    record.output_tokens = reported_tokens.1.max(clamp(total.output));
    record.metered = (!metered.is_empty()).then(|| metered.clone());
}

/// What the agent CLI reported it spent (USD, input and output tokens), if the run got as far
/// as its report.
pub(super) fn reported(
    ran: &Result<crate::executor::AgentResult, crate::executor::ExecutorError>,
) -> (f64, (i64, i64)) {
    ran.as_ref().map_or((0.0, (0, 0)), |r| {
        (r.cost_usd, (r.input_tokens, r.output_tokens))
    })
}

/// [`account`] for a judge's or planner's agent run.
pub(super) fn account_agent(
    spend: &mut crate::store::AgentSpend,
    traffic: &Traffic,
    ran: &Result<crate::executor::AgentResult, crate::executor::ExecutorError>,
) {
    let mut record = crate::store::RunRecord {
        refused: std::mem::take(&mut spend.refused),
        ..Default::default()
    };
    let (usd, tokens) = reported(ran);
    account(&mut record, traffic, usd, tokens);
    spend.cost_usd += record.cost_usd;
    spend.reported_cost_usd += record.reported_cost_usd;
    spend.input_tokens += record.input_tokens;
    spend.output_tokens += record.output_tokens;
    spend.refused = record.refused;
    if let Some(m) = record.metered {
        spend.metered.get_or_insert_with(Default::default).add(&m);
    }
}

/// Watches a running agent from outside its output: its door's quota answers and refused model
/// calls, and its idleness (no output, no file change in its workspace, no model traffic).
#[derive(Debug)]
pub(super) struct Watchdog {
    session: Arc<egress::Session>,
    idle: Option<(Duration, PathBuf)>,
    role: AgentRole,
    state: Mutex<WatchState>,
}

#[derive(Debug, Default)]
struct WatchState {
    /// When the workspace was last scanned.
    scanned: Option<Instant>,
    /// Why it was ended for being idle.
    idle: Option<String>,
}

/// How often an agent that looks idle has its workspace scanned for changes.
const SCAN_EVERY: Duration = Duration::from_secs(5);
/// The most entries one scan looks at (a huge workspace is taken as changing).
const SCAN_LIMIT: usize = 200_000;

impl crate::process::Sentinel for Watchdog {
    fn check(&self, seen: &crate::process::Seen) -> Option<String> {
        let quiet = seen.quiet;
        if let Some(reason) = self.session.stop_reason() {
            return Some(reason);
        }
        let (limit, workspace) = self.idle.as_ref()?;
        if quiet < *limit || self.session.quiet() < *limit {
            return None;
        }
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if state.scanned.is_some_and(|at| at.elapsed() < SCAN_EVERY) {
            return None;
        }
        state.scanned = Some(Instant::now());
        let since = SystemTime::now().checked_sub(*limit)?;
        if changed_since(workspace, since) {
            return None;
        }
        let minutes = limit.as_secs_f64() / 60.0;
        let reason = format!(
            "the agent was idle for {minutes} minute(s): no output, no file change in its workspace and no model traffic (agents.{}.idle_minutes); it was ended as stalled",
            self.role.name()
        );
        state.idle = Some(reason.clone());
        Some(reason)
    }
}

/// Whether anything under `dir` was modified after `since` (or the scan could not tell).
fn changed_since(dir: &Path, since: SystemTime) -> bool {
    let mut stack = vec![dir.to_path_buf()];
    let mut seen = 0usize;
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > SCAN_LIMIT {
                return true;
            }
            let Ok(meta) = entry.metadata() else {
                continue;
            };
            if meta.modified().is_ok_and(|m| m > since) {
                return true;
            }
            if meta.is_dir() {
                stack.push(entry.path());
            }
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::testkit::task;

    #[test]
    fn a_run_s_budget_is_what_its_family_leaves() {
        let mut config = Config::default();
        config.budget.per_task_usd = 0.5;
        let t = task("a");
        let b = run_budget(&config, &t, 0.42, None).unwrap();
        assert!((b.remaining_usd - 0.08).abs() < 1e-9, "{b:?}");
        assert!(
            b.what.contains("budget.per_task_usd $0.50") && b.what.contains("$0.42 spent"),
            "{}",
            b.what
        );
        let b = run_budget(&config, &t, 3.0, Some(4.0)).unwrap();
        assert!((b.remaining_usd - 1.0).abs() < 1e-9 && b.what.contains("set for this task"));
        config.budget.per_task_usd = 0.0;
        assert_eq!(run_budget(&config, &t, 3.0, None), None);
    }

    #[test]
    fn the_metered_figure_counts_when_it_is_larger() {
        let mut record = crate::store::RunRecord::default();
        let mut traffic = Traffic::default();
        traffic.metering.models.insert(
            "gpt-5".into(),
            crate::model::network::Tokens {
                input: 1000,
                cached_input: 0,
                output: 10,
                answers: 1,
            },
        );
        traffic.metering.usd = 0.42;
        account(&mut record, &traffic, 0.0, (12, 1));
        assert_eq!((record.cost_usd, record.reported_cost_usd), (0.42, 0.0));
        assert_eq!((record.input_tokens, record.output_tokens), (1000, 10));
        account(&mut record, &traffic, 0.5, (0, 0));
        assert_eq!(record.cost_usd, 0.5, "the CLI's own figure when larger");
    }

    #[test]
    fn a_workspace_scan_sees_a_new_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let before = SystemTime::now() - Duration::from_secs(60);
        let later = SystemTime::now() + Duration::from_secs(60);
        std::fs::write(dir.path().join("sub/a.txt"), "x").unwrap();
        assert!(changed_since(dir.path(), before));
        assert!(!changed_since(dir.path(), later));
    }
}
