//! HTTPS for toolgate's servers — the gateway over HTTP and the inbox:
//! a certificate and its key read from PEM files, and a listener whose
//! connections are TLS, for [`axum::serve()`] or
//! [`HttpGateway::serve`](crate::http::HttpGateway::serve).
//!
//! rustls with the workspace's one crypto provider (aws-lc-rs, the one
//! reqwest already builds), TLS 1.2 and 1.3, HTTP/1.1 announced by ALPN.
//! Each connection's handshake runs on its own task and is given
//! [`HANDSHAKE_WITHIN`]: a client that opens a connection and says
//! nothing holds up no one else.
//!
//! ```no_run
//! # async fn serve(router: axum::Router) -> Result<(), Box<dyn std::error::Error>> {
//! use std::path::Path;
//! let tls = toolgate_gateway::tls::Tls::from_pem_files(
//!     Path::new("/etc/toolgate/cert.pem"),
//!     Path::new("/etc/toolgate/key.pem"),
//! )?;
//! let listener = tokio::net::TcpListener::bind("0.0.0.0:8443").await?;
//! axum::serve(tls.listen(listener)?, router).await?;
//! # Ok(()) }
//! ```

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::{self, PemObject as _};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

/// How long a client has to finish its TLS handshake once connected.
pub const HANDSHAKE_WITHIN: Duration = Duration::from_secs(10);

/// How many connections whose handshake is done may wait to be served.
const WAITING: usize = 64;

/// A certificate and key that could not be used; each names its file and
/// what is wrong with it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TlsError {
    /// A file could not be read.
    #[error("cannot read the TLS {what} file {}: {error}", path.display())]
    Read {
        /// "certificate" or "key".
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// The certificate file holds no PEM certificate.
    #[error(
        "the TLS certificate file {} holds no certificate: expected PEM, `-----BEGIN CERTIFICATE-----` (the server's first, then any intermediates)",
        path.display()
    )]
    NoCertificate {
        /// The file.
        path: PathBuf,
    },
    /// The key file holds no PEM private key.
    #[error(
        "the TLS key file {} holds no private key: expected PEM, `-----BEGIN PRIVATE KEY-----` (or `RSA PRIVATE KEY`, `EC PRIVATE KEY`), unencrypted",
        path.display()
    )]
    NoKey {
        /// The file.
        path: PathBuf,
    },
    /// A file holds PEM that does not read.
    #[error("the TLS {what} file {} does not read as PEM: {reason}", path.display())]
    Pem {
        /// "certificate" or "key".
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The certificate and key do not make a usable pair (the key is not
    /// the certificate's, or of a kind the provider does not take).
    #[error(
        "the TLS certificate {} and key {} cannot be used together: {reason}",
        cert.display(),
        key.display()
    )]
    Pair {
        /// The certificate file.
        cert: PathBuf,
        /// The key file.
        key: PathBuf,
        /// What rustls said.
        reason: String,
    },
    /// The listener's own address could not be read.
    #[error("cannot read the listener's address: {0}")]
    Address(std::io::Error),
}

/// A server certificate and its key, ready to serve HTTPS. Cheap to clone.
#[derive(Clone)]
pub struct Tls {
    acceptor: TlsAcceptor,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls").finish_non_exhaustive()
    }
}

/// The bytes of `path`, or why not.
fn read(what: &'static str, path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|error| TlsError::Read {
        what,
        path: path.to_owned(),
        error,
    })
}

impl Tls {
    /// The certificate chain in PEM file `cert` (the server's certificate
    /// first) and the unencrypted private key in PEM file `key`.
    pub fn from_pem_files(cert: &Path, key: &Path) -> Result<Self, TlsError> {
        let cert_pem = read("certificate", cert)?;
        let key_pem = read("key", key)?;
        let chain = CertificateDer::pem_slice_iter(&cert_pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|error| TlsError::Pem {
                what: "certificate",
                path: cert.to_owned(),
                reason: error.to_string(),
            })?;
        if chain.is_empty() {
            return Err(TlsError::NoCertificate {
                path: cert.to_owned(),
            });
        }
        let private = match PrivateKeyDer::from_pem_slice(&key_pem) {
            Ok(private) => private,
            Err(pem::Error::NoItemsFound) => {
                return Err(TlsError::NoKey {
                    path: key.to_owned(),
                });
            }
            Err(error) => {
                return Err(TlsError::Pem {
                    what: "key",
                    path: key.to_owned(),
                    reason: error.to_string(),
                });
            }
        };
        let pair = |error: rustls::Error| TlsError::Pair {
            cert: cert.to_owned(),
            key: key.to_owned(),
            reason: error.to_string(),
        };
        // The provider named, never the process's default: there is one.
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(pair)?
            .with_no_client_auth()
            .with_single_cert(chain, private)
            .map_err(pair)?;
        // Served over HTTP/1.1 only.
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Self {
            acceptor: TlsAcceptor::from(Arc::new(config)),
        })
    }

    /// Serves TLS on `listener`: its connections, once their handshake is
    /// done, are what the returned listener accepts.
    pub fn listen(self, listener: TcpListener) -> Result<TlsListener, TlsError> {
        let local = listener.local_addr().map_err(TlsError::Address)?;
        let (ready, incoming) = tokio::sync::mpsc::channel(WAITING);
        let accepting = tokio::spawn(accept(listener, self.acceptor, ready));
        Ok(TlsListener {
            incoming,
            local,
            accepting,
        })
    }
}

/// Accepts connections on `listener` and hands each, once its handshake
/// is done, to `ready` — until no one receives.
async fn accept(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    ready: tokio::sync::mpsc::Sender<(TlsStream<TcpStream>, SocketAddr)>,
) {
    loop {
        let accepted = tokio::select! {
            () = ready.closed() => return,
            accepted = listener.accept() => accepted,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(error) => {
                // Out of descriptors, say: wait a moment rather than spin.
                tracing::warn!(%error, "a connection could not be accepted");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let acceptor = acceptor.clone();
        let ready = ready.clone();
        tokio::spawn(async move {
            match tokio::time::timeout(HANDSHAKE_WITHIN, acceptor.accept(stream)).await {
                Ok(Ok(tls)) => {
                    let _ = ready.send((tls, peer)).await;
                }
                Ok(Err(error)) => {
                    tracing::debug!(%peer, %error, "a TLS handshake failed");
                }
                Err(_) => {
                    tracing::debug!(%peer, "a TLS handshake took too long");
                }
            }
        });
    }
}

/// A listener whose connections are TLS ([`Tls::listen`]); for
/// [`axum::serve()`]. Stops accepting when dropped.
pub struct TlsListener {
    incoming: tokio::sync::mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    local: SocketAddr,
    accepting: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for TlsListener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsListener")
            .field("local", &self.local)
            .finish_non_exhaustive()
    }
}

impl TlsListener {
    /// The address listened on.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }
}

impl Drop for TlsListener {
    fn drop(&mut self) {
        self.accepting.abort();
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.incoming.recv().await {
            Some(accepted) => accepted,
            // The accepting task ended — it never does while this listener
            // lives, but if it did, nothing more arrives.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.local)
    }
}
