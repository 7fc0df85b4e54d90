//! The one launch path (issue 47): every agent — task runs, research, the judge, the planner,
//! the detection agent — and every check list starts here, so a rule added here holds for all
//! of them. [`run_agent`] builds an agent's environment (`executor::agent_env` and its role's
//! variables), its private home, its network door (`network::AgentNet`), its confinement
//! ([`confinement`]: its view or the socket filter, Landlock, its limits), its process-group
//! record and live line, takes the checkout's credentials out of the repository
//! (`sandbox::before_agent`), runs it and closes what it opened: what its door saw and the
//! limit it reached come back with its result. [`checks`] builds the same for a task's
//! verification commands.
//!
//! Not for: choosing the executor (`executors`), the prompts (`prompts`), what a result means
//! (each role's module), the walls themselves (`sandbox`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::network::{AgentNet, NetOutcome};
use super::Act;
use crate::config::{AgentHome, AgentRole, Config, EffectiveAgent, FilesystemSandbox};
use crate::executor::{self, AgentRequest, AgentResult, Executor, ExecutorError};
use crate::model::{FailureCode, RunId, Task};
use crate::sandbox::limits::{Hit, Limits};
use crate::sandbox::view::{self, Access, ViewSpec};
use crate::sandbox::{landlock, Confinement, FileWalls};

/// The folders of one run, as its programs see them.
pub(super) struct Folders<'a> {
    /// Where it works (its current folder).
    pub workspace: &'a Path,
    /// It may write the workspace (and so its run's whole folder); else only its scratch
    /// folder and home: research, the judge, the planner, the detection agent.
    pub writes: bool,
    /// The run's folder, holding the workspace and the scratch folder.
    pub run_folder: &'a Path,
    /// Its scratch folder: its prompt and result files, its home, its `TMPDIR` outside a view.
    pub scratch: &'a Path,
}

/// One agent to start.
pub(super) struct AgentLaunch<'a> {
    pub act: &'a Act<'a>,
    pub role: AgentRole,
    pub agent: &'a EffectiveAgent,
    /// The executor as the run records it, for the live view.
    pub label: &'a str,
    pub folders: Folders<'a>,
    /// The role's variables (`OPENTIGER_ROLE`, `OPENTIGER_TASK_ID`, …) and any of the prompt's.
    pub vars: Vec<(&'static str, String)>,
    /// What it may spend through its door.
    pub budget: Option<crate::egress::Budget>,
}

impl<'a> AgentLaunch<'a> {
    /// The launch of `chosen` as `role` in `folders`, with the role's `vars` and no budget.
    pub fn of(
        act: &'a Act<'a>,
        role: AgentRole,
        chosen: &'a super::executors::Chosen,
        folders: Folders<'a>,
        vars: Vec<(&'static str, String)>,
    ) -> AgentLaunch<'a> {
        AgentLaunch {
            act,
            role,
            agent: &chosen.agent,
            label: &chosen.label,
            folders,
            vars,
            budget: None,
        }
    }
}

/// Why an agent could not be started: the failure code its run gets, and why.
#[derive(Debug)]
pub(super) struct NotStarted {
    pub code: FailureCode,
    pub message: String,
}

/// What one agent run came to.
pub(super) struct Ran {
    pub result: Result<AgentResult, ExecutorError>,
    /// What its door saw, and why it stopped the run, if it did.
    pub net: NetOutcome,
    /// The limit it reached, if it did.
    pub limit: Option<Hit>,
}

/// Starts the agent of `launch` with `exec` on `task`'s run `run_id` and waits for it.
/// `Err`: it could not be started (its door, home, sandbox or the repository's credentials).
pub(super) fn run_agent(
    launch: AgentLaunch<'_>,
    exec: &dyn Executor,
    (task, run_id): (&Task, &RunId),
    prompt: String,
    attempt: u32,
) -> Result<Ran, NotStarted> {
    let AgentLaunch {
        act,
        role,
        agent,
        label,
        folders,
        mut vars,
        budget,
    } = launch;
    let setup = |message: String| NotStarted {
        code: FailureCode::SetupOrBootstrapIssue,
        message,
    };
    vars.push(("TMPDIR", folders.scratch.display().to_string()));
    let mut env = executor::agent_env(&agent.env_passthrough, |k| std::env::var(k).ok(), &vars);
    let net = AgentNet::open(act.config, agent, role, budget, folders.workspace, &mut env)
        .map_err(setup)?;
    let home = run_home(act.config, folders.scratch, &agent.home_files).map_err(setup)?;
    set_var(&mut env, "HOME", &home.display().to_string());
    let limits = Limits::of(
        &act.config.limits.run,
        Some((&agent.limits, &agent.config_key)),
    );
    let confine = confinement(
        act.config,
        act.repo,
        &folders,
        &home,
        &mut env,
        net.landlock_port(),
        limits,
    )
    .map_err(|message| NotStarted {
        code: FailureCode::ExecutionFailed,
        message,
    })?;
    // A person's stop (`act.stop`, set for a task's run) ends the agent as a timeout would,
    // gently (issue 51).
    let (live, sentinel) = super::pulse::agent(
        role,
        label,
        folders.workspace,
        super::stop::with_stop(net.sentinel(), act.stop.clone()),
        act.redactor,
    );
    let request = AgentRequest {
        role,
        task,
        run_id,
        workspace: folders.workspace,
        prompt,
        env,
        timeout: agent.timeout(),
        attempt,
        scratch: folders.scratch,
        group_record: group_record(act.repo, &run_id.to_string()),
        confine: Some(confine.clone()),
        network: net.netns(),
        sentinel,
    };
    crate::sandbox::before_agent(act.repo).map_err(|e| setup(e.to_string()))?;
    let result = exec.run(&request);
    live.ended(&super::pulse::agent_end(&result, act.redactor));
    // What the proxy saw counts whatever the agent did: its spend, what it was refused.
    let net = net.close();
    Ok(Ran {
        result,
        net,
        limit: confine.take_hit(),
    })
}

/// Where a verification command of a run runs: its door (`sandbox.network.allow.checks`), a
/// scratch folder of its own as `TMPDIR` (`/tmp` in its view), a private `HOME` (with the
/// runner's Rust toolchain named read-only), its confinement as an agent's that writes its
/// workspace, and its process-group record under the runner's own repository (never under
/// anything found in `cwd`, whose `.git` the agent wrote).
pub(super) struct ChecksLaunched {
    pub door: crate::egress::Door,
    pub scratch: crate::scratch::PrivateDir,
    pub env: Vec<(String, String)>,
    pub confine: Arc<Confinement>,
    /// What the checks may write (for a refused write's hint).
    pub writable: Vec<PathBuf>,
    pub group_record: Option<PathBuf>,
}

/// The launch of `config`'s checks in `cwd`, for the runner's repository `repo`.
pub(super) fn checks(config: &Config, cwd: &Path, repo: &Path) -> Result<ChecksLaunched, String> {
    let scratch = crate::scratch::private_dir("check").map_err(|e| e.to_string())?;
    // Named by its scratch folder: the record, and the tag every process of the checks
    // carries, which finds those that left the group after a killed tick.
    let name = scratch
        .path()
        .file_name()
        .map_or_else(|| "check".to_string(), |n| n.to_string_lossy().into_owned());
    let home = run_home(config, scratch.path(), &[])?;
    let mut env = base_env();
    toolchain_env(config, &mut env);
    set_var(&mut env, "HOME", &home.display().to_string());
    set_var(&mut env, "TMPDIR", &scratch.path().display().to_string());
    set_var(&mut env, crate::sandbox::groups::CHECK_TAG_VAR, &name);
    let door = super::network::checks_door(config)?;
    for (k, v) in door.env() {
        set_var(&mut env, k, v);
    }
    let folders = Folders {
        workspace: cwd,
        writes: true,
        run_folder: cwd,
        scratch: scratch.path(),
    };
    let limits = Limits::of(&config.limits.run, None);
    let confine = confined(
        config,
        repo,
        (&folders, &home),
        &mut env,
        door.landlock_port(),
        limits,
    )?;
    let writable = with_configured(
        config,
        &[cwd.to_path_buf(), scratch.path().to_path_buf(), home],
    );
    let group_record = group_record(repo, &name);
    Ok(ChecksLaunched {
        door,
        scratch,
        env,
        confine,
        writable,
        group_record,
    })
}

/// Where the host probe runs (issue 52): in a worker's sandbox — its environment (`PATH`,
/// `HOME`, its `env_passthrough`, and the Rust toolchain's variables a private home gives the
/// checks), a private home, its view, Landlock rules and limits, reading an empty folder of its
/// own — behind a door that lets nothing through. What it finds is what a worker's agent and
/// checks find.
pub(super) struct ProbeLaunched {
    pub door: crate::egress::Door,
    /// Holds `workspace` (its current folder) and the home; removed when dropped.
    pub _scratch: crate::scratch::PrivateDir,
    pub workspace: PathBuf,
    pub env: Vec<(String, String)>,
    pub confine: Arc<Confinement>,
    pub group_record: Option<PathBuf>,
}

/// Under a private home, the variables that still find the runner's Rust toolchain
/// (`sandbox::home::toolchain_vars`), into `env`.
fn toolchain_env(config: &Config, env: &mut Vec<(String, String)>) {
    if config.sandbox.agent_home == AgentHome::Private {
        let runner_home = std::env::var_os("HOME").map(PathBuf::from);
        for (k, v) in
            crate::sandbox::home::toolchain_vars(runner_home.as_deref(), |k| std::env::var(k).ok())
        {
            set_var(env, &k, &v);
        }
    }
}

/// The launch of the host probe for the runner's repository `repo`.
pub(super) fn probe(config: &Config, repo: &Path) -> Result<ProbeLaunched, String> {
    let scratch = crate::scratch::private_dir("probe").map_err(|e| e.to_string())?;
    let workspace = scratch.path().join("work");
    std::fs::create_dir(&workspace).map_err(|e| e.to_string())?;
    let name = scratch
        .path()
        .file_name()
        .map_or_else(|| "probe".to_string(), |n| n.to_string_lossy().into_owned());
    let agent = config
        .agents
        .effective(AgentRole::Task(crate::model::Role::Worker));
    let vars = vec![("TMPDIR", scratch.path().display().to_string())];
    let mut env = executor::agent_env(&agent.env_passthrough, |k| std::env::var(k).ok(), &vars);
    let door = super::network::closed_door(config)?;
    for (k, v) in door.env() {
        set_var(&mut env, k, v);
    }
    let home = run_home(config, scratch.path(), &[])?;
    set_var(&mut env, "HOME", &home.display().to_string());
    toolchain_env(config, &mut env);
    let folders = Folders {
        workspace: &workspace,
        writes: false,
        run_folder: scratch.path(),
        scratch: scratch.path(),
    };
    let limits = Limits::of(&config.limits.run, Some((&agent.limits, &agent.config_key)));
    let confine = confined(
        config,
        repo,
        (&folders, &home),
        &mut env,
        door.landlock_port(),
        limits,
    )?;
    let group_record = group_record(repo, &name);
    Ok(ProbeLaunched {
        door,
        _scratch: scratch,
        workspace,
        env,
        confine,
        group_record,
    })
}

/// [`confinement`], with the checkout's credentials taken out of `repo` before anything starts
/// (`sandbox::before_agent`): for the checks and the host probe.
fn confined(
    config: &Config,
    repo: &Path,
    (folders, home): (&Folders<'_>, &Path),
    env: &mut Vec<(String, String)>,
    net_port: Option<u16>,
    limits: Limits,
) -> Result<Arc<Confinement>, String> {
    let confine = confinement(config, repo, folders, home, env, net_port, limits)?;
    crate::sandbox::before_agent(repo).map_err(|e| e.to_string())?;
    Ok(confine)
}

/// What confines a run's programs: its view (or, where none can be made, the socket filter),
/// its Landlock rules (it writes `folders` as they say, its `home` and `sandbox.writable`), its
/// `limits`; `net_port`: the port Landlock lets it connect to (the network's fallback). Sets
/// `TMPDIR` to the view's `/tmp`. `Err` when `sandbox.require` (or `sandbox.view: namespace`)
/// asks for a wall this machine does not give.
pub(super) fn confinement(
    config: &Config,
    repo: &Path,
    folders: &Folders<'_>,
    home: &Path,
    env: &mut Vec<(String, String)>,
    net_port: Option<u16>,
    limits: Limits,
) -> Result<Arc<Confinement>, String> {
    let sandbox = &config.sandbox;
    let walls = crate::sandbox::file_walls(sandbox)?;
    let missing = crate::sandbox::in_force(sandbox)
        .into_iter()
        .find(|p| !p.in_force)
        .map(|p| format!("{}: {}", p.name, p.detail));
    if let (true, Some(missing)) = (sandbox.require, &missing) {
        return Err(format!(
            "sandbox.require is true, but a protection is not in force here ({missing})\n  fix: {}",
            "run on Linux 5.13 or newer with unprivileged user namespaces allowed, or set sandbox.require: false"
        ));
    }
    if sandbox.filesystem == FilesystemSandbox::None {
        if sandbox.require {
            return Err("sandbox.require is true, but sandbox.filesystem is none\n  fix: set sandbox.filesystem: landlock, or sandbox.require: false".to_string());
        }
        let landlock =
            match net_port {
                Some(port) => Some(landlock::Rules::build(None, Some(port)).map_err(|e| {
                    format!("the network's Landlock rules could not be set up: {e}")
                })?),
                None => None,
            };
        return Ok(Arc::new(Confinement::new(landlock, None, false, limits)));
    }
    let own = match folders.writes {
        true => vec![folders.run_folder.to_path_buf(), home.to_path_buf()],
        false => vec![folders.scratch.to_path_buf(), home.to_path_buf()],
    };
    let mut writable = with_configured(config, &own);
    let view = (walls == FileWalls::View).then(|| {
        set_var(env, "TMPDIR", "/tmp");
        writable.push(PathBuf::from("/tmp"));
        view_of(config, repo, folders, &writable, env, limits.tmp_bytes())
    });
    let landlock = match landlock::Rules::build(Some(&writable), net_port) {
        Ok(rules) => Some(rules),
        Err(e) if sandbox.require => {
            return Err(format!(
                "sandbox.require is true, but the Landlock sandbox could not be set up: {e}\n  fix: run on Linux 5.13 or newer, or set sandbox.require: false"
            ))
        }
        Err(e) => {
            tracing::warn!("the agent runs without the Landlock sandbox: {e}");
            None
        }
    };
    let socket_filter = matches!(walls, FileWalls::SocketFilter { .. });
    Ok(Arc::new(Confinement::new(
        landlock,
        view,
        socket_filter,
        limits,
    )))
}

/// The view of a run: what it writes, its workspace read-only when it only reads it, the
/// repository's objects its workspace's `.git` borrows, its toolchains and `sandbox.readable`.
fn view_of(
    config: &Config,
    repo: &Path,
    folders: &Folders<'_>,
    writable: &[PathBuf],
    env: &[(String, String)],
    tmp_bytes: Option<u64>,
) -> ViewSpec {
    let mut paths: Vec<(PathBuf, Access)> = writable
        .iter()
        .filter(|p| p.as_path() != Path::new("/tmp"))
        .map(|p| (p.clone(), Access::Write))
        .collect();
    if !folders.writes {
        paths.push((folders.workspace.to_path_buf(), Access::Read));
    }
    if let Ok(common) = crate::git::Git::new(repo).common_dir() {
        let objects = common.canonicalize().unwrap_or(common).join("objects");
        paths.push((objects, Access::Show));
    }
    let path_var = env
        .iter()
        .rev()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.as_str());
    let runner_home = std::env::var_os("HOME").map(PathBuf::from);
    let toolchains = view::toolchain_paths(path_var, &[repo], runner_home.as_deref(), |k| {
        std::env::var(k).ok()
    });
    let readable = config.sandbox.readable.iter().map(PathBuf::from);
    paths.extend(
        toolchains
            .into_iter()
            .chain(readable)
            .map(|p| (p, Access::Show)),
    );
    ViewSpec { paths, tmp_bytes }
}

/// Where the process group of a run's programs is recorded while they run
/// (`sandbox::groups`): under the runner's repository's `.git/opentiger/agents/`. `None` when
/// the repository has none.
fn group_record(repo: &Path, name: &str) -> Option<PathBuf> {
    let dir = crate::sandbox::groups::records_of(repo)?;
    Some(crate::sandbox::groups::record_path(&dir, name))
}

/// The `HOME` of one run: a new private folder in `scratch` holding `files` copied from the
/// runner's home, or the runner's own (`sandbox.agent_home: runner`).
pub(crate) fn run_home(
    config: &Config,
    scratch: &Path,
    files: &[String],
) -> Result<PathBuf, String> {
    let runner_home = std::env::var_os("HOME").map(PathBuf::from);
    match config.sandbox.agent_home {
        AgentHome::Runner => Ok(runner_home.unwrap_or_else(|| scratch.join("home"))),
        AgentHome::Private => {
            let home = scratch.join("home");
            crate::sandbox::home::make(&home, runner_home.as_deref(), files).map_err(|e| {
                format!(
                    "could not make the run's private home {}: {e}\n  fix: check the temp folder (TMPDIR) is writable, or set sandbox.agent_home: runner",
                    home.display()
                )
            })?;
            Ok(home)
        }
    }
}

/// `paths` and the folders `sandbox.writable` adds: all a confined child may write.
pub(crate) fn with_configured(config: &Config, paths: &[PathBuf]) -> Vec<PathBuf> {
    let extra = config.sandbox.writable.iter().map(PathBuf::from);
    paths.iter().cloned().chain(extra).collect()
}

/// Sets `key` in a child's environment, replacing an earlier value.
pub(crate) fn set_var(env: &mut Vec<(String, String)>, key: &str, value: &str) {
    env.retain(|(k, _)| k != key);
    env.push((key.to_string(), value.to_string()));
}

/// What verification commands see: the runner's `PATH`, `HOME` and locale, nothing secret
/// (`HOME` and `TMPDIR` are replaced by the check's own, [`checks`]).
pub fn base_env() -> Vec<(String, String)> {
    [
        "PATH",
        "HOME",
        "LANG",
        "LC_ALL",
        "TMPDIR",
        "CARGO_HOME",
        "RUSTUP_HOME",
    ]
    .iter()
    .filter_map(|k| std::env::var(k).ok().map(|v| (k.to_string(), v)))
    .collect()
}
