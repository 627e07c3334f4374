//! The keys of held calls this gateway's name registered, kept in memory so
//! that a call the gate lets run reads nothing of the store when its key
//! names no run — the common case — and reads it only when it may.
//!
//! A served gateway reads the keys registered since its last reading once
//! per [`GatewayBuilder::follow`](crate::GatewayBuilder::follow) interval
//! (every key again once a minute), and adds at once the keys it registers
//! itself. The memory is trusted only while it is fresh — read within
//! three intervals; otherwise, and with an interval of zero, every call
//! reads the store. What it can miss: a key another gateway process of the
//! name registered less than an interval ago (a call whose answer that
//! process lost a moment ago, asked at the same moment through this one).

use std::collections::HashSet;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use toolgate_store::CallHost;

/// How far before its last reading a reading looks again: the clocks of
/// the processes that register keys may differ this much.
const CLOCK_MARGIN_MS: i64 = 5_000;

/// How often every key is read again, for any a reading since missed.
const FULL_READ: Duration = Duration::from_mins(1);

#[derive(Default)]
struct State {
    keys: HashSet<String>,
    /// When the last reading was taken, and the newest registration seen.
    read_at: Option<Instant>,
    newest_ms: i64,
    full_at: Option<Instant>,
}

/// The held-call keys of this gateway's name, as last read.
pub(crate) struct KnownKeys {
    within: Duration,
    state: Mutex<State>,
}

impl KnownKeys {
    pub(crate) fn new(within: Duration) -> Self {
        Self {
            within,
            state: Mutex::default(),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether the memory says, and may be trusted to say, that `key` names
    /// no run: a call asked with it reads nothing more of the store.
    pub(crate) fn surely_absent(&self, key: &str) -> bool {
        let state = self.state();
        let fresh = !self.within.is_zero()
            && state
                .read_at
                .is_some_and(|at| at.elapsed() < self.within.saturating_mul(3));
        fresh && !state.keys.contains(key)
    }

    /// A key this process registered: known at once.
    pub(crate) fn add(&self, key: &str) {
        self.state().keys.insert(key.to_owned());
    }

    /// Reads the keys registered since the last reading (every key, once a
    /// minute). A failed reading leaves the memory stale, so that calls
    /// read the store until a reading succeeds.
    pub(crate) async fn refresh(&self, host: &CallHost) {
        let at = Instant::now();
        let (full, since) = {
            let state = self.state();
            let full = state.full_at.is_none_or(|full| full.elapsed() >= FULL_READ);
            let since = if full {
                i64::MIN
            } else {
                state.newest_ms.saturating_sub(CLOCK_MARGIN_MS)
            };
            (full, since)
        };
        match host.held_keys_since(since).await {
            Ok(keys) => {
                // Never cleared: a key kept that names no run any more only
                // sends its call to the store, which tells.
                let mut state = self.state();
                if full {
                    state.full_at = Some(at);
                }
                for (key, created_at) in keys {
                    state.newest_ms = state.newest_ms.max(created_at);
                    state.keys.insert(key);
                }
                state.read_at = Some(at);
            }
            Err(error) => {
                tracing::warn!(%error, "cannot read the held calls' keys; every call reads the store");
                self.state().read_at = None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Read just now, with the key unknown: surely absent. Never read,
    /// read too long ago, followed with an interval of zero, or known: the
    /// store is read.
    #[test]
    fn only_a_fresh_reading_without_the_key_spares_the_store() {
        let known = KnownKeys::new(Duration::from_millis(100));
        assert!(!known.surely_absent("k"), "never read");
        known.state().read_at = Some(Instant::now());
        assert!(known.surely_absent("k"));
        known.add("k");
        assert!(!known.surely_absent("k"), "known");
        assert!(known.surely_absent("other"));
        known.state().read_at = Instant::now().checked_sub(Duration::from_millis(301));
        assert!(!known.surely_absent("other"), "stale");
        let every_call = KnownKeys::new(Duration::ZERO);
        every_call.state().read_at = Some(Instant::now());
        assert!(!every_call.surely_absent("other"), "an interval of zero");
    }
}
