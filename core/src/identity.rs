//! Who decides: operator names as people, not strings (four eyes).
//!
//! A name is taken in Unicode NFKC, trimmed, and must be non-empty and
//! printable: a name a reviewer cannot read is refused rather than compared.
//! Two names are the same person when their *keys* are equal. The key is the
//! name reduced to its confusable skeleton (Unicode TS #39: a Cyrillic `а`
//! and a Latin `a`, a dotless `ı` and an `i`, `1`, `I` and `l` share one),
//! stripped of combining marks and lower-cased — the skeleton taken before
//! and after lower-casing until nothing changes, so a capital look-alike
//! (`aIice`, `Ƅob`) folds as well as a small one — and with `i` and `l` as one
//! letter. Latin small capitals, which TS #39 does not map, fold into their
//! letters too; and a decider's name may not hold a letter Unicode restricts in
//! identifiers (small capitals, letters of scripts in limited use, obsolete
//! and technical letters), which could pass for another without folding. So `alice`, ` Alice `, `ａｌｉｃｅ`
//! (full-width), `ALICE`, `аlice` (Cyrillic), `aIice` (capital I) and
//! `alice̲` are one person for four eyes, and an empty name is nobody at all. The key
//! errs towards "the same person": a false match refuses an approval, a false
//! mismatch would let the requester approve their own run.
//!
//! ```
//! use toolgate::identity::{Operator, IdentitySource};
//!
//! let alice = Operator::new("alice", IdentitySource::Given).unwrap();
//! let again = Operator::new(" ＡＬＩＣＥ ", IdentitySource::Flag).unwrap();
//! assert!(alice.is_same_person(&again));
//! assert_eq!(again.name(), "ALICE");
//! assert!(Operator::new("  ", IdentitySource::Flag).is_err());
//! assert!(Operator::new("bob\u{202e}", IdentitySource::Flag).is_err());
//! ```

use std::fmt;

use serde::{Deserialize, Serialize};
use unicode_normalization::UnicodeNormalization;
use unicode_security::GeneralSecurityProfile;

use crate::visible::{is_hidden, visible};

/// Where an operator's name came from, kept in the decision record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IdentitySource {
    /// Named by the host program through the library.
    #[default]
    Given,
    /// A command-line flag (`--as`).
    Flag,
    /// An environment variable (`TOOLGATE_OPERATOR`).
    Environment,
    /// The operating system's user (`USER` / `LOGNAME`), when nothing else
    /// named the operator.
    OsUser,
    /// The operator signed in (the web inbox), with a one-time link made
    /// for them by name.
    SignedIn,
    /// Recorded before sources were kept.
    Unknown,
}

impl IdentitySource {
    /// The stable snake_case name.
    pub const fn as_str(self) -> &'static str {
        match self {
            IdentitySource::Given => "given",
            IdentitySource::Flag => "flag",
            IdentitySource::Environment => "environment",
            IdentitySource::OsUser => "os_user",
            IdentitySource::SignedIn => "signed_in",
            IdentitySource::Unknown => "unknown",
        }
    }

    /// Reads the stable name; anything else is [`IdentitySource::Unknown`].
    pub fn from_name(name: &str) -> Self {
        [
            IdentitySource::Given,
            IdentitySource::Flag,
            IdentitySource::Environment,
            IdentitySource::OsUser,
            IdentitySource::SignedIn,
        ]
        .into_iter()
        .find(|s| s.as_str() == name)
        .unwrap_or(IdentitySource::Unknown)
    }
}

impl fmt::Display for IdentitySource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that cannot stand for an operator.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IdentityError {
    /// Nothing is left once the name is trimmed.
    #[error("the operator name is empty")]
    Empty,
    /// The name holds a character a reader could not see, or that a terminal
    /// would interpret.
    #[error("the operator name `{shown}` holds a character that cannot be read (shown escaped)")]
    Unprintable {
        /// The name with the character shown escaped.
        shown: String,
    },
    /// The name is longer than anyone types.
    #[error("the operator name is longer than {max} characters")]
    TooLong {
        /// The limit.
        max: usize,
    },
    /// The name holds a letter Unicode restricts in identifiers (TS #39's
    /// General Security Profile): a small capital, a letter of a script in
    /// limited use, a technical or obsolete letter — characters that pass for
    /// another letter without folding into it.
    #[error(
        "the operator name `{shown}` holds `{character}` (U+{code:04X}), a letter Unicode restricts in identifiers because it can pass for another: name the person in the letters of a common script"
    )]
    Restricted {
        /// The name, hidden characters escaped.
        shown: String,
        /// The letter.
        character: char,
        /// Its code point.
        code: u32,
    },
}

/// How a decision reached the record: the way its decider answered. Kept in
/// the decision record ([`DecisionRecord::channel`](crate::audit::DecisionRecord::channel))
/// and shown beside the decider's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Channel {
    /// The operator's command line (`toolgate runs …`).
    Console,
    /// The web inbox, by an operator who signed in.
    Inbox,
    /// The requester, through their MCP client's own prompt (an MCP
    /// elicitation): the requester answering, never a second person. Its
    /// approvals are refused under four eyes and never count toward several
    /// approvers ([`elicited_answer_problem`](crate::audit::elicited_answer_problem)), and it is used only where
    /// an operator turned it on — some clients answer elicitations without
    /// asking anyone.
    Elicitation,
    /// A proxy the operator trusts, naming the operator it signed in.
    Proxy,
    /// A host program, through the library.
    Library,
}

impl Channel {
    /// The stable snake_case name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Channel::Console => "console",
            Channel::Inbox => "inbox",
            Channel::Elicitation => "elicitation",
            Channel::Proxy => "proxy",
            Channel::Library => "library",
        }
    }

    /// Reads the stable name; `None` for anything else.
    pub fn from_name(name: &str) -> Option<Self> {
        [
            Channel::Console,
            Channel::Inbox,
            Channel::Elicitation,
            Channel::Proxy,
            Channel::Library,
        ]
        .into_iter()
        .find(|channel| channel.as_str() == name)
    }
}

impl fmt::Display for Channel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An MCP client as it declared itself (`clientInfo`): its word, shown to a
/// reviewer beside the requester, and never read by any decision.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeclaredClient {
    /// The name it gave, cut to [`MAX_NAME_CHARS`] characters.
    pub name: String,
    /// The version it gave, if any, cut the same way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

impl DeclaredClient {
    /// What a client declared, each text cut to [`MAX_NAME_CHARS`]
    /// characters; to be shown escaped ([`crate::visible`]) wherever it is
    /// shown.
    pub fn new(name: &str, version: Option<&str>) -> Self {
        let cut = |text: &str| text.chars().take(MAX_NAME_CHARS).collect::<String>();
        Self {
            name: cut(name),
            version: version.map(cut),
        }
    }
}

/// Its name and version, raw, as the client gave them: whoever shows it
/// escapes it ([`crate::visible`]).
impl fmt::Display for DeclaredClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)?;
        if let Some(version) = &self.version {
            write!(f, " {version}")?;
        }
        Ok(())
    }
}

/// The longest operator name accepted.
pub const MAX_NAME_CHARS: usize = 128;

/// An operator's name, normalised and checked, with its comparison key and
/// where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Operator {
    name: String,
    key: String,
    source: IdentitySource,
    channel: Channel,
}

impl Operator {
    /// Checks and normalises `name` (NFKC, trimmed; non-empty, printable, at
    /// most [`MAX_NAME_CHARS`]).
    pub fn new(name: &str, source: IdentitySource) -> Result<Self, IdentityError> {
        let name = normalise(name)?;
        Ok(Self {
            key: confusable_key(&name),
            name,
            source,
            channel: Channel::Library,
        })
    }

    /// The same operator, deciding through `channel` (a new operator
    /// decides through [`Channel::Library`]).
    #[must_use]
    pub fn via(mut self, channel: Channel) -> Self {
        self.channel = channel;
        self
    }

    /// The channel the operator decides through.
    pub fn channel(&self) -> Channel {
        self.channel
    }

    /// The name as it is recorded: NFKC, trimmed.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The comparison key: see the module's documentation.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Where the name came from.
    pub fn source(&self) -> IdentitySource {
        self.source
    }

    /// True when both name the same person.
    pub fn is_same_person(&self, other: &Operator) -> bool {
        self.key == other.key
    }
}

impl fmt::Display for Operator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

fn confusable_key(name: &str) -> String {
    // TS #39 folds some capitals into other letters (`I` into `l`, `Ƅ` into
    // `b`) and some small letters into others, so the skeleton is taken
    // both before and after lower-casing, until nothing changes (a few
    // rounds at most). Last, `i` and `l` are one letter: `ALICE` lower-cases
    // to `alice` while `aIice` folds to `alice` through `l`, and a reviewer
    // reads all three as one name.
    let mut key: String = name
        .chars()
        .map(|c| {
            SMALL_CAPITALS
                .iter()
                .find(|(small, _)| *small == c)
                .map_or(c, |(_, letter)| *letter)
        })
        .collect();
    for _ in 0..6 {
        let next = fold_once(&fold_once(&key).to_lowercase());
        if next == key {
            break;
        }
        key = next;
    }
    key.replace('i', "l")
}

/// One round of the key: skeleton, then the marks and blanks dropped, then
/// lower case.
fn fold_once(name: &str) -> String {
    let skeleton: String = unicode_security::skeleton(name).collect();
    skeleton
        .nfd()
        // Marks, white space and the blank Braille pattern change how a name
        // looks, not whom it names.
        .filter(|c| {
            !unicode_normalization::char::is_combining_mark(*c)
                && !c.is_whitespace()
                && *c != '\u{2800}'
        })
        .collect::<String>()
        .to_lowercase()
}

fn normalise(name: &str) -> Result<String, IdentityError> {
    let name: String = name.nfkc().collect();
    let name = name.trim();
    if name.is_empty() {
        return Err(IdentityError::Empty);
    }
    if name
        .chars()
        .any(|c| is_hidden(c) || c.is_control() || unreadable(c))
    {
        return Err(IdentityError::Unprintable {
            shown: visible(name).into_owned(),
        });
    }
    if name.chars().count() > MAX_NAME_CHARS {
        return Err(IdentityError::TooLong {
            max: MAX_NAME_CHARS,
        });
    }
    if let Some(character) = name
        .chars()
        .find(|c| !c.is_ascii() && c.is_alphanumeric() && !c.identifier_allowed())
    {
        return Err(IdentityError::Restricted {
            shown: visible(name).into_owned(),
            character,
            code: u32::from(character),
        });
    }
    Ok(name.to_owned())
}

/// A character no reader can tell apart in a name: one Unicode does not
/// characterise for identifiers (TS #39 gives it no identifier type:
/// unassigned, private use, a noncharacter), the object and replacement
/// characters, and a skin-tone modifier on its own. Appended to a name, each
/// would make another name that reads the same.
fn unreadable(c: char) -> bool {
    !c.is_ascii()
        && (c.identifier_type().is_none()
            || matches!(c, '\u{fffc}' | '\u{fffd}' | '\u{1f3fb}'..='\u{1f3ff}'))
}

/// Latin small capitals (and the IPA letters drawn as them; there is no small
/// capital x), which TS #39's
/// skeleton leaves as they are though each reads as its letter: `ᴀʟɪᴄᴇ` is
/// `alice` to a reviewer. An operator's name may not hold them (they are
/// restricted); a recorded name that does still folds.
const SMALL_CAPITALS: [(char, char); 25] = [
    ('\u{1d00}', 'a'),
    ('\u{0299}', 'b'),
    ('\u{1d04}', 'c'),
    ('\u{1d05}', 'd'),
    ('\u{1d07}', 'e'),
    ('\u{a730}', 'f'),
    ('\u{0262}', 'g'),
    ('\u{029c}', 'h'),
    ('\u{026a}', 'i'),
    ('\u{1d0a}', 'j'),
    ('\u{1d0b}', 'k'),
    ('\u{029f}', 'l'),
    ('\u{1d0d}', 'm'),
    ('\u{0274}', 'n'),
    ('\u{1d0f}', 'o'),
    ('\u{1d18}', 'p'),
    ('\u{a7af}', 'q'),
    ('\u{0280}', 'r'),
    ('\u{a731}', 's'),
    ('\u{1d1b}', 't'),
    ('\u{1d1c}', 'u'),
    ('\u{1d20}', 'v'),
    ('\u{1d21}', 'w'),
    ('\u{028f}', 'y'),
    ('\u{1d22}', 'z'),
];

/// Whether two recorded names are the same person, for four eyes. A name that
/// would not be accepted as an operator's (a restricted letter, say) is still
/// folded the same way, so a name nobody could type as a decider still
/// matches every spelling of its person — never nobody.
pub fn same_person(a: &str, b: &str) -> bool {
    let key = |name: &str| {
        Operator::new(name, IdentitySource::Unknown).map_or_else(
            |_| confusable_key(name.nfkc().collect::<String>().trim()),
            |o| o.key,
        )
    };
    key(a) == key(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(name: &str) -> Result<Operator, IdentityError> {
        Operator::new(name, IdentitySource::Given)
    }

    #[test]
    fn the_four_eyes_dodges_of_a_string_compare_are_one_person_or_nobody() {
        let Ok(alice) = op("alice") else {
            panic!("a plain name is accepted");
        };
        for same in [
            "alice ",
            " alice",
            "ALICE",
            "Alice",
            "ａｌｉｃｅ",
            "alice\u{3000}",
        ] {
            let Ok(other) = op(same) else {
                panic!("`{same}` normalises");
            };
            assert!(alice.is_same_person(&other), "`{same}`");
            assert!(same_person("alice", same), "`{same}`");
        }
        assert_eq!(op(""), Err(IdentityError::Empty));
        assert_eq!(op(" \t "), Err(IdentityError::Empty));
        for hidden in [
            "al\u{200b}ice",
            "alice\u{202e}",
            "\u{1b}[2Kbob",
            "bo\u{0}b",
            "alice\u{180b}",
            "alice\u{17b4}",
            "alice\u{e0080}",
            "alice\u{fff0}",
            "alice\u{13430}",
            // Characters nobody can tell apart at the end of a name:
            // private use, unassigned, noncharacters, the object and
            // replacement characters, a lone skin-tone modifier, blanks
            // that are no space.
            "alice\u{e000}",
            "alice\u{f8ff}",
            "alice\u{f0000}",
            "alice\u{100000}",
            "alice\u{378}",
            "alice\u{fffe}",
            "alice\u{ffff}",
            "alice\u{fdd0}",
            "alice\u{fffc}",
            "alice\u{fffd}",
            "alice\u{1f3fb}",
            "alice\u{1d159}",
            "alice\u{2800}",
        ] {
            assert!(
                matches!(op(hidden), Err(IdentityError::Unprintable { .. })),
                "{hidden:?}"
            );
        }
        assert!(matches!(
            op(&"a".repeat(MAX_NAME_CHARS + 1)),
            Err(IdentityError::TooLong { .. })
        ));
        assert!(!same_person("alice", "bob"));
    }

    /// Capital look-alikes fold too: TS #39 folds `I` into `l` and `Ƅ` into
    /// `b`, which lower-casing first would have hidden.
    #[test]
    fn capital_look_alikes_are_the_same_person() {
        for (name, look_alike) in [
            ("alice", "aIice"),
            ("bob", "\u{184}ob"),
            ("bill", "biII"),
            ("paul", "pauI"),
            ("olga", "OIga"),
            ("lily", "IiIy"),
            ("will", "wiII"),
            ("alice", "ALICE"),
            ("bob", "b0b"),
        ] {
            assert!(same_person(name, look_alike), "{name} ~ {look_alike:?}");
        }
        assert!(!same_person("alice", "bob"));
        assert!(!same_person("carol", "dave"));
    }

    /// Small capitals read as their letters: a decider may not use them, and
    /// a recorded name that holds them is its letters' person.
    #[test]
    fn small_capitals_are_refused_and_fold() {
        for (name, look_alike) in [
            ("alice", "\u{1d00}lice"),
            ("alice", "a\u{29f}ice"),
            ("alice", "alic\u{1d07}"),
            ("alice", "\u{1d00}\u{29f}\u{26a}\u{1d04}\u{1d07}"),
            ("bob", "\u{299}ob"),
            ("bob", "\u{299}\u{1d0f}\u{299}"),
        ] {
            assert!(
                matches!(op(look_alike), Err(IdentityError::Restricted { .. })),
                "{look_alike:?} is refused as a decider"
            );
            assert!(same_person(name, look_alike), "{name} ~ {look_alike:?}");
        }
        for (small, letter) in SMALL_CAPITALS {
            assert!(!small.identifier_allowed(), "{small:?} is restricted");
            assert!(
                same_person(&letter.to_string(), &small.to_string()),
                "{small:?}"
            );
        }
        for fine in ["José", "Zoë", "王芳", "Ørjan", "O'Neil", "mary-ann", "ıan"] {
            assert!(op(fine).is_ok(), "{fine}");
        }
    }

    #[test]
    fn sources_round_trip_by_name() {
        for source in [
            IdentitySource::Given,
            IdentitySource::Flag,
            IdentitySource::Environment,
            IdentitySource::OsUser,
        ] {
            assert_eq!(IdentitySource::from_name(source.as_str()), source);
        }
        assert_eq!(IdentitySource::from_name("root"), IdentitySource::Unknown);
    }
}
