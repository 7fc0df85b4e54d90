//! The manifest of a chunked state: the file's length, the chunk size and count, and a checksum
//! over the chunks, as a few lines of text. Pure: reading and writing the text, and the
//! arithmetic of chunk counts and lengths. Not for: computing the checksum or checking the chunks
//! against it (`statebranch::chunks`).

#[cfg(test)]
use super::chunks::CHUNK_SIZE;

const MANIFEST_HEADER: &str = "opentiger state manifest 1";

/// What the manifest says about the file the chunks make up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Manifest {
    /// The file's length in bytes.
    pub length: u64,
    pub chunk_size: u64,
    /// SHA-256 over the SHA-256 digests of the chunks in order, hex: a truncated, missing,
    /// swapped or altered chunk changes it.
    pub checksum: String,
}

impl Manifest {
    /// How many chunks the file is cut into.
    pub fn chunk_count(&self) -> usize {
        usize::try_from(self.length.div_ceil(self.chunk_size.max(1))).unwrap_or(usize::MAX)
    }

    /// The length chunk `index` must have.
    pub fn chunk_len(&self, index: usize) -> u64 {
        let start = index as u64 * self.chunk_size;
        self.length.saturating_sub(start).min(self.chunk_size)
    }

    pub fn render(&self) -> String {
        format!(
            "{MANIFEST_HEADER}\nlength {}\nchunk_size {}\nchunks {}\nchecksum sha256-of-chunk-sha256 {}\n",
            self.length,
            self.chunk_size,
            self.chunk_count(),
            self.checksum
        )
    }

    /// Reads a manifest; the error says what is wrong with it.
    pub fn parse(text: &str) -> Result<Manifest, String> {
        let mut lines = text.lines();
        if lines.next() != Some(MANIFEST_HEADER) {
            return Err(format!(
                "the manifest does not start with `{MANIFEST_HEADER}`"
            ));
        }
        let (mut length, mut chunk_size, mut chunks, mut checksum) = (None, None, None, None);
        for line in lines.filter(|l| !l.trim().is_empty()) {
            let mut words = line.split_whitespace();
            let number = |w: Option<&str>| -> Result<u64, String> {
                w.and_then(|w| w.parse().ok())
                    .ok_or_else(|| format!("manifest line `{line}`: not a number"))
            };
            match words.next() {
                Some("length") => length = Some(number(words.next())?),
                Some("chunk_size") => chunk_size = Some(number(words.next())?),
                Some("chunks") => chunks = Some(number(words.next())?),
                Some("checksum") => {
                    if words.next() != Some("sha256-of-chunk-sha256") {
                        return Err(format!("manifest line `{line}`: unknown checksum kind"));
                    }
                    checksum = words.next().map(str::to_string);
                }
                _ => return Err(format!("manifest line `{line}` is not understood")),
            }
        }
        let manifest = Manifest {
            length: length.ok_or("the manifest has no `length`")?,
            chunk_size: chunk_size.ok_or("the manifest has no `chunk_size`")?,
            checksum: checksum.ok_or("the manifest has no `checksum`")?,
        };
        if manifest.chunk_size == 0 || manifest.chunk_size % 4096 != 0 {
            return Err(format!(
                "the manifest's chunk_size {} is not a multiple of 4096",
                manifest.chunk_size
            ));
        }
        if chunks != Some(manifest.chunk_count() as u64) {
            return Err(format!(
                "the manifest says {} chunks, its length needs {}",
                chunks.map_or("no".to_string(), |c| c.to_string()),
                manifest.chunk_count()
            ));
        }
        Ok(manifest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_counts_and_lengths_follow_the_file_length() {
        let m = |length| Manifest {
            length,
            chunk_size: CHUNK_SIZE as u64,
            checksum: String::new(),
        };
        // (length, chunks, length of the last chunk)
        for (length, count, last) in [
            (0, 0, 0),
            (1, 1, 1),
            (65_536, 1, 65_536),
            (65_537, 2, 1),
            (4096 * 100, 7, 4096 * 100 - 6 * 65_536),
        ] {
            let manifest = m(length);
            assert_eq!(manifest.chunk_count(), count, "length {length}");
            if count > 0 {
                assert_eq!(manifest.chunk_len(count - 1), last, "length {length}");
            }
        }
    }

    #[test]
    fn a_manifest_reads_back_what_was_written() {
        let manifest = Manifest {
            length: 200_000,
            chunk_size: 65_536,
            checksum: "ab".repeat(32),
        };
        assert_eq!(Manifest::parse(&manifest.render()), Ok(manifest));
    }

    #[test]
    fn a_bad_manifest_says_what_is_wrong() {
        let good = "opentiger state manifest 1\nlength 70000\nchunk_size 65536\nchunks 2\nchecksum sha256-of-chunk-sha256 00\n";
        let cases = [
            ("", "does not start with"),
            (&good.replace("length 70000\n", "")[..], "no `length`"),
            (&good.replace("70000", "7e4")[..], "not a number"),
            (&good.replace("chunks 2", "chunks 1")[..], "says 1 chunks"),
            (&good.replace("65536", "1000")[..], "not a multiple of 4096"),
            (
                &good.replace("sha256-of-chunk-sha256", "md5")[..],
                "unknown checksum",
            ),
            (&format!("{good}extra 1\n")[..], "not understood"),
        ];
        for (text, expected) in cases {
            let err = Manifest::parse(text).unwrap_err();
            assert!(err.contains(expected), "{text:?}: {err}");
        }
    }
}
