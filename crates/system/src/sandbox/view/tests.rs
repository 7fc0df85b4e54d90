//! The plan of a view on a made-up host, and a view made for real where the kernel allows it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::*;

/// A host described by hand: every path's kind (folders implied by their children).
struct Fake(BTreeMap<PathBuf, Kind>);

impl Fake {
    fn new(entries: &[(&str, Kind)]) -> Fake {
        Fake(
            entries
                .iter()
                .map(|(p, k)| (PathBuf::from(p), k.clone()))
                .collect(),
        )
    }
}

impl Host for Fake {
    fn kind(&self, path: &Path) -> Kind {
        if let Some(kind) = self.0.get(path) {
            return kind.clone();
        }
        if self.0.keys().any(|k| k.starts_with(path)) {
            return Kind::Dir;
        }
        Kind::Missing
    }

    fn canonical(&self, path: &Path) -> Option<PathBuf> {
        let mut out = PathBuf::from("/");
        for part in path.components().skip(1) {
            out.push(part);
            if let Kind::Link(target) = self.kind(&out) {
                let base = out.parent().unwrap_or(Path::new("/")).to_path_buf();
                out = self.canonical(&normalize(&base.join(target)))?;
            }
        }
        (self.kind(&out) != Kind::Missing).then_some(out)
    }
}

fn host() -> Fake {
    Fake::new(&[
        ("/usr/bin/sh", Kind::File),
        ("/bin", Kind::Link("usr/bin".into())),
        ("/etc/passwd", Kind::File),
        ("/dev/null", Kind::File),
        ("/dev/zero", Kind::File),
        ("/home/u/.config/gh/hosts.yml", Kind::File),
        (
            "/home/u/.local/bin/claude",
            Kind::Link("../share/claude/1.0".into()),
        ),
        ("/home/u/.local/share/claude/1.0", Kind::File),
        ("/home/u/repo/.git/objects/pack", Kind::Dir),
        ("/home/u/repo/.git/config", Kind::File),
        ("/tmp/ot-run/work/src/lib.rs", Kind::File),
        ("/tmp/ot-run/tmp/home", Kind::Dir),
        ("/run/user/1000/bus", Kind::File),
    ])
}

fn read(p: &str) -> (PathBuf, Access) {
    (PathBuf::from(p), Access::Read)
}

fn write(p: &str) -> (PathBuf, Access) {
    (PathBuf::from(p), Access::Write)
}

/// The binds of a plan, as `(at, access)`.
fn binds(ops: &[Op]) -> Vec<(String, Access)> {
    ops.iter()
        .filter_map(|op| match op {
            Op::Bind { at, access, .. } => Some((at.display().to_string(), *access)),
            _ => None,
        })
        .collect()
}

#[test]
fn a_view_holds_the_system_the_run_s_folders_and_nothing_else() {
    let spec = ViewSpec {
        paths: vec![
            read("/home/u/repo/.git/objects"),
            write("/tmp/ot-run"),
            read("/tmp/ot-run/work"),
            write("/tmp/ot-run/tmp"),
            read("/home/u/.local/bin/claude"),
            read("/nonexistent"),
            read("/proc/1"),
            read("relative"),
        ],
        tmp_bytes: Some(1 << 30),
    };
    let ops = plan(&spec, &host());
    let shown = binds(&ops);
    let expected = [
        ("/dev/null", Access::Write),
        ("/dev/zero", Access::Write),
        ("/usr", Access::Read),
        ("/etc", Access::Read),
        ("/tmp/ot-run", Access::Write),
        ("/tmp/ot-run/work", Access::Read),
        ("/home/u/repo/.git/objects", Access::Read),
        ("/home/u/.local/share/claude/1.0", Access::Read),
    ];
    let expected: Vec<(String, Access)> =
        expected.iter().map(|(p, a)| (p.to_string(), *a)).collect();
    assert_eq!(shown, expected);
    // Nothing of the runner's home, repository or /run but what was asked for.
    for hidden in [
        "/home/u/.config",
        "/home/u/repo/.git/config",
        "/run",
        "/home/u",
    ] {
        assert!(!shown.iter().any(|(p, _)| p == hidden), "{hidden} is shown");
    }
    // The links as the host has them: /bin, and the one a program is called by.
    assert!(ops.contains(&Op::Link {
        at: "/bin".into(),
        target: "usr/bin".into()
    }));
    assert!(ops.contains(&Op::Link {
        at: "/home/u/.local/bin/claude".into(),
        target: "../share/claude/1.0".into()
    }));
    // Its own /tmp of the size asked, /dev, /proc.
    assert!(ops.contains(&Op::Tmpfs {
        at: "/tmp".into(),
        bytes: Some(1 << 30),
        mode: 0o1777
    }));
    assert!(ops.contains(&Op::Dir("/proc".into())));
    // The stand-ins of host folders in its /tmp are read-only: it writes /tmp, not them; a
    // folder bound there is the host's, never sealed over.
    let sealed: Vec<&Op> = ops.iter().filter(|op| matches!(op, Op::Seal(_))).collect();
    assert_eq!(sealed, Vec::<&Op>::new());
    let inner = ViewSpec {
        paths: vec![write("/tmp/ot-run/tmp")],
        tmp_bytes: None,
    };
    let inner = plan(&inner, &host());
    let sealed: Vec<&Op> = inner
        .iter()
        .filter(|op| matches!(op, Op::Seal(_)))
        .collect();
    assert_eq!(sealed, [&Op::Seal("/tmp/ot-run".into())]);
}

#[test]
fn every_mount_point_is_made_before_its_mount_and_none_twice() {
    let spec = ViewSpec {
        paths: vec![
            read("/home/u/repo/.git/objects"),
            read("/home/u/repo/.git/objects"),
            read("/usr/bin/sh"),
            write("/tmp/ot-run"),
        ],
        tmp_bytes: None,
    };
    let ops = plan(&spec, &host());
    let mut made: Vec<PathBuf> = vec!["/".into()];
    let mut mounted = Vec::new();
    for op in &ops {
        match op {
            Op::Dir(p) | Op::File(p) | Op::Link { at: p, .. } => {
                let parent = p.parent().unwrap().to_path_buf();
                assert!(
                    made.contains(&parent)
                        || mounted.iter().any(|m: &PathBuf| parent.starts_with(m)),
                    "{} made before its parent",
                    p.display()
                );
                assert!(!made.contains(p), "{} made twice", p.display());
                made.push(p.clone());
            }
            Op::Seal(at) => assert!(made.contains(at), "{} sealed, not made", at.display()),
            Op::Bind { at, .. } | Op::Tmpfs { at, .. } => {
                assert!(
                    made.contains(at)
                        || mounted
                            .iter()
                            .any(|m: &PathBuf| at.starts_with(m) && at != m),
                    "{} mounted on nothing",
                    at.display()
                );
                mounted.push(at.clone());
            }
        }
    }
    // /usr/bin/sh is in /usr's bind already; the objects folder is shown once.
    let shown = binds(&ops);
    assert_eq!(
        shown
            .iter()
            .filter(|(p, _)| p == "/home/u/repo/.git/objects")
            .count(),
        1
    );
    assert!(!shown.iter().any(|(p, _)| p == "/usr/bin/sh"));
}

/// A program run in a view sees its own folders, the system, its own processes only, and
/// none of the runner's home: made for real where user namespaces are allowed.
#[test]
fn a_program_in_its_view_sees_only_its_own() {
    if let Err(why) = available() {
        eprintln!("no view here ({why}): nothing to check");
        return;
    }
    use std::os::unix::process::CommandExt;
    let base = tempfile::tempdir().unwrap();
    let run = base.path().join("run");
    std::fs::create_dir(&run).unwrap();
    let secret = tempfile::tempdir().unwrap();
    std::fs::write(secret.path().join("hosts.yml"), "token").unwrap();
    let spec = ViewSpec {
        paths: vec![(run.clone(), Access::Write)],
        tmp_bytes: Some(1 << 20),
    };
    let ops = plan(&spec, &RealHost);
    let prep = std::sync::Arc::new(Prepared::new(&ops, &run).unwrap());
    let script = format!(
        "test -e {secret}/hosts.yml && exit 10; test -d /run && exit 11; \
         echo hi > out.txt || exit 12; touch /usr/x 2>/dev/null && exit 13; \
         mkdir {parent}/x 2>/dev/null && exit 18; echo x > /tmp/mine || exit 19; \
         test -e /proc/{me} && exit 14; n=$(ls /proc | grep -c '^[0-9]'); [ \"$n\" -le 8 ] || exit 17; \
         [ -r /proc/1/stat ] || exit 15; head -c 2000000 /dev/zero > /tmp/big 2>/dev/null && exit 16; \
         exit 0",
        secret = secret.path().display(),
        me = std::process::id(),
        parent = base.path().display()
    );
    let mut cmd = std::process::Command::new("/bin/sh");
    cmd.args(["-c", &script]).current_dir(&run);
    let child_prep = prep.clone();
    let part = crate::sandbox::netns::ChildPart::current_user();
    // SAFETY: `enter` makes only system calls on memory made before the fork.
    unsafe {
        cmd.pre_exec(move || enter(&child_prep, Some(&part)));
    }
    let status = cmd.status().unwrap();
    assert_eq!(status.code(), Some(0), "{:?} {:?}", status, prep.failure());
    assert_eq!(
        std::fs::read_to_string(run.join("out.txt")).unwrap(),
        "hi\n"
    );
}
