//! The data-class ladder: what an operator declares a server's tools
//! return. There is no default: an undeclared or unknown class makes a server
//! inert.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// What a server's tools return, least sensitive first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DataClass {
    /// Content anyone may read.
    PublicContent,
    /// Content editors work on.
    EditorContent,
    /// Source code.
    SourceCode,
    /// Internal configuration.
    InternalConfiguration,
    /// System diagnostics: logs, traces, metrics.
    SystemDiagnostics,
    /// Next to secrets: credentials' surroundings, key material's metadata.
    SecretAdjacent,
}

impl DataClass {
    /// Every class, least sensitive first.
    pub const LADDER: [DataClass; 6] = [
        DataClass::PublicContent,
        DataClass::EditorContent,
        DataClass::SourceCode,
        DataClass::InternalConfiguration,
        DataClass::SystemDiagnostics,
        DataClass::SecretAdjacent,
    ];

    /// The stored spelling.
    pub const fn as_str(self) -> &'static str {
        match self {
            DataClass::PublicContent => "public_content",
            DataClass::EditorContent => "editor_content",
            DataClass::SourceCode => "source_code",
            DataClass::InternalConfiguration => "internal_configuration",
            DataClass::SystemDiagnostics => "system_diagnostics",
            DataClass::SecretAdjacent => "secret_adjacent",
        }
    }

    /// True when `self` is no more sensitive than `limit`.
    pub fn is_at_most(self, limit: DataClass) -> bool {
        self <= limit
    }

    /// The most sensitive of `classes`; `None` for none.
    pub fn strictest(classes: impl IntoIterator<Item = DataClass>) -> Option<DataClass> {
        classes.into_iter().max()
    }

    /// Reads a stored class. Anything but an exact spelling is `None`: the
    /// server is inert, and no class is guessed.
    pub fn from_stored(stored: Option<&str>) -> Option<DataClass> {
        stored.and_then(|s| s.parse().ok())
    }
}

/// The text is not one of the six classes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown data class `{0}`; expected one of: public_content, editor_content, source_code, internal_configuration, system_diagnostics, secret_adjacent"
)]
pub struct UnknownDataClass(pub String);

impl FromStr for DataClass {
    type Err = UnknownDataClass;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        DataClass::LADDER
            .into_iter()
            .find(|c| c.as_str() == s)
            .ok_or_else(|| UnknownDataClass(s.to_owned()))
    }
}

impl fmt::Display for DataClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ladder_is_ordered_and_round_trips() {
        for pair in DataClass::LADDER.windows(2) {
            assert!(pair[0] < pair[1]);
            assert!(pair[0].is_at_most(pair[1]));
            assert!(!pair[1].is_at_most(pair[0]));
        }
        for class in DataClass::LADDER {
            assert!(class.is_at_most(class));
            assert_eq!(class.as_str().parse(), Ok(class));
            assert_eq!(DataClass::from_stored(Some(class.as_str())), Some(class));
        }
        assert_eq!(
            DataClass::strictest([DataClass::SourceCode, DataClass::PublicContent]),
            Some(DataClass::SourceCode)
        );
        assert_eq!(DataClass::strictest([]), None);
    }

    #[test]
    fn unknown_or_undeclared_classes_are_none() {
        for stored in [
            None,
            Some(""),
            Some("Public_Content"),
            Some("secret"),
            Some(" source_code"),
        ] {
            assert_eq!(DataClass::from_stored(stored), None, "{stored:?}");
        }
        assert_eq!(
            "secret".parse::<DataClass>().err().map(|e| e.to_string()),
            Some("unknown data class `secret`; expected one of: public_content, editor_content, source_code, internal_configuration, system_diagnostics, secret_adjacent".into())
        );
    }
}
