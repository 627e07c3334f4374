//! How a command fails, and the exit code each failure maps to. Errors of the
//! store and the importer convert here, once, so commands use `?`: not found
//! → 4; refused, stale or already decided → 3; an unusable name → 2 (usage);
//! anything else → 1.

use toolgate::suspend::Refusal;
use toolgate_mcp::ImportError;
use toolgate_store::{ClaimError, LoadError, RunPrefixError, StoreError};

/// A failure, with the exit code it maps to.
#[derive(Debug)]
pub(crate) enum Failure {
    Error(String),
    Usage(String),
    Refused(String),
    NotFound(String),
    /// Nothing was done, by design: a command that lowers a gate was given
    /// no digest, so it showed what it would act on. Exit 3, as a refusal,
    /// so that a script does not go on as if it had acted — but no error.
    Preview(String),
}

impl Failure {
    pub(crate) fn code(&self) -> u8 {
        match self {
            Failure::Error(_) => 1,
            Failure::Usage(_) => 2,
            Failure::Refused(_) | Failure::Preview(_) => 3,
            Failure::NotFound(_) => 4,
        }
    }

    pub(crate) fn message(&self) -> &str {
        match self {
            Failure::Error(m)
            | Failure::Usage(m)
            | Failure::Refused(m)
            | Failure::NotFound(m)
            | Failure::Preview(m) => m,
        }
    }

    /// What its line begins with on standard error: `error: `, except for a
    /// preview, which is no error.
    pub(crate) fn prefix(&self) -> &'static str {
        match self {
            Failure::Preview(_) => "",
            _ => "error: ",
        }
    }
}

impl From<StoreError> for Failure {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::NoSuchServer(_)
            | StoreError::NoSuchTool { .. }
            | StoreError::NoSuchSink(_) => Failure::NotFound(error.to_string()),
            StoreError::InvalidServerId { .. }
            | StoreError::InvalidHostName { .. }
            | StoreError::InvalidSinkName { .. } => Failure::Usage(error.to_string()),
            StoreError::ServerExists(_)
            | StoreError::SinkExists(_)
            | StoreError::NotUnknown(_)
            | StoreError::CatalogueChanged { .. }
            | StoreError::ReviewRequired { .. }
            | StoreError::ToolReviewRequired { .. }
            | StoreError::CatalogueOverBounds { .. } => Failure::Refused(error.to_string()),
            other => Failure::Error(other.to_string()),
        }
    }
}

impl From<LoadError> for Failure {
    fn from(error: LoadError) -> Self {
        match error {
            LoadError::NotFound(_) => Failure::NotFound(error.to_string()),
            LoadError::Store(error) => error.into(),
            other => Failure::Error(other.to_string()),
        }
    }
}

impl From<ClaimError> for Failure {
    fn from(error: ClaimError) -> Self {
        match error {
            ClaimError::NotFound(_) => Failure::NotFound(error.to_string()),
            ClaimError::AlreadyDecided { .. }
            | ClaimError::StaleDigest { .. }
            | ClaimError::Refused { .. }
            | ClaimError::AlreadyApproved { .. }
            | ClaimError::DiffersFromPending { .. }
            | ClaimError::NotExpired { .. }
            | ClaimError::NotTheUnknownCall { .. }
            | ClaimError::StaleChoice { .. }
            | ClaimError::NoReason { .. }
            | ClaimError::AlreadyChose { .. }
            | ClaimError::NotFromNowOn { .. }
            | ClaimError::DoesNotFit { .. } => Failure::Refused(error.to_string()),
            ClaimError::Store(error) => error.into(),
            other => Failure::Error(other.to_string()),
        }
    }
}

/// A run typed as no single run: too short or ambiguous is bad usage (2),
/// none is not found (4).
impl From<RunPrefixError> for Failure {
    fn from(error: RunPrefixError) -> Self {
        match error {
            RunPrefixError::NotFound(_) => Failure::NotFound(error.to_string()),
            RunPrefixError::Store(error) => error.into(),
            other => Failure::Usage(other.to_string()),
        }
    }
}

/// A decision the core refuses before anything is claimed.
impl From<Refusal> for Failure {
    fn from(reason: Refusal) -> Self {
        Failure::Refused(reason.to_string())
    }
}

impl From<ImportError> for Failure {
    fn from(error: ImportError) -> Self {
        match error {
            ImportError::Store(error) => error.into(),
            refused
            @ (ImportError::TooManyTools { .. } | ImportError::CatalogueTooLarge { .. }) => {
                Failure::Refused(refused.to_string())
            }
            other => Failure::Error(other.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_errors_map_to_their_exit_codes() {
        let codes = [
            (StoreError::NoSuchServer("x".into()).into(), 4),
            (StoreError::ServerExists("x".into()).into(), 3),
            (
                StoreError::InvalidServerId {
                    id: "x".into(),
                    problem: "bad",
                }
                .into(),
                2,
            ),
            (LoadError::NotFound("r".into()).into(), 4),
            (
                LoadError::Store(StoreError::NoSuchServer("x".into())).into(),
                4,
            ),
            (ClaimError::NotFound("r".into()).into(), 4),
            (
                ClaimError::AlreadyDecided {
                    run_id: "r".into(),
                    by: None,
                }
                .into(),
                3,
            ),
            (ClaimError::StaleDigest { run_id: "r".into() }.into(), 3),
            (StoreError::NotUnknown("r".into()).into(), 3),
            (StoreError::UnreadableTransport("t".into()).into(), 1),
        ];
        for (failure, code) in codes {
            let failure: Failure = failure;
            assert_eq!(failure.code(), code, "{failure:?}");
        }
    }
}
