//! Reading `.opentiger.yml` and saying exactly what is wrong with it.
//!
//! Every error names the file, the line, the key path and the fix (exit code 2 in the CLI).
//! Parsing is typed (serde-saphyr into [`Config`]), so YAML 1.1 surprises such as `on` turning
//! into a boolean cannot happen.
//!
//! Not for: what the keys are and their defaults (`mod.rs` and a module per section); the
//! parser's errors put in the user's words (`words.rs`); the checks of the `agents` entries
//! and of paths (`agent_values.rs`, `paths.rs`).

use std::fmt;
use std::path::{Path, PathBuf};

use super::keys::{did_you_mean, line_of_key};
use super::{Config, ExecutorKind};
use crate::config::AgentRole;

#[path = "agent_values.rs"]
mod agent_values;

/// Where the configuration came from, for messages and `config show`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConfigSource {
    File(PathBuf),
    /// No file: every key has its default.
    Defaults,
}

impl fmt::Display for ConfigSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigSource::File(path) => write!(f, "{}", path.display()),
            ConfigSource::Defaults => f.write_str("(built-in defaults)"),
        }
    }
}

/// A configuration the user must fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}{}: {}{message}\n  fix: {fix}", line.map(|l| format!(":{l}")).unwrap_or_default(), if key.is_empty() { String::new() } else { format!("`{key}`: ") })]
pub struct ConfigError {
    pub file: String,
    pub line: Option<u64>,
    /// Dotted key path, e.g. `limits.max_runs_per_tick`; empty for the whole file.
    pub key: String,
    pub message: String,
    pub fix: String,
}

/// A check of a loaded configuration made by a module the configuration cannot depend on
/// (`verify::config_problem`): `(key, message, fix)` of the first problem.
pub type ExtraCheck<'a> = &'a dyn Fn(&Config) -> Result<(), (String, String, String)>;

/// Loads the config file at `path`; a missing file means all defaults unless `required`.
pub fn load(path: &Path, required: bool) -> Result<(Config, ConfigSource), ConfigError> {
    load_checked(path, required, &|_| Ok(()))
}

/// [`load`], with `extra` checked too; its problem is reported like every other, with the
/// file, the line of its key and the fix.
pub fn load_checked(
    path: &Path,
    required: bool,
    extra: ExtraCheck<'_>,
) -> Result<(Config, ConfigSource), ConfigError> {
    // Issue 36: never through a link (a change could make one stand for the configuration).
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(ConfigError {
            file: path.display().to_string(),
            line: None,
            key: String::new(),
            message: "the configuration file is a symbolic link: opentiger reads its configuration only from a real file".to_string(),
            fix: "replace the link with the file itself (or point --config at the real file)".to_string(),
        });
    }
    match std::fs::read_to_string(path) {
        Ok(text) => {
            let file = path.display().to_string();
            let config = load_str(&text, &file)?;
            extra(&config).map_err(|(key, message, fix)| {
                clipped(ConfigError {
                    line: line_of_key(&text, &key),
                    file,
                    key,
                    message,
                    fix,
                })
            })?;
            Ok((config, ConfigSource::File(path.to_path_buf())))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !required => {
            Ok((Config::default(), ConfigSource::Defaults))
        }
        Err(e) => Err(ConfigError {
            file: path.display().to_string(),
            line: None,
            key: String::new(),
            message: format!("cannot read the configuration file: {e}"),
            fix: if e.kind() == std::io::ErrorKind::NotFound {
                "create it (`opentiger init` writes one) or point --config at an existing file"
                    .to_string()
            } else {
                "make the file readable, or point --config at another file".to_string()
            },
        }),
    }
}

/// Parses and validates configuration text; `file` names it in errors.
pub fn load_str(text: &str, file: &str) -> Result<Config, ConfigError> {
    if text.trim().is_empty() {
        return Ok(Config::default());
    }
    let mut path = String::new();
    let parsed: Result<Config, serde_saphyr::Error> =
        serde_saphyr::with_deserializer_from_str(text, |de| {
            serde_path_to_error::deserialize(de).map_err(|e| {
                path = e.path().to_string();
                e.into_inner()
            })
        });
    let mut config = parsed.map_err(|e| clipped(parse_error(&e, &path, file, text)))?;
    // Each role's effective agent resolves its provider from this copy (`AgentsConfig`).
    config.agents.providers = config.providers.clone();
    validate(&config, text, file).map_err(clipped)?;
    Ok(config)
}

/// Issue 49: whatever a check echoed of the user's text, no word of a message or fix runs on
/// for thousands of characters.
fn clipped(mut e: ConfigError) -> ConfigError {
    let limit = 2 * super::words::SHOWN_CHARS;
    let clip = |text: &str| -> String {
        if !text.split_whitespace().any(|w| w.chars().count() > limit) {
            return text.to_string();
        }
        text.split(' ')
            .map(|w| super::words::shorten(w, limit))
            .collect::<Vec<_>>()
            .join(" ")
    };
    e.message = clip(&e.message);
    e.fix = clip(&e.fix);
    e.key = super::words::shorten(&e.key, limit);
    e
}

fn parse_error(err: &serde_saphyr::Error, path: &str, file: &str, text: &str) -> ConfigError {
    let line = err.location().map(|l| l.line());
    let full = err.to_string();
    // The first line holds the message; the rest is a source snippet we do not need.
    let first = full.lines().next().unwrap_or_default();
    let message = first
        .strip_prefix("error: ")
        .unwrap_or(first)
        .split_once(": ")
        .filter(|(head, _)| head.starts_with("line "))
        .map_or(first, |(_, rest)| rest)
        .to_string();
    // serde_path_to_error says `?` or `.` when it has no path (a syntax error before any key).
    let key = if path == "." || path == "?" || path.is_empty() {
        String::new()
    } else {
        path.to_string()
    };
    if let Some(dup) = message.strip_prefix("duplicate mapping key: ") {
        let dup = dup.split(',').next().unwrap_or(dup).trim().to_string();
        return ConfigError {
            file: file.to_string(),
            line,
            key: dup.clone(),
            message: format!("`{dup}` appears twice"),
            fix: format!("merge the two `{dup}` sections into one"),
        };
    }
    // Issue 40: a mis-indented line makes the parser blame something else; said as it is.
    let reported = super::words::indent::Reported {
        key: &key,
        line,
        key_line: line_of_key(text, &key),
        unknown: message.starts_with("unknown field `"),
    };
    let said = |(line, key, message, fix): (u64, String, String, String)| ConfigError {
        file: file.to_string(),
        line: Some(line),
        key,
        message,
        fix,
    };
    if let Some(found) = super::words::indent::mistake(text, &reported, &schema_json()) {
        return said(found);
    }
    if let Some(found) = super::words::syntax::never_closed_at(text, line) {
        return said(found);
    }
    // Issue 49: a syntax error's key path is where the parser gave up (`agents.judge.?`), not a
    // key the user wrote, and its fix is never a type's.
    if is_syntax(err) {
        return said(super::words::syntax::said(
            &message,
            text,
            line,
            &schema_json(),
        ));
    }
    if let Some((unknown, expected)) = parse_unknown_field(&message) {
        let parent = key.rsplit_once('.').map_or("", |(p, _)| p);
        let scope = if parent.is_empty() {
            "at the top level".to_string()
        } else {
            format!("under `{parent}`")
        };
        let hint = match did_you_mean(&unknown, &expected) {
            Some(close) => format!("did you mean `{close}`? "),
            None => String::new(),
        };
        let unknown = super::words::shorten(&unknown, super::words::SHOWN_CHARS);
        return ConfigError {
            file: file.to_string(),
            line,
            key: super::words::shorten(&key, super::words::SHOWN_CHARS),
            message: format!("unknown key `{unknown}`"),
            fix: format!(
                "{hint}keys allowed {scope}: {} (full list: `opentiger config schema`)",
                expected.join(", ")
            ),
        };
    }
    if let Some((value, expected)) = parse_unknown_variant(&message) {
        let hint = match did_you_mean(&value, &expected) {
            Some(close) => format!("did you mean `{close}`? "),
            None => String::new(),
        };
        let value = super::words::shorten(&value, super::words::SHOWN_CHARS);
        return ConfigError {
            file: file.to_string(),
            line,
            key,
            message: format!("`{value}` is not an accepted value"),
            fix: format!("{hint}use one of: {}", expected.join(", ")),
        };
    }
    if let Some((line, message, fix)) =
        super::words::in_plain_words(&message, &key, text, line, &schema_json())
    {
        return ConfigError {
            file: file.to_string(),
            line,
            key,
            message,
            fix,
        };
    }
    let fix = if key.is_empty() {
        "fix the YAML syntax at that line (indentation, a missing `:` or an unclosed bracket)"
            .to_string()
    } else {
        format!(
            "give `{key}` a value of the right type (see `opentiger config schema`), or remove it to use the default"
        )
    };
    ConfigError {
        file: file.to_string(),
        line,
        key,
        message,
        fix,
    }
}

/// Whether the parser refused the text itself (YAML syntax), not a value of it.
fn is_syntax(err: &serde_saphyr::Error) -> bool {
    use serde_saphyr::{Error, ExternalMessageSource};
    let mut err = err;
    loop {
        match err {
            Error::WithSnippet { error, .. } | Error::AliasError { error, .. } => err = error,
            Error::ExternalMessage { source, .. } => {
                return matches!(**source, ExternalMessageSource::Parser(_))
            }
            Error::Eof { .. }
            | Error::UnknownAnchor { .. }
            | Error::ContainerEndMismatch { .. }
            | Error::FoldedBlockScalarMustIndentContent { .. }
            | Error::UnexpectedContainerEndWhileReadingKeyNode { .. } => return true,
            // Not a domain enum: anything else is about a value.
            _ => return false,
        }
    }
}

/// `unknown field `x`, expected one of a, b` or `expected `a``: serde's wording.
fn parse_unknown_field(message: &str) -> Option<(String, Vec<String>)> {
    let rest = message.strip_prefix("unknown field `")?;
    let (field, rest) = rest.split_once('`')?;
    Some((field.to_string(), expected_list(rest)))
}

fn parse_unknown_variant(message: &str) -> Option<(String, Vec<String>)> {
    let rest = message.strip_prefix("unknown variant `")?;
    let (value, rest) = rest.split_once('`')?;
    Some((value.to_string(), expected_list(rest)))
}

fn expected_list(rest: &str) -> Vec<String> {
    let list = rest
        .split_once("expected one of ")
        .map(|(_, l)| l)
        .or_else(|| rest.split_once("expected ").map(|(_, l)| l))
        .unwrap_or("");
    list.split(',')
        .map(|s| s.trim().trim_matches('`').to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// Checks that types alone cannot express.
fn validate(config: &Config, text: &str, file: &str) -> Result<(), ConfigError> {
    let fail = |key: &str, message: String, fix: &str| ConfigError {
        file: file.to_string(),
        line: line_of_key(text, key),
        key: key.to_string(),
        message,
        fix: fix.to_string(),
    };
    let roles = AgentRole::ALL;
    let named = |(key, message, fix): (String, String, String)| fail(&key, message, &fix);
    agent_values::fallback_entries(config).map_err(named)?;
    agent_values::sandbox_paths(config).map_err(named)?;
    // Issue 40: each value is checked where the user wrote it (`agents.default`, a role, a
    // fallback), so the error names that key and its line; paths the file system cannot hold
    // are refused here, not by the first tick that uses them.
    agent_values::values(config).map_err(named)?;
    agent_values::paths::check(config).map_err(named)?;
    super::providers::check(config).map_err(named)?;
    super::providers::agents(config, &agent_values::entries(config)).map_err(named)?;
    for (role, agent) in roles.into_iter().flat_map(|role| {
        config
            .agents
            .chain(role)
            .into_iter()
            .map(move |a| (role, a))
    }) {
        if agent.executor == ExecutorKind::Command
            && agent.command.as_ref().is_none_or(|c| c.is_empty())
        {
            // Name the entry the user wrote: a role that sets neither key inherits both from
            // `agents.default`, so the mistake is there, not on a role they never wrote.
            let own = config.agents.entry(role);
            let inherited = agent.config_key == format!("agents.{}", role.name())
                && own.executor.is_none()
                && own.command.is_none();
            let entry = if inherited {
                "agents.default".to_string()
            } else {
                agent.config_key.clone()
            };
            let mut error = fail(
                &format!("{entry}.command"),
                "`executor: command` needs the program to run".to_string(),
                "set `command:` to an argv list, e.g. [\"./my-agent.sh\", \"--fast\"]",
            );
            error.line = line_of_key(text, &format!("{entry}.executor")).or(error.line);
            return Err(error);
        }
    }
    for role in roles {
        let chain = config.agents.chain(role);
        for (i, agent) in chain.iter().enumerate() {
            let key = agent.executor_key();
            if let Some(first) = chain[..i].iter().find(|a| a.executor_key() == key) {
                return Err(fail(
                    &agent.config_key,
                    format!(
                        "runs the same executor as `{}` (`{key}`), so it can never stand in for it",
                        first.config_key
                    ),
                    "give it another executor or model, or remove it",
                ));
            }
        }
    }
    if config.base_branch.trim().is_empty() {
        return Err(fail(
            "base_branch",
            "must not be empty".to_string(),
            "name the branch work is merged into, e.g. main",
        ));
    }
    if config.limits.lease_minutes == 0 {
        return Err(fail(
            "limits.lease_minutes",
            "must be at least 1".to_string(),
            "use e.g. 90 (a little more than the job's timeout)",
        ));
    }
    let quota = &config.retry.quota;
    if !(quota.factor > 1.0 && quota.factor.is_finite()) {
        return Err(fail(
            "retry.quota.factor",
            format!("{} must be greater than 1", quota.factor),
            "use e.g. 2",
        ));
    }
    if !(0.0..=1.0).contains(&quota.jitter_ratio) {
        return Err(fail(
            "retry.quota.jitter_ratio",
            format!("{} is outside 0..1", quota.jitter_ratio),
            "use e.g. 0.2",
        ));
    }
    if quota.max_seconds < quota.base_seconds {
        return Err(fail(
            "retry.quota.max_seconds",
            format!(
                "{} is below base_seconds ({})",
                quota.max_seconds, quota.base_seconds
            ),
            "make max_seconds at least base_seconds",
        ));
    }
    for (key, value) in [
        ("budget.per_task_usd", config.budget.per_task_usd),
        ("budget.per_day_usd", config.budget.per_day_usd),
    ] {
        if !(value >= 0.0 && value.is_finite()) {
            return Err(fail(
                key,
                format!("{value} is not a spend limit"),
                "give a non-negative amount in USD",
            ));
        }
    }
    if config.escalation.reasons.approval.default == Some(super::EscalationDefault::RetryOnce) {
        return Err(fail(
            "escalation.reasons.approval.default",
            "`retry_once` does not answer an approval question (a task that never ran has nothing to retry)".to_string(),
            "use `cancel` or `wait`",
        ));
    }
    super::entry::check(config).map_err(|(key, message, fix)| fail(&key, message, &fix))?;
    super::network::check(&config.sandbox.network)
        .map_err(|(key, message, fix)| fail(&key, message, &fix))?;
    for (model, pricing) in &config.pricing {
        for (field, value) in [
            ("input_per_mtok", Some(pricing.input_per_mtok)),
            ("output_per_mtok", Some(pricing.output_per_mtok)),
            ("cached_input_per_mtok", pricing.cached_input_per_mtok),
        ] {
            if let Some(value) = value.filter(|v| !(*v >= 0.0 && v.is_finite())) {
                return Err(fail(
                    &format!("pricing.{model}.{field}"),
                    format!("{value} is not a price"),
                    "give a non-negative price in USD per million tokens",
                ));
            }
        }
    }
    Ok(())
}

/// The JSON Schema of the configuration, generated from the same types that parse it.
pub fn schema_json() -> String {
    let schema = schemars::schema_for!(Config);
    serde_json::to_string_pretty(&schema).unwrap_or_else(|_| "{}".to_string())
}

#[cfg(test)]
#[path = "load_tests.rs"]
mod tests;
