//! The result folder of `opentiger work --run ID --output DIR`: what a job that ran the agent
//! with no forge token hands to the job that holds one (`opentiger apply DIR`, the "safe
//! outputs" split, DESIGN §10). Two files, each 0600 in a folder of mode 0700:
//!
//! - `result.json`: the [`ResultRecord`] — run, task, the commit the run started from, the head
//!   it committed, and its outcome as `work --run` would record it, redacted;
//! - `change.bundle`: a git bundle of the task branch from the start commit to the head
//!   (absent when the run committed nothing new).
//!
//! Everything read back from a folder is untrusted: the files are read with bounds
//! ([`crate::bounded`]) and the bundle's header is parsed here so `apply` can compare it with
//! the record before git touches the pack. Not here: whether the change may be applied (that is
//! `tick::apply`, which checks it again against the state, the repository and the policy).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::engine::outcome::RunOutcome;
use crate::git::Git;
use crate::model::FailureCode;
use crate::redact::Redactor;
use crate::runner::work::WorkResult;
use crate::store::RunRecord;

/// The record's file name in the folder.
pub const RECORD_FILE: &str = "result.json";
/// The bundle's file name in the folder.
pub const BUNDLE_FILE: &str = "change.bundle";
/// The most a record may hold.
const RECORD_MAX_BYTES: u64 = 1024 * 1024;
/// The most of a bundle's header that is read (its refs and prerequisites).
const HEADER_MAX_BYTES: usize = 64 * 1024;
/// The most a bundle may hold.
pub const BUNDLE_MAX_BYTES: u64 = 512 * 1024 * 1024;
/// The record format this build writes and reads.
const FORMAT: u32 = 1;

/// What went wrong with a result folder.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    #[error("{path}: {detail}\n  fix: {fix}")]
    Folder {
        path: PathBuf,
        detail: String,
        fix: &'static str,
    },
    #[error("{path}: the file {why}")]
    Unreadable { path: PathBuf, why: String },
    #[error("{path}: not a result record of this opentiger: {detail}")]
    Malformed { path: PathBuf, detail: String },
    #[error(transparent)]
    Git(#[from] crate::git::GitError),
}

/// A run's outcome as written by `work --output` (all text redacted).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResultRecord {
    pub format: u32,
    pub run_id: String,
    pub task_id: String,
    pub outcome: OutcomeRecord,
    /// The run as `work --run` would record it; `start_sha` (the commit the run started from)
    /// is the bundle's prerequisite, `head_sha` its head.
    pub run: RunRecord,
}

/// [`RunOutcome`] with its failure code as text.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutcomeRecord {
    pub success: bool,
    pub failure_code: Option<String>,
    pub message: String,
    pub no_changes: bool,
}

impl ResultRecord {
    /// The record of a finished run, every text through `redactor`.
    pub fn of(run_id: &str, task_id: &str, result: &WorkResult, redactor: &Redactor) -> Self {
        ResultRecord {
            format: FORMAT,
            run_id: run_id.to_string(),
            task_id: task_id.to_string(),
            outcome: OutcomeRecord {
                success: result.outcome.success,
                failure_code: result.outcome.failure_code.map(|c| c.as_str().to_string()),
                message: redactor.redact(&result.outcome.message),
                no_changes: result.outcome.no_changes,
            },
            run: redacted(&result.record, redactor),
        }
    }

    /// The commit the run started from.
    pub fn start_sha(&self) -> Option<&str> {
        self.run.start_sha.as_deref()
    }

    /// The commit the run left on the task branch, if any.
    pub fn head_sha(&self) -> Option<&str> {
        self.run.head_sha.as_deref()
    }

    /// The run's result to record, on `branch` and with no PR yet, every text through
    /// `redactor` again (the applying job knows secrets the work job did not).
    pub fn to_result(&self, branch: &str, redactor: &Redactor) -> Result<WorkResult, String> {
        let failure_code = match &self.outcome.failure_code {
            Some(code) => Some(
                code.parse::<FailureCode>()
                    .map_err(|e| format!("failure_code: {e}"))?,
            ),
            None => None,
        };
        let mut record = redacted(&self.run, redactor);
        record.branch = Some(branch.to_string());
        record.pr_number = None;
        Ok(WorkResult {
            outcome: RunOutcome {
                success: self.outcome.success,
                failure_code,
                message: redactor.redact(&self.outcome.message),
                no_changes: self.outcome.no_changes,
            },
            record,
        })
    }
}

/// `record` with every text an agent (or the code it changed, through a verification
/// command's output) may have written through `redactor`; the verification report bounded
/// (`apply` publishes it in a check run).
fn redacted(record: &RunRecord, redactor: &Redactor) -> RunRecord {
    let redact = |t: &Option<String>| t.as_deref().map(|t| redactor.redact(t));
    let verification = record
        .verification
        .iter()
        .take(VERIFICATION_COMMANDS_MAX)
        .map(|c| crate::model::checks::CommandReport {
            command: redactor.excerpt(&c.command, 500),
            source: redactor.excerpt(&c.source, 40),
            tail: redactor.excerpt(&c.tail, 2000),
            ..c.clone()
        })
        .collect();
    RunRecord {
        error: redact(&record.error),
        summary: redact(&record.summary),
        verification,
        ..record.clone()
    }
}

/// Verification commands a result carries at most.
const VERIFICATION_COMMANDS_MAX: usize = 50;

/// Makes `dir` a private, empty result folder (mode 0700); an existing folder must be empty.
pub fn prepare(dir: &Path) -> Result<(), OutputError> {
    let folder = |detail: String, fix| OutputError::Folder {
        path: dir.to_path_buf(),
        detail,
        fix,
    };
    match std::fs::read_dir(dir) {
        Ok(mut entries) => {
            if entries.next().is_some() {
                return Err(folder(
                    "the output folder is not empty".to_string(),
                    "pass a new or empty folder to `--output`",
                ));
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(dir).map_err(|e| {
                folder(
                    format!("could not create the folder: {e}"),
                    "pass a folder this user may create",
                )
            })?;
        }
        Err(e) => {
            return Err(folder(
                format!("could not read the folder: {e}"),
                "pass a folder this user may read",
            ))
        }
    }
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(|e| {
        folder(
            format!("could not make the folder private: {e}"),
            "pass a folder this user owns",
        )
    })
}

/// Writes `record` into the folder `prepare` made and, when the run committed something new, a
/// bundle of `branch` from the record's start to its head (from `repo`) — never for a change
/// the threat scan held (issue 36): the folder leaves the job, the held change does not.
pub fn write(
    dir: &Path,
    record: &ResultRecord,
    repo: &Git,
    branch: &str,
) -> Result<(), OutputError> {
    if let (Some(start), Some(head), None) =
        (record.start_sha(), record.head_sha(), &record.run.held)
    {
        if start != head {
            let bundle = dir.join(BUNDLE_FILE);
            let bundle_text = bundle.display().to_string();
            let exclude = format!("^{start}");
            repo.run(&[
                "bundle",
                "create",
                "--quiet",
                &bundle_text,
                &format!("refs/heads/{branch}"),
                &exclude,
            ])?;
            private(&bundle)?;
        }
    }
    let json = serde_json::to_vec_pretty(record).map_err(|e| OutputError::Malformed {
        path: dir.join(RECORD_FILE),
        detail: e.to_string(),
    })?;
    let path = dir.join(RECORD_FILE);
    crate::scratch::write_private(&path, &json).map_err(|e| OutputError::Unreadable {
        path,
        why: format!("could not be written ({e})"),
    })
}

fn private(path: &Path) -> Result<(), OutputError> {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(|e| {
        OutputError::Unreadable {
            path: path.to_path_buf(),
            why: format!("could not be made private ({e})"),
        }
    })
}

/// What a result folder holds: the record, and the bundle's path and header if there is one.
pub struct Output {
    pub record: ResultRecord,
    pub bundle: Option<(PathBuf, BundleHeader)>,
}

/// Reads a result folder, with bounds, trusting nothing in it.
pub fn read(dir: &Path) -> Result<Output, OutputError> {
    let path = dir.join(RECORD_FILE);
    let bytes = crate::bounded::read_regular(&path, RECORD_MAX_BYTES, "1 MiB")
        .map_err(|why| OutputError::Unreadable {
            path: path.clone(),
            why: why.to_string(),
        })?
        .ok_or_else(|| OutputError::Folder {
            path: dir.to_path_buf(),
            detail: format!("no {RECORD_FILE} here"),
            fix: "pass the folder `opentiger work --run ID --output DIR` wrote (the work job's artifact)",
        })?;
    let record: ResultRecord =
        serde_json::from_slice(&bytes).map_err(|e| OutputError::Malformed {
            path: path.clone(),
            detail: e.to_string(),
        })?;
    if record.format != FORMAT {
        return Err(OutputError::Malformed {
            path,
            detail: format!(
                "format {} (this opentiger reads {FORMAT}): run the same opentiger release in both jobs",
                record.format
            ),
        });
    }
    let bundle = dir.join(BUNDLE_FILE);
    let header = read_header(&bundle)?;
    Ok(Output {
        record,
        bundle: header.map(|h| (bundle, h)),
    })
}

/// A git bundle's header: what the receiving repository must already have, and the refs it
/// carries.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BundleHeader {
    pub prerequisites: Vec<String>,
    /// `(sha, ref)`.
    pub heads: Vec<(String, String)>,
}

fn read_header(path: &Path) -> Result<Option<BundleHeader>, OutputError> {
    let unreadable = |why: String| OutputError::Unreadable {
        path: path.to_path_buf(),
        why,
    };
    // A regular file within the bound; only its head is parsed here, git reads the pack.
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(_) => return Ok(None),
    };
    if !meta.file_type().is_file() {
        return Err(unreadable("is not a regular file".to_string()));
    }
    if meta.len() > BUNDLE_MAX_BYTES {
        return Err(unreadable(format!(
            "holds {} bytes, more than the 512 MiB allowed",
            meta.len()
        )));
    }
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| unreadable(format!("could not be opened ({e})")))?;
    let mut head = Vec::new();
    file.take(HEADER_MAX_BYTES as u64)
        .read_to_end(&mut head)
        .map_err(|e| unreadable(format!("could not be read ({e})")))?;
    parse_header(&head)
        .map(Some)
        .map_err(|detail| OutputError::Malformed {
            path: path.to_path_buf(),
            detail,
        })
}

/// Parses the text before a bundle's pack: a `# v2 git bundle` or `# v3 git bundle` line,
/// (v3) `@capability` lines, `-<sha> [comment]` prerequisites and `<sha> <ref>` heads, then an
/// empty line.
pub fn parse_header(bytes: &[u8]) -> Result<BundleHeader, String> {
    let end = bytes
        .windows(2)
        .position(|w| w == b"\n\n")
        .ok_or("no end of the bundle header within 64 KiB")?;
    let text = std::str::from_utf8(&bytes[..end]).map_err(|_| "a header that is not text")?;
    let mut lines = text.lines();
    match lines.next() {
        Some("# v2 git bundle" | "# v3 git bundle") => {}
        _ => return Err("not a git bundle (v2 or v3)".to_string()),
    }
    let mut header = BundleHeader::default();
    for line in lines {
        if line.starts_with('@') {
            continue;
        }
        if let Some(rest) = line.strip_prefix('-') {
            let sha = rest.split(' ').next().unwrap_or_default();
            header.prerequisites.push(object_id(sha)?);
        } else {
            let (sha, name) = line
                .split_once(' ')
                .ok_or_else(|| format!("a header line without a ref: {line:?}"))?;
            header.heads.push((object_id(sha)?, name.to_string()));
        }
    }
    Ok(header)
}

fn object_id(text: &str) -> Result<String, String> {
    let ok = matches!(text.len(), 40 | 64) && text.bytes().all(|b| b.is_ascii_hexdigit());
    if ok {
        Ok(text.to_ascii_lowercase())
    } else {
        Err(format!("{text:?} is not an object id"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "1111111111111111111111111111111111111111";
    const B: &str = "2222222222222222222222222222222222222222";

    #[test]
    fn bundle_headers_are_parsed_and_anything_else_refused() {
        let v2 =
            format!("# v2 git bundle\n-{A} base commit\n{B} refs/heads/opentiger/task-1\n\nPACK");
        assert_eq!(
            parse_header(v2.as_bytes()),
            Ok(BundleHeader {
                prerequisites: vec![A.to_string()],
                heads: vec![(B.to_string(), "refs/heads/opentiger/task-1".to_string())],
            })
        );
        let v3 = format!("# v3 git bundle\n@object-format=sha1\n{B} refs/heads/x\n\nPACK");
        assert_eq!(parse_header(v3.as_bytes()).unwrap().heads.len(), 1);
        let cases = [
            "PACK".to_string(),
            format!("# v9 git bundle\n{B} refs/heads/x\n\n"),
            format!("# v2 git bundle\n-nothex\n{B} refs/heads/x\n\n"),
            format!("# v2 git bundle\n{B}\n\n"),
            format!("# v2 git bundle\n{B} refs/heads/x\n"),
        ];
        for case in cases {
            assert!(parse_header(case.as_bytes()).is_err(), "{case:?}");
        }
    }

    #[test]
    fn a_record_round_trips_and_is_redacted_both_ways() {
        let secret = "sk-ant-api03-SECRETsecretSECRETsecret0123456789";
        let redactor = Redactor::new([secret.to_string()]);
        let result = WorkResult {
            outcome: RunOutcome {
                success: false,
                failure_code: Some(FailureCode::PolicyViolation),
                message: format!("leaked {secret}"),
                no_changes: false,
            },
            record: RunRecord {
                error: Some(format!("error {secret}")),
                start_sha: Some(A.to_string()),
                head_sha: Some(B.to_string()),
                cost_usd: 0.25,
                ..RunRecord::default()
            },
        };
        let record = ResultRecord::of("r1", "t1", &result, &redactor);
        let json = serde_json::to_string(&record).unwrap();
        assert!(!json.contains(secret), "{json}");
        let back = record.to_result("opentiger/task-t1", &redactor).unwrap();
        assert_eq!(
            back.outcome.failure_code,
            Some(FailureCode::PolicyViolation)
        );
        assert_eq!(back.record.head_sha.as_deref(), Some(B));
        assert_eq!(back.record.branch.as_deref(), Some("opentiger/task-t1"));
        assert_eq!(back.record.cost_usd, 0.25);
        // A record written without the secret's value is redacted again where it is known.
        let mut raw = record.clone();
        raw.outcome.message = format!("again {secret}");
        let back = raw.to_result("b", &redactor).unwrap();
        assert!(!back.outcome.message.contains(secret));
        raw.outcome.failure_code = Some("no_such_code".to_string());
        assert!(raw.to_result("b", &redactor).is_err());
    }
}
