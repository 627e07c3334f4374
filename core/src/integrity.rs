//! Keyed integrity for what a store keeps: suspended-run documents and
//! decision records, authenticated with HMAC-SHA-256 under a secret the host
//! holds outside the database.
//!
//! Without a key, a document carries a plain checksum (XXH3-128): it catches
//! accidents (a truncated write, a damaged disk), not intent — anyone who can
//! write the database can change a document and recompute the checksum. With
//! a key, the document carries a MAC instead, and a document that does not
//! verify — changed, re-checksummed, or written without the key — is refused
//! fail-closed.
//!
//! ```
//! use toolgate::integrity::IntegrityKey;
//!
//! let key = IntegrityKey::new(b"a secret of at least sixteen bytes").unwrap();
//! let tag = key.tag(b"body");
//! assert!(tag.starts_with("hmac-sha256:"));
//! assert!(key.verify(b"body", &tag));
//! assert!(!key.verify(b"bodY", &tag));
//! assert!(IntegrityKey::new(b"short").is_err());
//! ```

use std::fmt;

use hmac::{KeyInit, Mac};
use sha2::Sha256;

type HmacSha256 = hmac::Hmac<Sha256>;

/// The prefix of a keyed tag.
pub const MAC_PREFIX: &str = "hmac-sha256:";

/// The shortest key accepted, in bytes.
pub const MIN_KEY_BYTES: usize = 16;

/// What [`IntegrityKey::request_state_key`] is derived from.
pub const REQUEST_STATE_LABEL: &[u8] = b"toolgate/mrtr";

/// A secret for authenticating stored documents and records.
#[derive(Clone)]
pub struct IntegrityKey {
    mac: HmacSha256,
}

/// A key that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// Too short to resist guessing.
    #[error("the integrity key is {len} bytes long; it must be at least {min} bytes")]
    TooShort {
        /// Its length.
        len: usize,
        /// The minimum.
        min: usize,
    },
    /// The MAC refused the key.
    #[error("the integrity key cannot be used: {0}")]
    Unusable(String),
}

impl IntegrityKey {
    /// A key from its bytes (at least [`MIN_KEY_BYTES`]). Surrounding white
    /// space is part of the key: trim a key read from a file first.
    pub fn new(bytes: &[u8]) -> Result<Self, KeyError> {
        if bytes.len() < MIN_KEY_BYTES {
            return Err(KeyError::TooShort {
                len: bytes.len(),
                min: MIN_KEY_BYTES,
            });
        }
        let mac =
            HmacSha256::new_from_slice(bytes).map_err(|e| KeyError::Unusable(e.to_string()))?;
        Ok(Self { mac })
    }

    fn mac(&self) -> HmacSha256 {
        self.mac.clone()
    }

    /// The tag of `bytes`: `hmac-sha256:` and 64 hex digits.
    pub fn tag(&self, bytes: &[u8]) -> String {
        self.tag_parts(&[bytes])
    }

    /// The tag of `parts`, one after the other, as of their concatenation.
    pub(crate) fn tag_parts(&self, parts: &[&[u8]]) -> String {
        let mut mac = self.mac();
        for part in parts {
            mac.update(part);
        }
        let code = mac.finalize().into_bytes();
        let mut text = String::with_capacity(MAC_PREFIX.len() + 64);
        text.push_str(MAC_PREFIX);
        for byte in code {
            text.push(char::from(HEX[usize::from(byte >> 4)]));
            text.push(char::from(HEX[usize::from(byte & 0xf)]));
        }
        text
    }

    /// The 32-byte key that seals a gateway's multi-round-trip request
    /// state (MCP's `requestState`): HMAC-SHA-256 under this key of
    /// [`REQUEST_STATE_LABEL`]. Derived, never the key itself, so that a
    /// tag of a stored document and a sealed state can never stand for one
    /// another.
    pub fn request_state_key(&self) -> [u8; 32] {
        let mut mac = self.mac();
        mac.update(REQUEST_STATE_LABEL);
        mac.finalize().into_bytes().into()
    }

    /// True when `tag` is the tag of `bytes` under this key, compared in
    /// constant time.
    pub fn verify(&self, bytes: &[u8], tag: &str) -> bool {
        self.verify_parts(&[bytes], tag)
    }

    /// [`IntegrityKey::verify`] over `parts`, one after the other.
    pub(crate) fn verify_parts(&self, parts: &[&[u8]], tag: &str) -> bool {
        let Some(hex) = tag.strip_prefix(MAC_PREFIX) else {
            return false;
        };
        let Some(code) = decode_hex(hex) else {
            return false;
        };
        let mut mac = self.mac();
        for part in parts {
            mac.update(part);
        }
        mac.verify_slice(&code).is_ok()
    }
}

impl fmt::Debug for IntegrityKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("IntegrityKey(..)")
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

fn decode_hex(hex: &str) -> Option<Vec<u8>> {
    if hex.len() != 64 {
        return None;
    }
    let digit = |b: u8| match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        _ => None,
    };
    hex.as_bytes()
        .chunks_exact(2)
        .map(|pair| Some((digit(pair[0])? << 4) | digit(pair[1])?))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_verify_only_under_their_key_and_bytes() {
        let Ok(key) = IntegrityKey::new(&[7; 32]) else {
            panic!("a 32-byte key is accepted");
        };
        let Ok(other) = IntegrityKey::new(&[8; 32]) else {
            panic!("a 32-byte key is accepted");
        };
        let tag = key.tag(b"document");
        assert_eq!(tag.len(), MAC_PREFIX.len() + 64);
        assert!(key.verify(b"document", &tag));
        assert!(!other.verify(b"document", &tag));
        assert!(!key.verify(b"documenT", &tag));
        assert!(!key.verify(b"document", "sha256:00"));
        assert!(!key.verify(b"document", &tag.to_uppercase()));
        assert!(!key.verify(b"document", &tag[..tag.len() - 2]));
        assert_eq!(format!("{key:?}"), "IntegrityKey(..)");
    }

    #[test]
    fn the_request_state_key_is_the_mac_of_its_label() {
        let Ok(key) = IntegrityKey::new(&[7; 32]) else {
            panic!("a 32-byte key is accepted");
        };
        let Ok(other) = IntegrityKey::new(&[8; 32]) else {
            panic!("a 32-byte key is accepted");
        };
        let derived = key.request_state_key();
        // HMAC-SHA-256(key, "toolgate/mrtr"), as the tag of the label.
        let tag = key.tag(REQUEST_STATE_LABEL);
        assert_eq!(decode_hex(&tag[MAC_PREFIX.len()..]), Some(derived.to_vec()));
        assert_ne!(derived, other.request_state_key());
        assert_ne!(&derived[..], &[7; 32][..]);
    }
}
