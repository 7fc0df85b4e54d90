//! Checks of the `agents` entries and the sandbox's paths as the user wrote them, an error naming
//! `agents.default` when that is where the value is, not each role inheriting it (issue 40):
//! what a fallback may not say, paths inside `$HOME` and absolute folders, values no type rules
//! out (a time limit of 0, a negative price). Each returns the first problem as `(key, message,
//! fix)`; `config::load` adds the file and the line. Not for: paths too long for the file system
//! (`agent_values::paths`), or whether an agent's program and key are here (`executor::chain`).

use crate::config::{AgentConfig, AgentRole, Config};

#[path = "paths.rs"]
pub(super) mod paths;

/// Every `agents` entry as written, with its key: `agents.default`, each role's, and each of
/// their fallbacks (`agents.worker.fallbacks[0]`).
pub(super) fn entries(config: &Config) -> Vec<(String, &AgentConfig)> {
    let mut lists = vec![("agents.default".to_string(), &config.agents.default)];
    for role in AgentRole::ALL {
        lists.push((format!("agents.{}", role.name()), config.agents.entry(role)));
    }
    let mut out = Vec::new();
    for (owner, agent) in lists {
        out.push((owner.clone(), agent));
        for (i, f) in agent.fallbacks.iter().flatten().enumerate() {
            out.push((format!("{owner}.fallbacks[{i}]"), f));
        }
    }
    out
}

/// Time limits, turn caps and prices, where they are set.
pub(super) fn values(config: &Config) -> Result<(), (String, String, String)> {
    let fail = |key: String, message: String, fix: &str| Err((key, message, fix.to_string()));
    for (at, entry) in entries(config) {
        if let Some(t) = entry
            .timeout_minutes
            .filter(|t| !(*t > 0.0 && t.is_finite()))
        {
            return fail(
                format!("{at}.timeout_minutes"),
                format!("{t} is not a time limit"),
                "give a timeout in minutes, e.g. 30 (fractions allowed)",
            );
        }
        if let Some(m) = entry.idle_minutes.filter(|m| !(*m >= 0.0 && m.is_finite())) {
            return fail(
                format!("{at}.idle_minutes"),
                format!("{m} is not a time"),
                "give minutes, e.g. 10, or 0 to never end an idle agent",
            );
        }
        if entry.max_turns == Some(0) {
            return fail(
                format!("{at}.max_turns"),
                "must be at least 1".to_string(),
                "give the most turns one run may take, e.g. 100",
            );
        }
        if let Some(pricing) = &entry.pricing {
            let prices = [
                ("input_per_mtok", Some(pricing.input_per_mtok)),
                ("output_per_mtok", Some(pricing.output_per_mtok)),
                ("cached_input_per_mtok", pricing.cached_input_per_mtok),
            ];
            for (field, price) in prices {
                if let Some(price) = price.filter(|p| !(*p >= 0.0 && p.is_finite())) {
                    return fail(
                        format!("{at}.pricing.{field}"),
                        format!("{price} is not a price"),
                        "give a non-negative amount in USD per million tokens, e.g. 3",
                    );
                }
            }
        }
    }
    Ok(())
}

/// What a fallback entry may not say, whatever it inherits: `(key, message, fix)`.
pub(super) fn fallback_entries(config: &Config) -> Result<(), (String, String, String)> {
    let mut lists = vec![("agents.default".to_string(), &config.agents.default)];
    for role in AgentRole::ALL {
        let owner = format!("agents.{}", role.name());
        lists.push((owner, config.agents.entry(role)));
    }
    for (owner, agent) in lists {
        for (i, entry) in agent.fallbacks.iter().flatten().enumerate() {
            let at = format!("{owner}.fallbacks[{i}]");
            if entry.fallbacks.is_some() {
                return Err((
                    format!("{at}.fallbacks"),
                    "a fallback cannot have fallbacks of its own".to_string(),
                    format!(
                        "list every executor in `{owner}.fallbacks`, in the order they are tried"
                    ),
                ));
            }
            let role_keys = [
                ("count", entry.count.is_some()),
                ("review", entry.review.is_some()),
            ];
            if let Some((name, _)) = role_keys.iter().find(|(_, set)| *set) {
                return Err((
                    format!("{at}.{name}"),
                    format!("`{name}` belongs to the role, not to one of its executors"),
                    format!("set it as `{owner}.{name}`"),
                ));
            }
        }
    }
    Ok(())
}

/// `agents.*.home_files` name paths inside `$HOME`; `sandbox.writable` and `sandbox.readable`
/// name absolute paths.
pub(super) fn sandbox_paths(config: &Config) -> Result<(), (String, String, String)> {
    for (at, entry) in entries(config) {
        for (i, file) in entry.home_files.iter().flatten().enumerate() {
            let path = std::path::Path::new(file.as_str());
            let inside = !file.trim().is_empty()
                && path.is_relative()
                && path
                    .components()
                    .all(|c| matches!(c, std::path::Component::Normal(_)));
            if !inside {
                return Err((
                    format!("{at}.home_files[{i}]"),
                    format!("`{file}` is not a path inside $HOME"),
                    "give paths relative to $HOME without `..`, e.g. `.claude.json` or `.codex/`"
                        .to_string(),
                ));
            }
        }
    }
    let listed = [
        (
            "writable",
            &config.sandbox.writable,
            "/home/runner/.cache/sccache",
        ),
        ("readable", &config.sandbox.readable, "/home/runner/.sdkman"),
    ];
    for (key, paths, example) in listed {
        for (i, dir) in paths.iter().enumerate() {
            let path = std::path::Path::new(dir.as_str());
            if !path.is_absolute() || path == std::path::Path::new("/") {
                return Err((
                    format!("sandbox.{key}[{i}]"),
                    format!("`{dir}` is not an absolute path below /"),
                    format!("name it by its absolute path, e.g. {example}"),
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::config::load_str;

    /// Issue 40: a value is named where the user wrote it — `agents.default`, not each role
    /// that inherits it — on its own line.
    #[test]
    fn values_are_named_as_written() {
        #[rustfmt::skip]
        let cases: &[(&str, u64, &str, &str)] = &[
            ("agents:\n  default:\n    timeout_minutes: 0\n", 3, "agents.default.timeout_minutes", "0 is not a time limit"),
            ("agents:\n  default:\n    max_turns: 0\n", 3, "agents.default.max_turns", "at least 1"),
            ("agents:\n  default:\n    idle_minutes: -1\n", 3, "agents.default.idle_minutes", "-1 is not a time"),
            ("agents:\n  default:\n    executor: claude-code\n    pricing:\n      input_per_mtok: -1\n      output_per_mtok: 1\n", 5,
                "agents.default.pricing.input_per_mtok", "-1 is not a price"),
            ("agents:\n  judge:\n    timeout_minutes: 0\n", 3, "agents.judge.timeout_minutes", "not a time limit"),
            ("agents:\n  worker:\n    fallbacks:\n      - executor: codex\n        max_turns: 0\n", 5,
                "agents.worker.fallbacks[0].max_turns", "at least 1"),
        ];
        for (text, line, key, says) in cases {
            let err = load_str(text, ".opentiger.yml").unwrap_err();
            assert_eq!(err.key, *key, "{text:?}: {err}");
            assert_eq!(err.line, Some(*line), "{text:?}: {err}");
            assert!(err.message.contains(says), "{text:?}: {err}");
        }
    }
}
