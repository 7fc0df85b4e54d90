//! A person's stop request beside an agent's own watchdog (issue 51): the two sentinels asked
//! as one, the watchdog first, and a stop ends the agent gently only when it is the person's.
//!
//! Not for: noticing the request (`tick::stop_watch` reads the state), or what the record
//! makes of a stopped run (`engine::stop`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::process::{Seen, Sentinel};

/// The agent's `watchdog` and the run's `stop` sentinel as one.
pub(super) fn with_stop(
    watchdog: Option<Arc<dyn Sentinel>>,
    stop: Option<Arc<dyn Sentinel>>,
) -> Option<Arc<dyn Sentinel>> {
    match (watchdog, stop) {
        (Some(watchdog), Some(stop)) => Some(Arc::new(Both {
            watchdog,
            stop,
            by_stop: AtomicBool::new(false),
        })),
        (one, None) | (None, one) => one,
    }
}

#[derive(Debug)]
struct Both {
    watchdog: Arc<dyn Sentinel>,
    stop: Arc<dyn Sentinel>,
    /// The last stop asked for was the person's.
    by_stop: AtomicBool,
}

impl Sentinel for Both {
    fn check(&self, seen: &Seen) -> Option<String> {
        if let Some(reason) = self.watchdog.check(seen) {
            self.by_stop.store(false, Ordering::SeqCst);
            return Some(reason);
        }
        let reason = self.stop.check(seen)?;
        self.by_stop.store(true, Ordering::SeqCst);
        Some(reason)
    }

    fn gently(&self) -> bool {
        self.by_stop.load(Ordering::SeqCst) && self.stop.gently()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[derive(Debug)]
    struct Says(Option<&'static str>, bool);

    impl Sentinel for Says {
        fn check(&self, _: &Seen) -> Option<String> {
            self.0.map(str::to_string)
        }
        fn gently(&self) -> bool {
            self.1
        }
    }

    #[test]
    fn the_watchdog_speaks_first_and_only_a_person_s_stop_is_gentle() {
        let seen = Seen {
            quiet: Duration::ZERO,
            elapsed: Duration::ZERO,
            lines: 0,
        };
        let s = |r, g| Some(Arc::new(Says(r, g)) as Arc<dyn Sentinel>);
        let both = with_stop(s(None, false), s(Some("stopped by ann"), true)).unwrap();
        assert_eq!(both.check(&seen).as_deref(), Some("stopped by ann"));
        assert!(both.gently());
        let both = with_stop(s(Some("quota"), false), s(Some("stopped by ann"), true)).unwrap();
        assert_eq!(both.check(&seen).as_deref(), Some("quota"));
        assert!(!both.gently());
        assert!(with_stop(None, None).is_none());
        let only = with_stop(None, s(Some("stopped"), true)).unwrap();
        assert!(only.gently());
    }
}
