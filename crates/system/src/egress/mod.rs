//! The agent's only door (issues 37 and 46): opentiger's own egress proxy, in the binary (hyper
//! on a tokio runtime of its own thread, rustls to upstream), one [`Door`] per agent run or check
//! list.
//!
//! An agent or check runs in a network namespace holding only loopback (`sandbox::netns`),
//! where the one listener is this proxy; where the kernel refuses the namespace, the proxy
//! listens on the host's loopback and Landlock lets the program connect to that port only
//! (`sandbox::network_isolation` says which, and what stays open). Through the door:
//!
//! - the executor's model API under the agent's base URL (`ANTHROPIC_BASE_URL`,
//!   `OPENAI_BASE_URL`, … on the proxy): the agent holds a placeholder key; the proxy puts the
//!   runner's real key in the provider's credential slot only, on requests to that API's host
//!   only (`credential`); the route carries model calls only — its provider's generation,
//!   token-counting and model-list endpoints (`providers`), no tool the provider runs itself
//!   unless `sandbox.network.provider_tools` allows it (`tools`) — and every answer comes back
//!   through a filter that removes every secret the runner holds (`scrub`), metered (`meter`),
//!   priced (`pricing`), held to the run's budget (a call past it is refused), a 429/529 kept as
//!   a quota hit that ends the run (`session`);
//! - the hosts of `sandbox.network.allow` (per role, and for the checks) through `CONNECT` or
//!   plain http; anything else is refused and recorded with the line that would allow it (ten
//!   names and a count, whatever the program tries);
//! - all of it bounded per run: connections open, request heads' size and time, request bodies
//!   held (`proxy`, `session`).
//!
//! The rules are the session's, so every role's door (worker, judge, planner, research, the
//! detection agent, the checks) keeps them, whoever opens it.
//!
//! Not here: starting programs (`process`), deciding what a run's result means (`runner`,
//! `engine`).

mod credential;
mod frames;
pub mod meter;
mod model;
pub mod pricing;
pub mod probe;
pub mod providers;
mod proxy;
mod reply;
pub mod scrub;
mod session;
mod tools;
pub mod translate;
pub mod upstream;
mod websocket;

use std::os::fd::OwnedFd;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use crate::sandbox::{netns, NetIsolation};

pub use providers::{built_ins, is_model_key, provider_of_key, Provider};
pub use scrub::Secrets;
pub use session::{
    Budget, OwnTraffic, QuotaHit, Route, Session, SessionSpec, Traffic, MAX_CONNECTIONS,
};

/// The variable telling a program behind a door which tools a model API runs itself it may
/// ask for (`sandbox.network.provider_tools`, comma-separated; empty: none), so an adapter can
/// turn the others off in its CLI (codex's web search).
pub const PROVIDER_TOOLS_VAR: &str = "OPENTIGER_PROVIDER_TOOLS";

/// What a program behind a door is told of a configured provider (`providers:`), whatever its
/// CLI: its name, API shape (`openai-chat`, …), base URL on the proxy, placeholder key, and
/// whether it takes websockets (`1` or `0`). Each adapter turns them into its CLI's own
/// settings (codex's `model_providers`, opencode's `provider`, aider's `OPENAI_API_BASE`).
pub const PROVIDER_VARS: ProviderVars = ProviderVars {
    name: "OPENTIGER_PROVIDER",
    api: "OPENTIGER_PROVIDER_API",
    base_url: "OPENTIGER_PROVIDER_BASE_URL",
    key: "OPENTIGER_PROVIDER_KEY",
    websocket: "OPENTIGER_PROVIDER_WEBSOCKET",
};

/// The names of [`PROVIDER_VARS`].
pub struct ProviderVars {
    pub name: &'static str,
    pub api: &'static str,
    pub base_url: &'static str,
    pub key: &'static str,
    pub websocket: &'static str,
}

/// The proxy's runtime: one thread, started on first use, living as long as the process.
fn runtime() -> Result<&'static tokio::runtime::Handle, String> {
    static HANDLE: OnceLock<Result<tokio::runtime::Handle, String>> = OnceLock::new();
    HANDLE
        .get_or_init(|| {
            raise_file_limit();
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| format!("could not start opentiger's proxy: {e}"))?;
            let handle = rt.handle().clone();
            std::thread::Builder::new()
                .name("egress-proxy".into())
                .spawn(move || rt.block_on(std::future::pending::<()>()))
                .map_err(|e| format!("could not start opentiger's proxy: {e}"))?;
            Ok(handle)
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// The soft limit on open files raised to the hard one, once, when the proxy starts: each run
/// may hold [`MAX_CONNECTIONS`] connections (and as many upstream) on top of what the runner
/// needs for its own work (issue 46: with 1,024 the runner ran out while an agent held
/// connections open).
fn raise_file_limit() {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit read and write the one struct given.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && limit.rlim_cur < limit.rlim_max
        {
            limit.rlim_cur = limit.rlim_max;
            let _ = libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}

/// One agent run's (or check list's) door: its session, where it listens, and what the
/// program is told.
pub struct Door {
    session: Arc<Session>,
    isolation: NetIsolation,
    port: u16,
    tasks: Arc<Mutex<Vec<tokio::task::AbortHandle>>>,
    env: Vec<(String, String)>,
}

impl Door {
    /// Opens a door for `spec` under `isolation`: in a namespace, each program's own listener is
    /// served as it arrives ([`Door::netns`]); otherwise one listener on the host's loopback.
    pub fn open(spec: SessionSpec, isolation: NetIsolation) -> Result<Door, String> {
        let handle = runtime()?;
        let session = Arc::new(Session::new(spec));
        let tasks = Arc::new(Mutex::new(Vec::new()));
        let port = match isolation {
            NetIsolation::Namespace => netns::PORT,
            NetIsolation::Landlock { .. } | NetIsolation::Open { .. } => {
                let listener = std::net::TcpListener::bind("127.0.0.1:0")
                    .map_err(|e| format!("opentiger's proxy could not listen on 127.0.0.1: {e}"))?;
                let port = listener
                    .local_addr()
                    .map_err(|e| format!("opentiger's proxy has no port: {e}"))?
                    .port();
                serve(handle, listener.into(), &session, &tasks);
                port
            }
        };
        let env = door_env(port, &session.spec.routes, &session.spec.provider_tools);
        Ok(Door {
            session,
            isolation,
            port,
            tasks,
            env,
        })
    }

    /// The variables the program is given: the proxy for everything, each routed model API's
    /// base URL and placeholder keys.
    pub fn env(&self) -> &[(String, String)] {
        &self.env
    }

    /// Where each program's namespace sends its listener (namespace isolation only).
    pub fn netns(&self) -> Option<netns::Door> {
        if self.isolation != NetIsolation::Namespace {
            return None;
        }
        let (session, tasks) = (self.session.clone(), self.tasks.clone());
        let handle = runtime().ok()?;
        Some(netns::Door {
            deliver: Arc::new(move |fd: OwnedFd| serve(handle, fd, &session, &tasks)),
        })
    }

    /// The port Landlock must let the program connect to (Landlock isolation only).
    pub fn landlock_port(&self) -> Option<u16> {
        matches!(self.isolation, NetIsolation::Landlock { .. }).then_some(self.port)
    }

    pub fn session(&self) -> &Arc<Session> {
        &self.session
    }

    /// Stops serving and says what happened.
    pub fn close(&self) -> Traffic {
        self.stop();
        self.session.traffic()
    }

    fn stop(&self) {
        for task in self
            .tasks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain(..)
        {
            task.abort();
        }
        // Its connections, tunnels and websockets too.
        self.session.stop();
    }
}

impl Drop for Door {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Serves one listener (a namespace's, or the host loopback one) for `session`.
fn serve(
    handle: &tokio::runtime::Handle,
    fd: OwnedFd,
    session: &Arc<Session>,
    tasks: &Arc<Mutex<Vec<tokio::task::AbortHandle>>>,
) {
    let listener = std::net::TcpListener::from(fd);
    if let Err(e) = listener.set_nonblocking(true) {
        tracing::warn!("the proxy's listener could not be served: {e}");
        return;
    }
    let session = session.clone();
    let task = handle.spawn(async move {
        match tokio::net::TcpListener::from_std(listener) {
            Ok(listener) => proxy::serve(listener, session).await,
            Err(e) => tracing::warn!("the proxy's listener could not be served: {e}"),
        }
    });
    tasks
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(task.abort_handle());
}

/// Hosts that need no proxy: the program's own loopback (its tests' servers, and the proxy
/// itself reached as a base URL).
const NO_PROXY: &str = "localhost,127.0.0.1,::1";

/// What a program behind a door on `port` is told: the proxy, each route's base URL and
/// placeholder keys, and (with a route) the tools a model API runs itself it may ask for
/// ([`Door::env`]).
pub fn door_env(
    port: u16,
    routes: &[Route],
    provider_tools: &[crate::config::ProviderTool],
) -> Vec<(String, String)> {
    let proxy = format!("http://127.0.0.1:{port}");
    let mut env: Vec<(String, String)> = [
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
        "OPENTIGER_PROXY",
    ]
    .iter()
    .map(|k| (k.to_string(), proxy.clone()))
    .collect();
    env.push(("NO_PROXY".into(), NO_PROXY.into()));
    env.push(("no_proxy".into(), NO_PROXY.into()));
    for route in routes {
        let p = &route.provider;
        let base = format!("{proxy}/{}{}", p.name, p.base_path);
        match p.base_var {
            Some(var) => {
                env.push((var.to_string(), base));
                for (var, placeholder, _) in &route.keys {
                    env.push((var.clone(), placeholder.clone()));
                }
            }
            None => {
                let v = &PROVIDER_VARS;
                let placeholder = route.keys.first().map(|(_, p, _)| p.clone());
                env.extend([
                    (v.name.to_string(), p.name.clone()),
                    (v.api.to_string(), p.api.word().to_string()),
                    (v.base_url.to_string(), base),
                    (v.key.to_string(), placeholder.unwrap_or_default()),
                    (
                        v.websocket.to_string(),
                        if p.websocket { "1" } else { "0" }.to_string(),
                    ),
                ]);
            }
        }
    }
    if !routes.is_empty() {
        let tools: Vec<&str> = provider_tools.iter().map(|t| t.name()).collect();
        env.push((PROVIDER_TOOLS_VAR.to_string(), tools.join(",")));
    }
    env
}

/// The variables holding a model key, which the runner holds and no agent sees: the built-in
/// providers' and each `providers:` entry's.
pub fn model_keys(config: &crate::config::Config) -> Vec<String> {
    let mut names: Vec<String> = built_ins()
        .iter()
        .flat_map(|p| p.keys.iter().cloned())
        .collect();
    names.extend(config.providers.values().filter_map(|p| p.key.clone()));
    names
}

/// The built-in model APIs an agent given `vars` uses: each variable set (not blank) in the
/// runner's environment (`lookup`) that holds a model key, grouped by provider, each with a
/// new placeholder.
pub fn routes(vars: &[&str], lookup: impl Fn(&str) -> Option<String>) -> Vec<Route> {
    let mut routes: Vec<Route> = Vec::new();
    for var in vars {
        let Some(provider) = provider_of_key(var) else {
            continue;
        };
        let Some(key) = lookup(var).filter(|k| !k.trim().is_empty()) else {
            continue;
        };
        let entry = (var.to_string(), placeholder(), key);
        match routes.iter_mut().find(|r| r.provider.name == provider.name) {
            Some(route) if !route.keys.iter().any(|(v, _, _)| v == var) => route.keys.push(entry),
            Some(_) => {}
            None => routes.push(Route {
                provider: provider.clone(),
                keys: vec![entry],
            }),
        }
    }
    routes
}

/// The route of a configured provider (`providers:`): one placeholder for its key, read from
/// the runner's environment (`lookup`) — empty when it takes none, or its variable is not set:
/// the proxy then sends no key.
pub fn configured_route(provider: Arc<Provider>, lookup: impl Fn(&str) -> Option<String>) -> Route {
    let var = provider.keys.first().cloned().unwrap_or_default();
    let key = (!var.is_empty())
        .then(|| lookup(&var))
        .flatten()
        .filter(|k| !k.trim().is_empty())
        .unwrap_or_default();
    Route {
        provider,
        keys: vec![(var, placeholder(), key)],
    }
}

/// A new placeholder key: it says what it is, and is unguessable, so the proxy may trust it.
fn placeholder() -> String {
    let mut bytes = [0u8; 16];
    // SAFETY: getrandom writes at most `bytes.len()` bytes into `bytes`.
    let n = unsafe { libc::getrandom(bytes.as_mut_ptr().cast(), bytes.len(), 0) };
    if n != bytes.len() as isize {
        // Never a fixed value: the time and the process make it unique at least.
        let seed = format!("{:?}{}", std::time::SystemTime::now(), std::process::id());
        let hash = crate::model::short_hash(&[&seed]);
        return format!("opentiger-placeholder-{hash}");
    }
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("opentiger-placeholder-{hex}")
}

#[cfg(test)]
mod tests;
