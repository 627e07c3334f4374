//! The registered servers' tools, with the operator's revision read at most
//! once per interval rather than once per call.
//!
//! A host reads the revision once per turn; a gateway's turn is a call, and
//! a read of the store per call is most of what a forwarded call would cost.
//! [`Followed`] keeps the last reading for [`Followed::within`]: a change an
//! operator makes — approval turned on, a server disabled or removed, a tool
//! changed — reaches every call judged after that interval. A reading that
//! failed is never kept: the revision counts as moved and the tools are read
//! again (a store that cannot be read offers no remote tool). An interval of
//! zero reads the revision for every call.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use toolgate::erased::{BoxFuture, ErasedTool};
use toolgate::registry::{ProviderError, Revision, ToolProvider};

/// The gateway's source of tools (the registered MCP servers', or a hook's
/// client tools), its revision followed rather than read per call.
pub(crate) struct Followed {
    provider: Arc<dyn ToolProvider>,
    within: Duration,
    /// The last successful reading, and when it was taken.
    seen: Mutex<Option<(Instant, Revision)>>,
}

impl Followed {
    pub(crate) fn new(provider: Arc<dyn ToolProvider>, within: Duration) -> Self {
        Self {
            provider,
            within,
            seen: Mutex::new(None),
        }
    }

    fn seen(&self) -> std::sync::MutexGuard<'_, Option<(Instant, Revision)>> {
        self.seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Reads the revision from the store now, and keeps it.
    pub(crate) async fn read(&self) -> Result<Revision, ProviderError> {
        // Taken before the read: a reading is never younger than it is.
        let at = Instant::now();
        match self.provider.revision().await {
            Ok(revision) => {
                *self.seen() = Some((at, revision));
                Ok(revision)
            }
            Err(error) => {
                *self.seen() = None;
                Err(error)
            }
        }
    }

    /// Forgets the reading: the next call reads the revision afresh.
    pub(crate) fn forget(&self) {
        *self.seen() = None;
    }
}

impl ToolProvider for Followed {
    fn name(&self) -> &str {
        self.provider.name()
    }

    fn provide(&self) -> BoxFuture<'_, Result<Vec<ErasedTool>, ProviderError>> {
        self.provider.provide()
    }

    /// The last reading while it is younger than the interval; else a fresh
    /// one.
    fn revision(&self) -> BoxFuture<'_, Result<Revision, ProviderError>> {
        Box::pin(async move {
            let kept = *self.seen();
            match kept {
                Some((at, revision)) if at.elapsed() < self.within => Ok(revision),
                _ => self.read().await,
            }
        })
    }
}
