//! `opentiger config show|schema|reference`: the effective configuration as YAML or JSON (file
//! values over defaults, each role's inherited agent and fallbacks resolved: what is printed is
//! what runs), the JSON Schema of `.opentiger.yml` for editors, and the configuration reference.
//! Not for: reading and checking the file, or making the schema (`config::load`), or the
//! reference's text (`config::reference`).

use clap::Subcommand;

use super::{Cli, CmdResult, Failure};
use crate::config::{self, AgentRole};
use crate::model::Role;

#[derive(Subcommand, Debug)]
pub enum ConfigCommand {
    /// Print the effective configuration (file values over defaults).
    Show {
        /// As JSON instead of YAML.
        #[arg(long)]
        json: bool,
    },
    /// Print the JSON Schema of `.opentiger.yml` (for editors).
    Schema,
    /// Print the configuration reference (every key, its type, default and meaning) as
    /// Markdown: the page docs/configuration.md.
    Reference,
}

pub fn run(cli: &Cli, cmd: &ConfigCommand) -> CmdResult {
    match cmd {
        ConfigCommand::Schema => {
            outln!("{}", config::schema_json());
            Ok(())
        }
        ConfigCommand::Reference => {
            out!("{}", config::reference_markdown());
            Ok(())
        }
        ConfigCommand::Show { json } => {
            let path = cli.config_path();
            let (mut cfg, source) =
                config::load_checked(&path, cli.config.is_some(), &crate::verify::config_problem)?;
            if let Some(mode) = &cli.mode {
                cfg.mode = mode
                    .parse()
                    .map_err(|e| Failure::usage(format!("--mode: {e}")))?;
            }
            // Resolve the inherited and mode-dependent values so what is printed is what runs.
            let mut effective =
                serde_json::to_value(&cfg).map_err(|e| Failure::tick(e.to_string()))?;
            effective["state"]["store"] = serde_json::json!(match cfg.store_kind() {
                config::StoreKind::Branch => "branch",
                config::StoreKind::File => "file",
            });
            for role in [
                AgentRole::Planner,
                AgentRole::Task(Role::Worker),
                AgentRole::Task(Role::Tester),
                AgentRole::Task(Role::Docser),
                AgentRole::Judge,
            ] {
                effective["agents"][role.name()] = serde_json::to_value(cfg.agents.effective(role))
                    .map_err(|e| Failure::tick(e.to_string()))?;
                let fallbacks = &cfg.agents.chain(role)[1..];
                if !fallbacks.is_empty() {
                    effective["agents"][role.name()]["fallbacks"] = serde_json::to_value(fallbacks)
                        .map_err(|e| Failure::tick(e.to_string()))?;
                }
            }
            if *json {
                outln!(
                    "{}",
                    serde_json::to_string_pretty(&effective)
                        .map_err(|e| Failure::tick(e.to_string()))?
                );
            } else {
                outln!("# effective configuration from {source}");
                let yaml = serde_saphyr::to_string(&effective)
                    .map_err(|e| Failure::tick(e.to_string()))?;
                out!("{yaml}");
            }
            Ok(())
        }
    }
}
