//! Blobs written into the runner's repository from bytes the runner read itself (issue 48):
//! one `git fast-import` takes each blob by its length (`blob`, `mark`, `data <n>`), so no
//! name an agent chose passes through a line-separated protocol to a program of the runner's
//! (before, `hash-object --stdin-paths` read a name holding a newline as two paths, the second
//! the agent's choice). The ids come back in a marks file in the runner's own folder. The
//! blobs go into one pack per import (`fastimport.unpackLimit=0`: no `unpack-objects` run to
//! loosen a small one); `git gc --auto` joins packs as it does fetched ones.
//!
//! Not here: reading the files (`read.rs`) or the trees (`trees.rs`).

use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin};

use crate::git::{Git, GitError};

/// Why a blob could not be added.
#[derive(Debug)]
pub(super) enum AddError {
    /// Reading the source failed (or it ended before its size): the caller names the file.
    Read(std::io::Error),
    Git(GitError),
}

/// One `git fast-import` writing blobs, started before its input is known.
pub(super) struct BlobWriter<'a> {
    repo: &'a Git,
    args: Vec<String>,
    child: Option<Child>,
    input: Option<BufWriter<ChildStdin>>,
    marks: PathBuf,
    count: usize,
}

impl<'a> BlobWriter<'a> {
    /// Starts git; the marks file goes to `marks` (a path of the runner's own folder).
    pub(super) fn start(repo: &'a Git, marks: &Path) -> Result<BlobWriter<'a>, GitError> {
        // Always one pack: below the unpack limit fast-import would start `unpack-objects`
        // to make loose objects of it, a process more per import.
        let args = vec![
            "-c".to_string(),
            "fastimport.unpackLimit=0".to_string(),
            "fast-import".to_string(),
            "--quiet".to_string(),
            "--done".to_string(),
            format!("--export-marks={}", marks.display()),
        ];
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut child = repo.spawn(&refs)?;
        let input = child
            .stdin
            .take()
            .map(|s| BufWriter::with_capacity(64 * 1024, s));
        Ok(BlobWriter {
            repo,
            args,
            child: Some(child),
            input,
            marks: marks.to_path_buf(),
            count: 0,
        })
    }

    /// Adds a blob of exactly `size` bytes read from `source`.
    pub(super) fn add(&mut self, size: u64, source: &mut impl Read) -> Result<(), AddError> {
        self.count += 1;
        let Some(mut input) = self.input.take() else {
            return Err(AddError::Git(self.failure("no pipe to git")));
        };
        let copied = copy_blob(&mut input, self.count, size, source);
        self.input = Some(input);
        copied.map_err(|e| match e {
            AddError::Read(e) => AddError::Read(e),
            AddError::Git(e) => AddError::Git(self.failure(e.detail)),
        })
    }

    /// Ends the stream and waits for git; the blob ids, in the order they were added.
    pub(super) fn finish(mut self) -> Result<Vec<String>, GitError> {
        if self.count == 0 {
            return Ok(Vec::new());
        }
        let ended = match self.input.take() {
            Some(mut input) => input
                .write_all(b"done\n")
                .and_then(|()| input.flush())
                .map_err(|e| self.failure(format!("writing to git: {e}"))),
            None => Err(self.failure("no pipe to git")),
        };
        let Some(child) = self.child.take() else {
            return Err(self.failure("finished twice"));
        };
        let refs: Vec<&str> = self.args.iter().map(String::as_str).collect();
        let finished = self.repo.finish(&refs, child);
        ended?;
        finished?;
        let text = std::fs::read_to_string(&self.marks)
            .map_err(|e| self.failure(format!("reading its marks: {e}")))?;
        let mut ids = vec![String::new(); self.count];
        for line in text.lines() {
            let parsed = line
                .strip_prefix(':')
                .and_then(|l| l.split_once(' '))
                .and_then(|(mark, id)| Some((mark.parse::<usize>().ok()?, id)));
            if let Some((mark, id)) = parsed.filter(|(m, _)| (1..=self.count).contains(m)) {
                ids[mark - 1] = id.trim().to_string();
            }
        }
        if ids.iter().any(String::is_empty) {
            return Err(self.failure(format!("{} blobs, fewer marks", self.count)));
        }
        Ok(ids)
    }

    fn failure(&self, detail: impl Into<String>) -> GitError {
        let refs: Vec<&str> = self.args.iter().map(String::as_str).collect();
        self.repo.failure(&refs, detail)
    }
}

/// One blob's command and bytes; a failed write is `AddError::Git` with what went wrong.
fn copy_blob(
    input: &mut impl Write,
    mark: usize,
    size: u64,
    source: &mut impl Read,
) -> Result<(), AddError> {
    let broken = |e: std::io::Error| {
        AddError::Git(GitError {
            dir: String::new(),
            args: String::new(),
            code: None,
            detail: format!("writing to git: {e}"),
        })
    };
    write!(input, "blob\nmark :{mark}\ndata {size}\n").map_err(broken)?;
    let mut buf = vec![0u8; 64 * 1024];
    let mut left = size;
    while left > 0 {
        let want = usize::try_from(left.min(buf.len() as u64)).unwrap_or(buf.len());
        let n = match source.read(&mut buf[..want]) {
            Ok(0) => {
                return Err(AddError::Read(std::io::Error::other(format!(
                    "it ended {left} bytes before the size it had"
                ))))
            }
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(AddError::Read(e)),
        };
        input.write_all(&buf[..n]).map_err(broken)?;
        left -= n as u64;
    }
    input.write_all(b"\n").map_err(broken)
}

impl Drop for BlobWriter<'_> {
    fn drop(&mut self) {
        // A stream without `done` makes git fail: nothing half-written is kept.
        drop(self.input.take());
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
            crate::reaper::release(child.id());
        }
    }
}
