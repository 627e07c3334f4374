//! Errors that carry a message for a person and, where there is one, the error
//! that caused them — so a host's logs can show the whole chain.

use std::error::Error;
use std::sync::Arc;

/// The cause of an error, shared so the error stays cheap to clone.
pub(crate) type Cause = Arc<dyn Error + Send + Sync + 'static>;

/// Defines an error type with a message and an optional source. Equality
/// compares messages only: two failures that read the same are the same to a
/// caller comparing them, whatever their causes' types.
macro_rules! message_error {
    ($(#[$doc:meta])* $name:ident, $prefix:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone)]
        pub struct $name {
            message: String,
            source: Option<$crate::error::Cause>,
        }

        impl $name {
            /// An error with a message.
            pub fn new(message: impl Into<String>) -> Self {
                Self {
                    message: message.into(),
                    source: None,
                }
            }

            /// An error with a message and the error that caused it.
            pub fn with_source(
                message: impl Into<String>,
                source: impl std::error::Error + Send + Sync + 'static,
            ) -> Self {
                Self {
                    message: message.into(),
                    source: Some(std::sync::Arc::new(source)),
                }
            }

            /// The message, without the cause.
            pub fn message(&self) -> &str {
                &self.message
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, concat!($prefix, "{}"), self.message)
            }
        }

        impl std::error::Error for $name {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                self.source
                    .as_deref()
                    .map(|s| s as &(dyn std::error::Error + 'static))
            }
        }

        impl PartialEq for $name {
            fn eq(&self, other: &Self) -> bool {
                self.message == other.message
            }
        }

        impl Eq for $name {}
    };
}

pub(crate) use message_error;
