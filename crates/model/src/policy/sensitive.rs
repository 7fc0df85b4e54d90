//! Paths that wait for a person (issue 48): besides the paths no agent may change at all
//! (`policy.denied_paths`: workflows, `.opentiger*`), a change to what decides who reviews,
//! what runs in CI or on a developer's machine, or where dependencies come from is held for a
//! person, bound to its commit as the threat scan's holds are. [`DEFAULT_HELD`] lists them
//! with the reason for each; `policy.held_paths` adds to it, `policy.held_paths_except` takes
//! paths out. Matched as written and lowercased (a checkout on macOS or Windows reads
//! `.GitHub` as `.github`). Pure.
//!
//! Not for: what a hold does (`engine::outcome`, `engine::scan`) or finding the changed paths
//! (`runner::content`).

use super::{Glob, GlobError};

/// The paths held by default, each with why: what a change there can do.
pub const DEFAULT_HELD: &[(&str, &str)] = &[
    (".github/**", "GitHub reads it: composite actions with their `uses:`, CODEOWNERS (who reviews), dependabot (where updates come from), workflow templates"),
    ("CODEOWNERS", "who must review a change"),
    ("docs/CODEOWNERS", "who must review a change"),
    (".gitlab-ci.yml", "what GitLab CI runs, with its secrets"),
    (".gitlab/**", "GitLab's CI includes, CODEOWNERS and templates"),
    (".circleci/**", "what CircleCI runs, with its secrets"),
    (".travis.yml", "what Travis CI runs, with its secrets"),
    ("azure-pipelines*.yml", "what Azure Pipelines runs, with its secrets"),
    (".azure-pipelines/**", "what Azure Pipelines runs, with its secrets"),
    (".buildkite/**", "what Buildkite runs, with its secrets"),
    ("Jenkinsfile", "what Jenkins runs, with its secrets"),
    (".drone.yml", "what Drone runs, with its secrets"),
    ("bitbucket-pipelines.yml", "what Bitbucket Pipelines runs, with its secrets"),
    (".woodpecker.yml", "what Woodpecker CI runs, with its secrets"),
    (".woodpecker/**", "what Woodpecker CI runs, with its secrets"),
    ("appveyor.yml", "what AppVeyor runs, with its secrets"),
    (".appveyor.yml", "what AppVeyor runs, with its secrets"),
    (".cirrus.yml", "what Cirrus CI runs, with its secrets"),
    (".ci/**", "the repository's own CI scripts"),
    (".husky/**", "git hooks: what runs on a developer's machine at each commit or push"),
    (".githooks/**", "git hooks: what runs on a developer's machine at each commit or push"),
    (".pre-commit-config.yaml", "pre-commit hooks: what runs, and from which repositories, at each commit"),
    (".pre-commit-hooks.yaml", "hooks this repository offers to others' pre-commit"),
    ("lefthook.yml", "lefthook: git hooks run on a developer's machine"),
    ("lefthook.yaml", "lefthook: git hooks run on a developer's machine"),
    (".lefthook.yml", "lefthook: git hooks run on a developer's machine"),
    (".lefthook.yaml", "lefthook: git hooks run on a developer's machine"),
    ("lefthook-local.yml", "lefthook: git hooks run on a developer's machine"),
    (".lefthook/**", "lefthook's hook scripts"),
    (".lintstagedrc*", "lint-staged: commands run at each commit"),
    ("lint-staged.config.*", "lint-staged: commands run at each commit"),
    (".overcommit.yml", "overcommit: git hooks run on a developer's machine"),
    ("**/.cargo/config", "cargo's configuration: a `runner`, a `rustc-wrapper`, aliases and source replacement run programs or change where crates come from"),
    ("**/.cargo/config.toml", "cargo's configuration: a `runner`, a `rustc-wrapper`, aliases and source replacement run programs or change where crates come from"),
    ("rust-toolchain", "which toolchain rustup installs and runs (a `path` runs any)"),
    ("rust-toolchain.toml", "which toolchain rustup installs and runs (a `path` runs any)"),
    ("**/.npmrc", "npm's registry, tokens and scripts settings"),
    ("**/.yarnrc", "yarn's registry and settings"),
    ("**/.yarnrc.yml", "yarn's registry, plugins and `yarnPath` (the program yarn runs)"),
    (".yarn/plugins/**", "code yarn runs"),
    (".yarn/releases/**", "the yarn program itself, run by `yarnPath`"),
    ("**/.pnpmfile.cjs", "pnpm hooks: code run at every install"),
    ("**/bunfig.toml", "bun's registry and preload scripts"),
    ("**/pip.conf", "pip's package index"),
    ("**/pip.ini", "pip's package index"),
    ("**/.pypirc", "where Python packages are uploaded, with credentials"),
    ("**/uv.toml", "uv's package index"),
    ("**/poetry.toml", "poetry's sources and settings"),
    ("**/.condarc", "conda's channels"),
    ("**/.gemrc", "RubyGems' sources"),
    ("**/.bundle/config", "bundler's sources and mirrors"),
    ("**/nuget.config", "NuGet's package sources"),
    (".mvn/**", "maven's wrapper and extensions: code maven downloads and runs"),
    ("**/gradle/wrapper/**", "the gradle wrapper: which gradle (from which URL) runs"),
    (".gitmodules", "where submodules are fetched from"),
    (".envrc", "direnv runs it when a developer enters the folder"),
    (".devcontainer/**", "what runs when a dev container or a Codespace is made"),
    (".devcontainer.json", "what runs when a dev container or a Codespace is made"),
    (".vscode/**", "editor tasks and settings that run programs when the folder opens"),
    ("mise.toml", "mise: tools it installs, tasks and hooks it runs"),
    (".mise.toml", "mise: tools it installs, tasks and hooks it runs"),
];

/// The held paths in force: the defaults and `policy.held_paths`, less
/// `policy.held_paths_except`.
#[derive(Clone, Debug)]
pub struct HeldPaths {
    held: Vec<(Glob, String)>,
    except: Vec<Glob>,
}

impl HeldPaths {
    /// The defaults plus `extra` (held because a person listed them), less `except`.
    pub fn new(extra: &[String], except: &[String]) -> Result<HeldPaths, GlobError> {
        let mut held = Vec::new();
        for (pattern, why) in DEFAULT_HELD {
            held.push((Glob::new(pattern)?, (*why).to_string()));
        }
        for pattern in extra {
            held.push((
                Glob::new(pattern)?,
                "listed in policy.held_paths".to_string(),
            ));
        }
        let except = except
            .iter()
            .map(|p| Glob::new(p))
            .collect::<Result<_, _>>()?;
        Ok(HeldPaths { held, except })
    }

    /// Why a change to `path` waits for a person (the pattern and the reason), if it does.
    pub fn held(&self, path: &str) -> Option<(&str, &str)> {
        let lower = path.to_lowercase();
        let matches = |g: &Glob| g.matches(path) || g.matches(&lower);
        if self.except.iter().any(matches) {
            return None;
        }
        self.held
            .iter()
            .find(|(g, _)| matches(g))
            .map(|(g, why)| (g.as_str(), why.as_str()))
    }

    /// Every pattern held, with its reason (for `doctor`).
    pub fn patterns(&self) -> impl Iterator<Item = (&str, &str)> {
        self.held.iter().map(|(g, why)| (g.as_str(), why.as_str()))
    }

    /// The patterns taken out.
    pub fn exceptions(&self) -> impl Iterator<Item = &str> {
        self.except.iter().map(Glob::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_decides_review_ci_and_sources_is_held_and_settings_move_it() {
        let paths = HeldPaths::new(
            &["deploy/**".to_string()],
            &[".github/ISSUE_TEMPLATE/**".to_string()],
        )
        .unwrap();
        #[rustfmt::skip]
        let cases: Vec<(&str, Option<&str>)> = vec![
            (".github/actions/setup/action.yml", Some(".github/**")),
            (".github/CODEOWNERS", Some(".github/**")),
            (".github/dependabot.yml", Some(".github/**")),
            (".GitHub/CODEOWNERS", Some(".github/**")),
            (".cargo/config.toml", Some("**/.cargo/config.toml")),
            ("crates/x/.cargo/config", Some("**/.cargo/config")),
            (".husky/pre-commit", Some(".husky/**")),
            (".pre-commit-config.yaml", Some(".pre-commit-config.yaml")),
            ("web/.npmrc", Some("**/.npmrc")),
            ("gradle/wrapper/gradle-wrapper.properties", Some("**/gradle/wrapper/**")),
            ("deploy/prod.sh", Some("deploy/**")),
            (".github/ISSUE_TEMPLATE/bug.yml", None),
            ("src/main.rs", None),
            ("docs/github.md", None),
            ("Cargo.toml", None),
        ];
        for (path, want) in cases {
            assert_eq!(paths.held(path).map(|(p, _)| p), want, "{path}");
        }
        assert!(paths
            .held("deploy/x")
            .is_some_and(|(_, why)| why.contains("policy.held_paths")));
    }

    #[test]
    fn every_default_compiles_and_says_why() {
        for (pattern, why) in DEFAULT_HELD {
            assert!(Glob::new(pattern).is_ok(), "{pattern}");
            assert!(why.len() > 10, "{pattern}");
        }
    }
}
