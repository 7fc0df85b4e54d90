//! The state file as chunks in a git tree: the layout, the manifest, and the git processes that
//! move chunks (`cat-file --batch` to assemble a file, a few at once for a large one, each
//! spoken to through [`super::cat_file`]; `fast-import` to write a commit).
//!
//! A state commit holds `manifest` (length, chunk size, chunk count, checksum: see
//! [`super::manifest`]), `STATE.md`, and
//! `chunks/<i / 256>/<i % 256>`: the SQLite file cut into 64 KiB pieces. SQLite pages are at
//! most 64 KiB and a power of two, so every page lies inside one chunk, and a save that changes
//! a few rows changes a few chunks; the others keep their blob ids and are neither written nor
//! pushed again. The fan-out keeps each tree small, so a save also rewrites only small trees.
//!
//! Not here: which commit to load, compare-and-swap, pushing, history (see the parent module);
//! the `cat-file --batch` protocol itself ([`super::cat_file`]).

use std::io::{Read, Write};
use std::path::Path;

use sha2::{Digest, Sha256};

use super::cat_file::{Batch, Object, BATCH};
use super::manifest::Manifest;
use crate::git::{Git, GitError};

/// Bytes per chunk: the largest SQLite page size, so no page straddles two chunks.
pub const CHUNK_SIZE: usize = 64 * 1024;
/// The manifest's file name in the state tree.
pub const MANIFEST_FILE: &str = "manifest";
/// The folder of chunks in the state tree.
pub const CHUNKS_DIR: &str = "chunks";
/// The whole file as one blob: how states were stored before chunks (loaded, then migrated).
pub const LEGACY_FILE: &str = "state.sqlite";
/// The reader's buffer on a `cat-file` process: a whole chunk and its header line.
const READ_BUFFER: usize = CHUNK_SIZE + 4096;

/// Where chunk `index` lives in the state tree.
pub fn chunk_path(index: usize) -> String {
    format!("{CHUNKS_DIR}/{:04x}/{:02x}", index / 256, index % 256)
}

/// What a save starts from: the loaded commit's chunks, so unchanged ones are not written again.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Base {
    /// The loaded commit's `chunks` tree; `None` for a new or single-blob state.
    pub chunks_tree: Option<String>,
    /// SHA-256 of each loaded chunk.
    pub digests: Vec<[u8; 32]>,
}

/// Why the chunks could not be turned into a file.
#[derive(Debug, thiserror::Error)]
pub enum ChunkError {
    /// The commit does not hold a whole, consistent file.
    #[error("{0}")]
    Damaged(String),
    #[error(transparent)]
    Git(#[from] GitError),
    #[error("{path}: {source}")]
    File {
        path: String,
        source: std::io::Error,
    },
}

fn file_error(path: &Path) -> impl Fn(std::io::Error) -> ChunkError + '_ {
    move |source| ChunkError::File {
        path: path.display().to_string(),
        source,
    }
}

/// Assembles the state file of `commit` into `file`, checking every chunk against the manifest,
/// with `git cat-file --batch`: one process for the manifest and the tree, then one per run of
/// chunks ([`readers`]). A single-blob state (before chunks) is copied as is
/// and gives an empty [`Base`], so the next save writes it as chunks.
pub fn assemble(git: &Git, commit: &str, file: &Path) -> Result<Base, ChunkError> {
    assemble_with(git, commit, file, readers)
}

/// [`assemble`] with `readers` saying how many processes read a given count of chunks.
fn assemble_with(
    git: &Git,
    commit: &str,
    file: &Path,
    readers: fn(usize) -> usize,
) -> Result<Base, ChunkError> {
    let mut batch = Batch::start(git, READ_BUFFER)?;
    let mut buffer = Vec::with_capacity(CHUNK_SIZE);
    let manifest = match batch.ask(&format!("{commit}:{MANIFEST_FILE}"))? {
        Object::Found { kind, size, .. } if kind == "blob" && size <= 4096 => {
            batch.content(size, &mut buffer)?;
            Manifest::parse(&String::from_utf8_lossy(&buffer)).map_err(ChunkError::Damaged)?
        }
        Object::Found { kind, size, .. } => {
            return Err(ChunkError::Damaged(format!(
                "`{MANIFEST_FILE}` is a {kind} of {size} bytes, not a small file"
            )))
        }
        Object::Missing => {
            copy_legacy(&mut batch, commit, file, &mut buffer)?;
            batch.finish()?;
            return Ok(Base::default());
        }
    };
    let count = manifest.chunk_count();
    let chunks_tree = match batch.ask(&format!("{commit}:{CHUNKS_DIR}"))? {
        Object::Found { id, kind, size } if kind == "tree" => {
            batch.content(size, &mut buffer)?;
            Some(id)
        }
        Object::Found { kind, .. } => {
            return Err(ChunkError::Damaged(format!(
                "`{CHUNKS_DIR}` is a {kind}, not a folder"
            )))
        }
        Object::Missing if count == 0 => None,
        Object::Missing => {
            return Err(ChunkError::Damaged(format!(
                "the folder `{CHUNKS_DIR}` is missing; the manifest lists {count} chunks"
            )))
        }
    };
    batch.finish()?;
    let out = std::fs::File::create(file).map_err(file_error(file))?;
    out.set_len(manifest.length).map_err(file_error(file))?;
    // The chunks are read by a few `cat-file` processes at once, each for its own run of them,
    // written where they belong in the file: inflating the objects is most of a load's time,
    // and it is spread over the machine's cores.
    let parts = readers(count);
    let per_part = count.div_ceil(parts.max(1)).max(1);
    let results: Vec<Result<Vec<[u8; 32]>, ChunkError>> = std::thread::scope(|scope| {
        let readers: Vec<_> = (0..count)
            .step_by(per_part)
            .map(|start| {
                let range = start..(start + per_part).min(count);
                let (out, manifest) = (&out, &manifest);
                scope.spawn(move || read_chunks(git, commit, range, manifest, out, file))
            })
            .collect();
        readers
            .into_iter()
            .map(|reader| {
                reader.join().unwrap_or_else(|_| {
                    Err(git.failure(BATCH, "a thread reading chunks failed").into())
                })
            })
            .collect()
    });
    let mut digests = Vec::with_capacity(count);
    for part in results {
        digests.extend(part?);
    }
    let mut all = Sha256::new();
    for digest in &digests {
        all.update(digest);
    }
    (&out).flush().map_err(file_error(file))?;
    let checksum = hex(&all.finalize());
    if checksum != manifest.checksum {
        return Err(ChunkError::Damaged(format!(
            "the chunks' checksum {checksum} is not the manifest's {}",
            manifest.checksum
        )));
    }
    Ok(Base {
        chunks_tree,
        digests,
    })
}

/// How many `cat-file` processes read `count` chunks: one per core, at most 4, and none for
/// fewer than 64 chunks (4 MiB) of its own: a small state is read by one.
fn readers(count: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    cores.min(4).min(count / 64).max(1)
}

/// Reads the chunks `range` of `commit` with a `cat-file --batch` of its own, checks each
/// against the manifest and writes it at its place in `out`; returns their digests, in order.
fn read_chunks(
    git: &Git,
    commit: &str,
    range: std::ops::Range<usize>,
    manifest: &Manifest,
    out: &std::fs::File,
    file: &Path,
) -> Result<Vec<[u8; 32]>, ChunkError> {
    use std::os::unix::fs::FileExt;
    let count = manifest.chunk_count();
    let mut batch = Batch::start(git, READ_BUFFER)?;
    // Every chunk of the range is asked for at once, from a thread, while this one reads the
    // answers: no round trip per chunk, and no deadlock when the questions outgrow the pipe. If
    // reading stops early, dropping `batch` kills the process and the thread's next write fails.
    let questions: String = range
        .clone()
        .map(|index| format!("{commit}:{}\n", chunk_path(index)))
        .collect();
    let mut input = batch
        .input
        .take()
        .ok_or_else(|| git.failure(BATCH, "input already closed"))?;
    let asking = std::thread::spawn(move || {
        input
            .write_all(questions.as_bytes())
            .and_then(|()| input.flush())
    });
    let mut buffer = Vec::with_capacity(CHUNK_SIZE);
    let mut digests = Vec::with_capacity(range.len());
    for index in range {
        let path = chunk_path(index);
        let expected = manifest.chunk_len(index);
        match batch.header()? {
            Object::Found { kind, size, .. } if kind == "blob" && size == expected => {
                batch.content(size, &mut buffer)?;
            }
            Object::Found { kind, size, .. } => {
                return Err(ChunkError::Damaged(format!(
                    "chunk `{path}` is a {kind} of {size} bytes; the manifest needs a file of {expected}"
                )))
            }
            Object::Missing => {
                return Err(ChunkError::Damaged(format!(
                    "chunk `{path}` is missing ({count} listed in the manifest)"
                )))
            }
        }
        digests.push(Sha256::digest(&buffer).into());
        out.write_all_at(&buffer, (index * CHUNK_SIZE) as u64)
            .map_err(file_error(file))?;
    }
    match asking.join() {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return Err(batch.broken(e).into()),
        Err(_) => {
            return Err(git
                .failure(BATCH, "the thread asking for chunks failed")
                .into())
        }
    }
    batch.finish()?;
    Ok(digests)
}

/// Copies a single-blob state into `file`.
fn copy_legacy(
    batch: &mut Batch<'_>,
    commit: &str,
    file: &Path,
    buffer: &mut Vec<u8>,
) -> Result<(), ChunkError> {
    let size = match batch.ask(&format!("{commit}:{LEGACY_FILE}"))? {
        Object::Found { kind, size, .. } if kind == "blob" => size,
        Object::Found { kind, .. } => {
            return Err(ChunkError::Damaged(format!(
                "`{LEGACY_FILE}` is a {kind}, not a file"
            )))
        }
        Object::Missing => {
            return Err(ChunkError::Damaged(format!(
                "the commit has neither `{MANIFEST_FILE}` nor `{LEGACY_FILE}`"
            )))
        }
    };
    let mut out = std::fs::File::create(file).map_err(file_error(file))?;
    let mut left = size;
    while left > 0 {
        let step = left.min(CHUNK_SIZE as u64);
        buffer.clear();
        (&mut batch.output)
            .take(step)
            .read_to_end(buffer)
            .map_err(|e| batch.broken(e))?;
        if buffer.is_empty() {
            return Err(batch.git.failure(BATCH, "object ended early").into());
        }
        left -= buffer.len() as u64;
        out.write_all(buffer).map_err(file_error(file))?;
    }
    let mut newline = [0u8; 1];
    batch
        .output
        .read_exact(&mut newline)
        .map_err(|e| batch.broken(e))?;
    out.flush().map_err(file_error(file))?;
    Ok(())
}

/// What [`write_commit`] made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Written {
    pub commit: String,
    /// Chunks written as new blobs (the rest were unchanged).
    pub chunks_written: usize,
    pub chunks_total: usize,
}

/// Writes the state file at `file` as a commit (with `parent`, or none for a squash), in one
/// `git fast-import` process that puts the new objects straight into a pack. Only chunks whose
/// content differs from `base` are written; the others are taken from `base`'s tree.
pub fn write_commit(
    git: &Git,
    base: &Base,
    file: &Path,
    summary: &str,
    message: &str,
    parent: Option<&str>,
) -> Result<Written, ChunkError> {
    // A private ref per process: fast-import must name one; it is deleted right after.
    let scratch = format!(
        "refs/opentiger/saving/{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    );
    let args = [
        "-c",
        "fastimport.unpackLimit=0",
        "fast-import",
        "--quiet",
        "--force",
        "--done",
        "--date-format=now",
    ];
    let mut child = git.spawn(&args)?;
    let written = match child.stdin.take() {
        Some(stdin) => {
            let mut input = std::io::BufWriter::with_capacity(CHUNK_SIZE + 4096, stdin);
            let streamed = stream(&mut input, base, file, summary, message, parent, &scratch);
            // Close the input whatever happened: fast-import then ends (and, without `done`,
            // fails: a half-written stream never makes a commit).
            let flushed = input.into_inner().map(drop).map_err(|e| e.into_error());
            match (streamed, flushed) {
                (Ok(w), Ok(())) => Ok(w),
                (Err(e), _) => Err(e),
                (Ok(_), Err(e)) => Err(git.failure(&args, format!("writing to git: {e}")).into()),
            }
        }
        None => Err(git.failure(&args, "no pipe to the process").into()),
    };
    let finished = git.finish(&args, child);
    let _ = git.run(&["update-ref", "-d", &scratch]);
    let (chunks_written, chunks_total) = written?;
    let out = finished?;
    let commit = out.lines().last().unwrap_or("").trim().to_string();
    if commit.len() < 40 || !commit.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(git
            .failure(&args, format!("no commit id in the answer `{out}`"))
            .into());
    }
    Ok(Written {
        commit,
        chunks_written,
        chunks_total,
    })
}

/// The fast-import commands for one state commit; returns (chunks written, chunks in all).
fn stream(
    input: &mut impl Write,
    base: &Base,
    file: &Path,
    summary: &str,
    message: &str,
    parent: Option<&str>,
    scratch: &str,
) -> Result<(usize, usize), ChunkError> {
    let io = |e: std::io::Error| ChunkError::File {
        path: "git fast-import's input".to_string(),
        source: e,
    };
    write!(
        input,
        "commit {scratch}\nmark :1\ncommitter {} <{}> now\ndata {}\n{message}\n",
        crate::git::AUTHOR_NAME,
        crate::git::AUTHOR_EMAIL,
        message.len() + 1
    )
    .map_err(io)?;
    if let Some(parent) = parent {
        writeln!(input, "from {parent}").map_err(io)?;
    }
    writeln!(input, "deleteall").map_err(io)?;
    if let Some(tree) = &base.chunks_tree {
        writeln!(input, "M 040000 {tree} {CHUNKS_DIR}").map_err(io)?;
    }
    let mut source = std::fs::File::open(file).map_err(file_error(file))?;
    let mut buffer = vec![0u8; CHUNK_SIZE];
    let (mut index, mut written, mut length) = (0usize, 0usize, 0u64);
    let mut all = Sha256::new();
    loop {
        let n = read_full(&mut source, &mut buffer).map_err(file_error(file))?;
        if n == 0 {
            break;
        }
        let chunk = &buffer[..n];
        let digest: [u8; 32] = Sha256::digest(chunk).into();
        all.update(digest);
        let unchanged = base.chunks_tree.is_some() && base.digests.get(index) == Some(&digest);
        if !unchanged {
            write!(input, "M 100644 inline {}\ndata {n}\n", chunk_path(index)).map_err(io)?;
            input.write_all(chunk).map_err(io)?;
            writeln!(input).map_err(io)?;
            written += 1;
        }
        length += n as u64;
        index += 1;
        if n < CHUNK_SIZE {
            break;
        }
    }
    if base.chunks_tree.is_some() {
        for gone in index..base.digests.len() {
            writeln!(input, "D {}", chunk_path(gone)).map_err(io)?;
        }
    }
    let manifest = Manifest {
        length,
        chunk_size: CHUNK_SIZE as u64,
        checksum: hex(&all.finalize()),
    }
    .render();
    for (name, text) in [
        (MANIFEST_FILE, manifest.as_str()),
        (super::SUMMARY_FILE, summary),
    ] {
        write!(
            input,
            "M 100644 inline {name}\ndata {}\n{text}\n",
            text.len()
        )
        .map_err(io)?;
    }
    write!(input, "\nget-mark :1\ndone\n").map_err(io)?;
    Ok((written, index))
}

/// Reads until `buffer` is full or the file ends.
fn read_full(source: &mut impl Read, buffer: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buffer.len() {
        match source.read(&mut buffer[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// However many processes read the chunks, the file and its digests are the same, and a
    /// damaged chunk in any run of them is found.
    #[test]
    fn chunks_read_in_parallel_runs_make_the_same_file() {
        let (dir, git) = crate::git::temp_repo();
        let file = dir.path().join("state.bin");
        // 20 chunks and a bit: every run but the last ends on a whole chunk.
        let bytes: Vec<u8> = (0..20 * CHUNK_SIZE + 1234)
            .map(|i| (i * 7 % 251) as u8)
            .collect();
        std::fs::write(&file, &bytes).unwrap();
        let written = write_commit(&git, &Base::default(), &file, "# s\n", "m", None).unwrap();
        let mut bases = Vec::new();
        for parts in [|_| 1, |_| 2, |_| 3, |_| 7, |n| n] {
            let out = dir.path().join("out.bin");
            let base = assemble_with(&git, &written.commit, &out, parts).unwrap();
            assert_eq!(std::fs::read(&out).unwrap(), bytes);
            bases.push(base);
        }
        assert!(bases.windows(2).all(|w| w[0] == w[1]));

        // Chunk 17 replaced by another blob of the same length: the checksum finds it.
        let other = git
            .run_with_input(&["hash-object", "-w", "--stdin"], &vec![0u8; CHUNK_SIZE])
            .unwrap();
        let damaged = {
            let index = dir.path().join("index");
            let env_git = |args: &[&str]| {
                std::process::Command::new("git")
                    .args(args)
                    .current_dir(dir.path())
                    .env("GIT_INDEX_FILE", &index)
                    .env("GIT_AUTHOR_NAME", "t")
                    .env("GIT_AUTHOR_EMAIL", "t@example.com")
                    .env("GIT_COMMITTER_NAME", "t")
                    .env("GIT_COMMITTER_EMAIL", "t@example.com")
                    .output()
                    .unwrap()
            };
            env_git(&["read-tree", &written.commit]);
            let entry = format!("100644,{},{}", other.trim(), chunk_path(17));
            env_git(&["update-index", "--cacheinfo", &entry]);
            let tree = String::from_utf8(env_git(&["write-tree"]).stdout).unwrap();
            let commit = env_git(&["commit-tree", tree.trim(), "-m", "damaged"]);
            String::from_utf8(commit.stdout).unwrap().trim().to_string()
        };
        for parts in [|_| 1, |_| 3] {
            let out = dir.path().join("damaged.bin");
            let err = assemble_with(&git, &damaged, &out, parts).unwrap_err();
            assert!(err.to_string().contains("checksum"), "{err}");
        }
    }

    #[test]
    fn chunk_paths_fan_out_by_256() {
        for (index, path) in [
            (0, "chunks/0000/00"),
            (255, "chunks/0000/ff"),
            (256, "chunks/0001/00"),
            (70_000, "chunks/0111/70"),
        ] {
            assert_eq!(chunk_path(index), path, "chunk {index}");
        }
    }
}
