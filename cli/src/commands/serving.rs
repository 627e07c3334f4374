//! What `toolgate inbox` and `toolgate gateway --listen` share to serve
//! beyond loopback: a certificate and key for HTTPS, read from PEM files.

use std::path::PathBuf;

use toolgate_gateway::tls::Tls;

use crate::Failure;

/// The certificate and key given (`--tls-cert`, `--tls-key`, each
/// requiring the other), ready to serve HTTPS; none without them. A file
/// that does not read, or does not hold what it should, is refused naming
/// it and what is wrong.
pub(super) fn tls(cert: Option<&PathBuf>, key: Option<&PathBuf>) -> Result<Option<Tls>, Failure> {
    match (cert, key) {
        (Some(cert), Some(key)) => Tls::from_pem_files(cert, key)
            .map(Some)
            .map_err(|error| Failure::Refused(error.to_string())),
        (None, None) => Ok(None),
        // clap requires each with the other.
        _ => Err(Failure::Usage(
            "--tls-cert and --tls-key are given together".to_owned(),
        )),
    }
}

/// Whether `url` is an `https://` one.
pub(super) fn is_https(url: &str) -> bool {
    url.trim()
        .get(..8)
        .is_some_and(|scheme| scheme.eq_ignore_ascii_case("https://"))
}
