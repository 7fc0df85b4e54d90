//! One `git cat-file --batch` process, as the state's loader talks to it: ask for an object by
//! name, read the header announcing it, then its content; a clean finish or a kill on drop.
//!
//! Not here: what the objects are (the chunk layout and the manifest, in [`super::chunks`]).

use std::io::{BufRead, BufReader, Read, Write};

use crate::git::{Git, GitError};

/// `cat-file --batch` with small pack windows and delta cache: reading every chunk would
/// otherwise keep the whole pack mapped and resident, a state's worth of memory.
pub(super) const BATCH: &[&str] = &[
    "-c",
    "core.packedGitWindowSize=1m",
    "-c",
    "core.packedGitLimit=8m",
    "-c",
    "core.deltaBaseCacheLimit=4m",
    "cat-file",
    "--batch",
];

/// One `git cat-file --batch` process.
pub(super) struct Batch<'a> {
    pub(super) git: &'a Git,
    child: std::process::Child,
    pub(super) input: Option<std::process::ChildStdin>,
    pub(super) output: BufReader<std::process::ChildStdout>,
}

/// An object as `cat-file --batch` announces it.
pub(super) enum Object {
    Missing,
    Found { id: String, kind: String, size: u64 },
}

impl<'a> Batch<'a> {
    /// Starts the process; `buffer` is the capacity of the reader on its output (an object's
    /// size and its header, so most objects are read in one piece).
    pub(super) fn start(git: &'a Git, buffer: usize) -> Result<Batch<'a>, GitError> {
        let mut child = git.spawn(BATCH)?;
        let (Some(input), Some(output)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(git.failure(BATCH, "no pipes to the process"));
        };
        Ok(Batch {
            git,
            child,
            input: Some(input),
            output: BufReader::with_capacity(buffer, output),
        })
    }

    pub(super) fn broken(&self, e: std::io::Error) -> GitError {
        self.git.failure(BATCH, format!("talking to git: {e}"))
    }

    /// Asks for one object and reads its header (its content follows, see [`Batch::content`]).
    pub(super) fn ask(&mut self, name: &str) -> Result<Object, GitError> {
        let input = self
            .input
            .as_mut()
            .ok_or_else(|| self.git.failure(BATCH, "input already closed"))?;
        let sent = writeln!(input, "{name}").and_then(|()| input.flush());
        sent.map_err(|e| self.broken(e))?;
        self.header()
    }

    pub(super) fn header(&mut self) -> Result<Object, GitError> {
        let mut line = String::new();
        self.output
            .read_line(&mut line)
            .map_err(|e| self.broken(e))?;
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            [_, "missing"] | [_, "ambiguous"] => Ok(Object::Missing),
            [id, kind, size] => Ok(Object::Found {
                id: id.to_string(),
                kind: kind.to_string(),
                size: size
                    .parse()
                    .map_err(|_| self.git.failure(BATCH, format!("bad header `{line}`")))?,
            }),
            _ => Err(self
                .git
                .failure(BATCH, format!("unexpected answer `{}`", line.trim_end()))),
        }
    }

    /// Reads an announced object's `size` bytes into `out`, and the newline after them.
    pub(super) fn content(&mut self, size: u64, out: &mut Vec<u8>) -> Result<(), GitError> {
        out.clear();
        let read = (&mut self.output).take(size).read_to_end(out);
        read.map_err(|e| self.broken(e))?;
        let mut tail = [0u8; 1];
        let read = self.output.read_exact(&mut tail);
        read.map_err(|e| self.broken(e))?;
        if out.len() as u64 != size {
            return Err(self.git.failure(BATCH, "object ended early"));
        }
        Ok(())
    }

    /// Closes the input and waits for a clean exit.
    pub(super) fn finish(mut self) -> Result<(), GitError> {
        drop(self.input.take());
        let status = self.child.wait().map_err(|e| self.broken(e))?;
        if status.success() {
            Ok(())
        } else {
            Err(self.git.failure(BATCH, format!("exited with {status}")))
        }
    }
}

impl Drop for Batch<'_> {
    fn drop(&mut self) {
        // Reached after `finish` too, when the process has already ended: both calls are no-ops.
        drop(self.input.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
