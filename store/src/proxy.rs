//! The secret a trusted reverse proxy proves itself with, on every request,
//! to the server behind it — the inbox's and the gateway's one proof.
//!
//! A server that listens beyond loopback in plain HTTP trusts a proxy in
//! front only as far as a request carries the secret they share: never by
//! the address a request comes from (on loopback any local process, an
//! agent's shell among them, could send anything). The secret travels in
//! [`SECRET_HEADER`]; [`ProxySecret::take_proof`] checks it — exactly one,
//! hashed, the digests compared in constant time, so neither the time nor
//! the length tells anything — and removes it before anything else reads
//! the request. The secret is never logged ([`ProxySecret`]'s `Debug` shows
//! none of it).
//!
//! ```
//! use toolgate_store::proxy::{ProxySecret, SECRET_HEADER, Unproven};
//!
//! let secret = ProxySecret::new("a secret of at least sixteen bytes\n")?;
//! let mut headers = http::HeaderMap::new();
//! headers.insert(SECRET_HEADER, "a secret of at least sixteen bytes".parse()?);
//! assert_eq!(secret.take_proof(&mut headers), Ok(()));
//! // Gone: no one further reads it.
//! assert!(headers.get(SECRET_HEADER).is_none());
//! assert_eq!(secret.take_proof(&mut headers), Err(Unproven::Missing));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::path::{Path, PathBuf};

use http::HeaderMap;
use sha2::{Digest as _, Sha256};
use subtle::ConstantTimeEq as _;

/// The header the proxy proves itself with: the shared secret, on every
/// request.
pub const SECRET_HEADER: &str = "x-toolgate-proxy-secret";

/// The shortest secret taken, in bytes.
pub const MIN_SECRET_LEN: usize = 16;

/// The secret a trusted proxy sends in [`SECRET_HEADER`]: kept as its
/// SHA-256 only.
#[derive(Clone)]
pub struct ProxySecret {
    digest: [u8; 32],
}

impl std::fmt::Debug for ProxySecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ProxySecret([redacted])")
    }
}

/// A proxy's secret that cannot be taken.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProxySecretError {
    /// The secret is too short to be one.
    #[error(
        "the proxy's secret is {0} bytes long: it must be at least {MIN_SECRET_LEN} (make one with `openssl rand -hex 32`)"
    )]
    Short(usize),
    /// The secret's file is too short to hold one.
    #[error(
        "{}: the proxy's secret is {len} bytes long: it must be at least {MIN_SECRET_LEN} (make one with `openssl rand -hex 32`)",
        path.display()
    )]
    ShortInFile {
        /// The file.
        path: PathBuf,
        /// The secret's length, in bytes.
        len: usize,
    },
    /// The secret's file cannot be read.
    #[error("cannot read the proxy's secret from {}: {error}", path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
}

/// Why a request does not prove it came from the trusted proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Unproven {
    /// It carried no secret.
    #[error("carried no proxy secret ({SECRET_HEADER})")]
    Missing,
    /// It carried another secret, or more than one.
    #[error("carried a proxy secret ({SECRET_HEADER}) that is not the one shared")]
    Wrong,
}

impl ProxySecret {
    /// The secret `secret`, without its surrounding whitespace (a file's
    /// final newline, say): at least [`MIN_SECRET_LEN`] bytes.
    pub fn new(secret: &str) -> Result<Self, ProxySecretError> {
        let secret = secret.trim();
        if secret.len() < MIN_SECRET_LEN {
            return Err(ProxySecretError::Short(secret.len()));
        }
        Ok(Self {
            digest: Sha256::digest(secret.as_bytes()).into(),
        })
    }

    /// The secret in the file at `path` ([`ProxySecret::new`]); an error
    /// names the file.
    pub fn read(path: &Path) -> Result<Self, ProxySecretError> {
        let secret =
            std::fs::read_to_string(path).map_err(|error| ProxySecretError::Unreadable {
                path: path.to_owned(),
                error,
            })?;
        Self::new(&secret).map_err(|error| match error {
            ProxySecretError::Short(len) => ProxySecretError::ShortInFile {
                path: path.to_owned(),
                len,
            },
            other => other,
        })
    }

    /// Whether `given` is the secret: both hashed, the digests compared in
    /// constant time.
    pub fn matches(&self, given: &[u8]) -> bool {
        let given: [u8; 32] = Sha256::digest(given).into();
        bool::from(self.digest.ct_eq(&given))
    }

    /// Whether `headers` carry the secret in [`SECRET_HEADER`], exactly
    /// once; whatever the answer, the header is removed from them — no
    /// one further reads it.
    pub fn take_proof(&self, headers: &mut HeaderMap) -> Result<(), Unproven> {
        let verdict = {
            let mut given = headers.get_all(SECRET_HEADER).iter();
            match (given.next(), given.next()) {
                (None, _) => Err(Unproven::Missing),
                (Some(one), None) if self.matches(one.as_bytes()) => Ok(()),
                (Some(_), _) => Err(Unproven::Wrong),
            }
        };
        headers.remove(SECRET_HEADER);
        verdict
    }
}

#[cfg(test)]
mod tests {
    use super::{MIN_SECRET_LEN, ProxySecret, ProxySecretError, SECRET_HEADER, Unproven};
    use http::{HeaderMap, HeaderValue};

    const SECRET: &str = "0123456789abcdef0123";

    fn headers(values: &[&str]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for value in values {
            headers.append(SECRET_HEADER, HeaderValue::from_str(value).unwrap());
        }
        headers.append("x-other", HeaderValue::from_static("kept"));
        headers
    }

    #[test]
    fn only_the_secret_once_proves_and_it_is_always_removed() {
        let secret = ProxySecret::new(&format!("  {SECRET}\n")).unwrap();
        for (given, verdict) in [
            (&[SECRET][..], Ok(())),
            (&[][..], Err(Unproven::Missing)),
            (&["0123456789abcdef0124"][..], Err(Unproven::Wrong)),
            (&["0123456789abcdef012"][..], Err(Unproven::Wrong)),
            (&[""][..], Err(Unproven::Wrong)),
            (&[SECRET, SECRET][..], Err(Unproven::Wrong)),
            (&["wrong one here!!!!", SECRET][..], Err(Unproven::Wrong)),
        ] {
            let mut headers = headers(given);
            assert_eq!(secret.take_proof(&mut headers), verdict, "{given:?}");
            assert!(headers.get(SECRET_HEADER).is_none(), "{given:?}");
            assert_eq!(headers.get("x-other").unwrap(), "kept");
        }
    }

    #[test]
    fn a_short_secret_is_refused_and_the_file_named() {
        assert!(matches!(
            ProxySecret::new(" 0123456789abcde \n"),
            Err(ProxySecretError::Short(15))
        ));
        assert!(ProxySecret::new(&"x".repeat(MIN_SECRET_LEN)).is_ok());
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("secret");
        std::fs::write(&path, "short\n").unwrap();
        let error = ProxySecret::read(&path).unwrap_err();
        assert!(
            matches!(&error, ProxySecretError::ShortInFile { len: 5, .. }),
            "{error:?}"
        );
        assert!(error.to_string().starts_with(&path.display().to_string()));
        let missing = dir.path().join("missing");
        let error = ProxySecret::read(&missing).unwrap_err();
        assert!(
            error.to_string().starts_with(&format!(
                "cannot read the proxy's secret from {}",
                missing.display()
            )),
            "{error}"
        );
        std::fs::write(&path, format!("{SECRET}\n")).unwrap();
        assert!(ProxySecret::read(&path).unwrap().matches(SECRET.as_bytes()));
    }

    #[test]
    fn its_debug_shows_nothing_of_it() {
        let secret = ProxySecret::new(SECRET).unwrap();
        assert_eq!(format!("{secret:?}"), "ProxySecret([redacted])");
    }
}
