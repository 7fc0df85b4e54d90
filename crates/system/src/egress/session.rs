//! One agent run's (or one check list's) dealings with the proxy, shared by the proxy's tasks
//! and the runner: what it may reach, the keys it may use and where, the secrets no answer may
//! carry back, what it has spent against its budget, and what happened — tokens metered, hosts
//! refused, a quota answer, a refused model call, the last traffic. And its bounds (issue 46):
//! the connections it may hold open at once ([`MAX_CONNECTIONS`]), the request bodies the proxy
//! holds for it at once ([`BUFFERED_MAX`]), the tasks serving it (all ended with it).
//!
//! Not here: serving connections (`proxy`), running the program (`process`).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crate::config::{HostRule, NetworkUser, ProviderTool};
use crate::model::network::{host_name, merge_refusals, Metering, Refusal};

use super::meter::Usage;
use super::pricing::Prices;
use super::providers::Provider;
use super::scrub::Secrets;

/// The most connections one run's program may hold open on its door at once (tunnels and
/// websockets included). A CLI opens a handful; a check's package manager a few dozen. Past it a
/// connection is answered 503 and closed at once, so an agent cannot make the runner hold
/// thousands of sockets and their buffers (issue 46).
pub const MAX_CONNECTIONS: usize = 128;
/// The largest request body a model call may have (and a websocket message): Anthropic's own
/// limit for a Messages request (32 MB), beyond a long context with images (claude's largest
/// requests are a few MiB).
pub const BODY_MAX: usize = 32 << 20;
/// The most request-body bytes the proxy holds for one run at once (it reads a model call's
/// body whole before forwarding it, to read its tools): two of the largest calls.
pub const BUFFERED_MAX: usize = 64 << 20;

/// A model API this agent may use: its provider and the placeholders it was given, each with
/// the key the proxy puts in its place.
#[derive(Clone)]
pub struct Route {
    pub provider: Arc<Provider>,
    /// `(variable, placeholder, key)`; a provider that takes no key has one entry with an empty
    /// variable and key: the agent still gets a placeholder, the proxy sends nothing for it.
    pub keys: Vec<(String, String, String)>,
}

impl std::fmt::Debug for Route {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the keys.
        f.debug_struct("Route")
            .field("provider", &self.provider.name)
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
    /// Tools a model API runs itself that a model call may ask for
    /// (`sandbox.network.provider_tools`).
    pub provider_tools: Vec<ProviderTool>,
    /// What no answer may carry back besides the routes' own keys: every model key and forge
    /// token the runner holds.
    pub secrets: Secrets,
    /// What the agent's CLI reaches on its own, which no task needs (issue 50).
    pub own_traffic: OwnTraffic,
}

/// Hosts an agent CLI reaches on its own — update checks, telemetry, plugin installs
/// (`executor::Cli::background`) — refused, unless allowed, without advice to allow them, and
/// recorded as that CLI's own traffic.
#[derive(Clone, Debug, Default)]
pub struct OwnTraffic {
    /// The CLI's `executor:` word.
    pub cli: String,
    pub hosts: Vec<HostRule>,
}

impl OwnTraffic {
    /// Whether `host:port` is the CLI's own traffic.
    pub fn holds(&self, host: &str, port: u16) -> bool {
        self.hosts.iter().any(|r| r.matches(host, port))
    }
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
    /// The spec's secrets and the routes' keys.
    secrets: Arc<Secrets>,
    state: Mutex<State>,
    /// Connections open now.
    open: AtomicUsize,
    /// Request-body bytes held now.
    buffered: AtomicUsize,
    /// The tasks serving this session's connections, tunnels and websockets.
    tasks: Mutex<tokio::task::JoinSet<()>>,
}

/// A connection admitted ([`Session::admit`]): it counts as open until every holder (the
/// connection, a tunnel or websocket it became) has dropped it.
#[derive(Debug)]
pub struct Admission(Arc<Session>);

impl Drop for Admission {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Request-body bytes held for a session ([`Session::hold`]), given back when dropped.
#[derive(Debug)]
pub struct Held {
    session: Arc<Session>,
    bytes: usize,
}

impl Held {
    /// Holds `more` bytes too, unless the session would then hold more than [`BUFFERED_MAX`].
    pub fn add(&mut self, more: usize) -> bool {
        let before = self.session.buffered.fetch_add(more, Ordering::SeqCst);
        if before + more > BUFFERED_MAX {
            self.session.buffered.fetch_sub(more, Ordering::SeqCst);
            return false;
        }
        self.bytes += more;
        true
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.session
            .buffered
            .fetch_sub(self.bytes, Ordering::SeqCst);
    }
}

impl Session {
    pub fn new(spec: SessionSpec) -> Session {
        let keys = spec
            .routes
            .iter()
            .flat_map(|r| r.keys.iter().map(|(_, _, key)| key.clone()));
        Session {
            secrets: Arc::new(spec.secrets.with(keys)),
            spec,
            open: AtomicUsize::new(0),
            buffered: AtomicUsize::new(0),
            tasks: Mutex::new(tokio::task::JoinSet::new()),
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

    /// Records a refusal of `host:port`: the name as data ([`host_name`]), in a list that
    /// stays ten names and a count however many the program tries.
    pub fn refuse(&self, host: &str, port: u16) {
        let own = self.spec.own_traffic.holds(host, port);
        let refusal = Refusal {
            host: host_name(host),
            port,
            by: self.spec.user.key().to_string(),
            times: 1,
            own: own.then(|| self.spec.own_traffic.cli.clone()),
        };
        merge_refusals(&mut self.state().refused, &[refusal]);
    }

    /// The secrets no answer may carry back.
    pub fn secrets(&self) -> &Arc<Secrets> {
        &self.secrets
    }

    /// Admits one more connection, unless [`MAX_CONNECTIONS`] are open.
    pub fn admit(self: &Arc<Self>) -> Option<Arc<Admission>> {
        let before = self.open.fetch_add(1, Ordering::SeqCst);
        if before >= MAX_CONNECTIONS {
            self.open.fetch_sub(1, Ordering::SeqCst);
            return None;
        }
        Some(Arc::new(Admission(self.clone())))
    }

    /// Connections open now.
    pub fn open_connections(&self) -> usize {
        self.open.load(Ordering::SeqCst)
    }

    /// A hold on request-body bytes, empty at first.
    pub fn hold(self: &Arc<Self>) -> Held {
        Held {
            session: self.clone(),
            bytes: 0,
        }
    }

    /// Runs `task` for this session (on the proxy's runtime: call it from there); it ends when
    /// it is done or the session is stopped.
    pub fn spawn(&self, task: impl std::future::Future<Output = ()> + Send + 'static) {
        let mut tasks = self.tasks.lock().unwrap_or_else(PoisonError::into_inner);
        while tasks.try_join_next().is_some() {}
        tasks.spawn(task);
    }

    /// Ends every task serving this session.
    pub fn stop(&self) {
        self.tasks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .abort_all();
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
        self.spec.routes.iter().find(|r| r.provider.name == route)
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
