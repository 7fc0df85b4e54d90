//! One agent run's (or one check list's) dealings with the proxy, shared by the proxy's tasks
//! and the runner: what it may reach, the keys it may use and where, what it has spent against
//! its budget, and what happened — tokens metered, hosts refused, a quota answer, a refused
//! model call, the last traffic.
//!
//! Not here: serving connections (`proxy`), running the program (`process`).

use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crate::config::{HostRule, NetworkUser};
use crate::model::network::{merge_refusals, Metering, Refusal};

use super::meter::Usage;
use super::pricing::Prices;
use super::providers::Provider;

/// A model API this agent may use: its provider and the placeholders it was given, each with
/// the key the proxy puts in its place.
#[derive(Clone)]
pub struct Route {
    pub provider: &'static Provider,
    /// `(variable, placeholder, key)`.
    pub keys: Vec<(String, String, String)>,
}

impl std::fmt::Debug for Route {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the keys.
        f.debug_struct("Route")
            .field("provider", &self.provider.route)
            .finish()
    }
}

/// The spend a run may still make, and where that limit comes from, for the refusal's words.
#[derive(Clone, Debug, PartialEq)]
pub struct Budget {
    pub remaining_usd: f64,
    /// e.g. `budget.per_task_usd ($0.50) for task abc's family, $0.42 spent before this run`.
    pub what: String,
}

/// What a session is set up with.
#[derive(Clone, Debug)]
pub struct SessionSpec {
    pub user: NetworkUser,
    pub allow: Vec<HostRule>,
    pub routes: Vec<Route>,
    pub prices: Prices,
    pub budget: Option<Budget>,
    /// Host names reached at a loopback address instead, over plain http (tests and local
    /// stand-ins: `upstream::overrides`).
    pub resolve: std::collections::BTreeMap<String, std::net::SocketAddr>,
}

/// A quota or overload answer from a model API.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QuotaHit {
    pub status: u16,
    pub host: String,
    /// Its `retry-after`, in seconds.
    pub retry_after: Option<u64>,
}

impl QuotaHit {
    /// For the run's message; `retry in <n>s` is what the quota backoff reads.
    pub fn message(&self) -> String {
        let when = match self.retry_after {
            Some(secs) => format!("retry in {secs}s"),
            None => "no retry time given".to_string(),
        };
        format!(
            "the agent hit a quota or rate limit: its model API ({}) answered HTTP {} ({when}), and opentiger's proxy ended the run at once",
            self.host, self.status
        )
    }

    pub fn hint(&self) -> Option<String> {
        self.retry_after.map(|s| format!("retry in {s}s"))
    }
}

/// What a session saw, at the end of its run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Traffic {
    pub metering: Metering,
    pub refused: Vec<Refusal>,
    pub quota: Option<QuotaHit>,
    /// A model call was refused because the budget was spent (its words).
    pub budget_refused: Option<String>,
}

#[derive(Debug)]
struct State {
    usage: Usage,
    refused: Vec<Refusal>,
    quota: Option<QuotaHit>,
    budget_refused: Option<String>,
    last_traffic: Instant,
    in_flight: u32,
}

/// A model request in flight ([`Session::begin`]); it ends when this is dropped.
pub struct Flight(std::sync::Arc<Session>);

impl Drop for Flight {
    fn drop(&mut self) {
        self.0.end();
    }
}

#[derive(Debug)]
pub struct Session {
    pub spec: SessionSpec,
    state: Mutex<State>,
}

impl Session {
    pub fn new(spec: SessionSpec) -> Session {
        Session {
            spec,
            state: Mutex::new(State {
                usage: Usage::new(),
                refused: Vec::new(),
                quota: None,
                budget_refused: None,
                last_traffic: Instant::now(),
                in_flight: 0,
            }),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether `host:port` is on the allow list; a refusal is recorded when not.
    pub fn allows(&self, host: &str, port: u16) -> bool {
        if self.spec.allow.iter().any(|r| r.matches(host, port)) {
            return true;
        }
        self.refuse(host, port);
        false
    }

    pub fn refuse(&self, host: &str, port: u16) {
        // Only what a host name can hold: the name is shown and posted as it is.
        let host: String = host
            .trim_end_matches('.')
            .to_ascii_lowercase()
            .chars()
            .map(|c| match c {
                'a'..='z' | '0'..='9' | '.' | '-' | ':' | '[' | ']' => c,
                _ => '?',
            })
            .collect();
        let refusal = Refusal {
            host,
            port,
            by: self.spec.user.key().to_string(),
            times: 1,
        };
        merge_refusals(&mut self.state().refused, &[refusal]);
    }

    /// Where `host` is reached instead, when it is mapped.
    pub fn mapped(&self, host: &str) -> Option<std::net::SocketAddr> {
        self.spec
            .resolve
            .get(&host.trim_end_matches('.').to_ascii_lowercase())
            .copied()
    }

    /// The model API routed under `route` for this agent.
    pub fn route(&self, route: &str) -> Option<&Route> {
        self.spec.routes.iter().find(|r| r.provider.route == route)
    }

    /// Bytes went either way.
    pub fn touch(&self) {
        self.state().last_traffic = Instant::now();
    }

    /// A model request waits for (or streams) its answer: the agent is not idle until the
    /// returned guard is dropped (however the request ends: answered, failed, abandoned).
    pub fn begin(self: &std::sync::Arc<Self>) -> Flight {
        let mut s = self.state();
        s.in_flight += 1;
        s.last_traffic = Instant::now();
        Flight(self.clone())
    }

    fn end(&self) {
        let mut s = self.state();
        s.in_flight = s.in_flight.saturating_sub(1);
        s.last_traffic = Instant::now();
    }

    /// How long since the last model traffic (zero while a request is in flight).
    pub fn quiet(&self) -> Duration {
        let s = self.state();
        if s.in_flight > 0 {
            Duration::ZERO
        } else {
            s.last_traffic.elapsed()
        }
    }

    pub fn add_usage(&self, usage: Usage) {
        if usage.is_empty() {
            return;
        }
        let mut s = self.state();
        for (model, tokens) in usage {
            s.usage.entry(model).or_default().add(&tokens);
        }
    }

    pub fn quota(&self, hit: QuotaHit) {
        self.state().quota.get_or_insert(hit);
    }

    /// `Some(words)` when the budget is spent: the next model call is refused with them.
    pub fn budget_spent(&self) -> Option<String> {
        let budget = self.spec.budget.as_ref()?;
        let spent = self.spec.prices.cost(&self.state().usage).usd;
        if spent < budget.remaining_usd {
            return None;
        }
        let words = format!(
            "this run's budget is spent: it metered ${spent:.4} of the ${:.4} left ({}); opentiger's proxy refused its next model call",
            budget.remaining_usd.max(0.0),
            budget.what
        );
        self.state().budget_refused.get_or_insert(words.clone());
        Some(words)
    }

    /// Why the run should stop now: a quota answer or a refused model call.
    pub fn stop_reason(&self) -> Option<String> {
        let s = self.state();
        if let Some(hit) = &s.quota {
            return Some(hit.message());
        }
        s.budget_refused.clone()
    }

    pub fn traffic(&self) -> Traffic {
        let s = self.state();
        let cost = self.spec.prices.cost(&s.usage);
        Traffic {
            metering: Metering {
                models: s.usage.clone(),
                usd: cost.usd,
                unpriced: cost.unpriced,
            },
            refused: s.refused.clone(),
            quota: s.quota.clone(),
            budget_refused: s.budget_refused.clone(),
        }
    }
}
