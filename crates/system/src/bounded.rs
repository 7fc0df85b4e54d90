//! Reading a file another program wrote (an agent's result file, a work job's result folder)
//! with bounds: only a regular file — a symbolic link, FIFO, device, socket or folder is refused
//! without being read (`O_NOFOLLOW | O_NONBLOCK`, then `fstat`) — and never more than a given
//! number of bytes, even when the file grows while it is read; [`within`] bounds the time a
//! read may take (a file on a file system that never answers).
//!
//! Not here: what the bytes mean (the caller parses them, as untrusted input).

use std::fs;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;
use std::time::Duration;

/// Why a file was not read; the text completes "the file …".
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Refused(pub String);

/// The bytes of the regular file at `path`, at most `max` of them; `Ok(None)` when nothing is
/// there. `what_max` names the bound for people ("1 MiB").
pub fn read_regular(path: &Path, max: u64, what_max: &str) -> Result<Option<Vec<u8>>, Refused> {
    let refused = |why: String| Err(Refused(why));
    match fs::symlink_metadata(path) {
        Err(_) => return Ok(None),
        Ok(meta) if meta.file_type().is_symlink() => {
            return refused("is a symbolic link".to_string())
        }
        Ok(_) => {}
    }
    let file = match fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
    {
        Ok(file) => file,
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return refused("is a symbolic link".to_string())
        }
        Err(e) => return refused(format!("could not be opened ({e})")),
    };
    let meta = match file.metadata() {
        Ok(meta) => meta,
        Err(e) => return refused(format!("could not be examined ({e})")),
    };
    let kind = meta.file_type();
    if !kind.is_file() {
        let what = if kind.is_fifo() {
            "a FIFO"
        } else if kind.is_char_device() || kind.is_block_device() {
            "a device"
        } else if kind.is_socket() {
            "a socket"
        } else {
            "a folder"
        };
        return refused(format!("is not a regular file ({what})"));
    }
    if meta.len() > max {
        return refused(format!(
            "holds {} bytes, more than the {what_max} allowed",
            meta.len()
        ));
    }
    let mut bytes = Vec::new();
    // The file may grow after fstat: never read past the bound.
    if let Err(e) = file.take(max + 1).read_to_end(&mut bytes) {
        return refused(format!("could not be read ({e})"));
    }
    if bytes.len() as u64 > max {
        return refused(format!(
            "grew past the {what_max} allowed while it was read"
        ));
    }
    Ok(Some(bytes))
}

/// `read()`'s answer if it comes within `limit`; `None` after that. The read goes on in a thread
/// of its own, which is left behind if it never returns (the runner does not wait for it).
pub fn within<T: Send + 'static>(
    limit: Duration,
    read: impl FnOnce() -> T + Send + 'static,
) -> Option<T> {
    let (answer, answered) = std::sync::mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name("bounded-read".to_string())
        .spawn(move || {
            let _ = answer.send(read());
        });
    match spawned {
        Ok(_) => answered.recv_timeout(limit).ok(),
        Err(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_that_never_answers_is_given_up_after_its_limit() {
        assert_eq!(within(Duration::from_secs(60), || 7), Some(7));
        // A read blocked forever: on a channel nobody will ever send on.
        let (keep, blocked) = std::sync::mpsc::channel::<()>();
        let never = move || blocked.recv().is_ok();
        assert_eq!(within(Duration::from_millis(20), never), None);
        drop(keep);
    }
}
