//! `git diff --numstat -z` read into one entry per changed file.
//! Not for: running git (`git`), or what the changes mean for a run (`workspace`, `runner`).

/// One changed file of a diff with its line counts (binary files count as one line).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NumstatEntry {
    pub path: String,
    pub added: u32,
    pub removed: u32,
}

/// Parses `git diff --numstat -z` output.
pub fn parse_numstat_z(out: &str) -> Vec<NumstatEntry> {
    let mut entries = Vec::new();
    let mut fields = out.split('\0').peekable();
    while let Some(record) = fields.next() {
        let record = record.trim_start_matches('\n');
        if record.is_empty() {
            continue;
        }
        let mut parts = record.splitn(3, '\t');
        let added = parts.next().unwrap_or("0");
        let removed = parts.next().unwrap_or("0");
        let mut path = parts.next().unwrap_or("").to_string();
        if path.is_empty() {
            // A rename: the old and new paths follow as separate fields.
            let _old = fields.next();
            path = fields.next().unwrap_or("").to_string();
        }
        let count = |s: &str| s.parse::<u32>().unwrap_or(1);
        entries.push(NumstatEntry {
            path,
            added: count(added),
            removed: count(removed),
        });
    }
    entries
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numstat_parses_plain_binary_and_renames() {
        let out = "3\t1\tsrc/a.rs\0-\t-\timg.png\0\
                   0\t0\t\0old.txt\0new.txt\0";
        let entries = parse_numstat_z(out);
        assert_eq!(
            entries,
            vec![
                NumstatEntry {
                    path: "src/a.rs".into(),
                    added: 3,
                    removed: 1
                },
                NumstatEntry {
                    path: "img.png".into(),
                    added: 1,
                    removed: 1
                },
                NumstatEntry {
                    path: "new.txt".into(),
                    added: 0,
                    removed: 0
                },
            ]
        );
    }
}
