//! The gateway on a Unix socket ([`bind_unix`]): for a reverse proxy on
//! the same machine, which reaches it through a file only the gateway's
//! account (and whoever it lets) can open — no network between them, and
//! no secret needed to prove the proxy (one may be added all the same,
//! [`super::HttpGateway::behind_proxy`]). A request over it carries its
//! person's token as ever.

use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use super::HttpError;

/// A listener on a Unix socket, its file mode `0600`; the file is removed
/// when the listener is dropped (when serving ends), unless another took
/// its place by then.
#[derive(Debug)]
pub struct UnixSocket {
    listener: tokio::net::UnixListener,
    path: PathBuf,
    /// The socket file's device and inode: the file removed is this one.
    file: (u64, u64),
}

impl UnixSocket {
    /// The socket's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl axum::serve::Listener for UnixSocket {
    type Io = tokio::net::UnixStream;
    type Addr = tokio::net::unix::SocketAddr;

    fn accept(&mut self) -> impl Future<Output = (Self::Io, Self::Addr)> + Send {
        axum::serve::Listener::accept(&mut self.listener)
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.listener.local_addr()
    }
}

impl Drop for UnixSocket {
    fn drop(&mut self) {
        let ours = std::fs::symlink_metadata(&self.path)
            .is_ok_and(|meta| (meta.dev(), meta.ino()) == self.file);
        if ours && let Err(error) = std::fs::remove_file(&self.path) {
            tracing::warn!(path = %self.path.display(), %error, "the gateway's socket could not be removed");
        }
    }
}

/// A listener on the Unix socket `path`, which the gateway makes, readable
/// and writable by its own account only (mode `0600`): bound under a name
/// of its own beside `path`, its mode set, then moved to `path` — never
/// open to others under `path`. A socket a stopped gateway left there is
/// replaced; one a process listens on, or a file that is no socket, is
/// refused.
pub async fn bind_unix(path: &Path) -> Result<UnixSocket, HttpError> {
    let failed = |error| HttpError::Socket {
        path: path.to_owned(),
        error,
    };
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        use std::os::unix::fs::FileTypeExt as _;
        if !meta.file_type().is_socket() {
            return Err(HttpError::NotASocket(path.to_owned()));
        }
        match tokio::net::UnixStream::connect(path).await {
            Ok(_) => return Err(HttpError::SocketInUse(path.to_owned())),
            // Left by a process that stopped: replaced below.
            Err(error) if error.kind() == std::io::ErrorKind::ConnectionRefused => {}
            Err(error) => return Err(failed(error)),
        }
    }
    let name = path
        .file_name()
        .ok_or_else(|| failed(std::io::ErrorKind::InvalidInput.into()))?;
    let binding = path.with_file_name(format!(
        ".{}.{}.binding",
        name.to_string_lossy(),
        std::process::id()
    ));
    match std::fs::remove_file(&binding) {
        Ok(()) => {}
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => return Err(failed(error)),
    }
    let listener = tokio::net::UnixListener::bind(&binding).map_err(failed)?;
    let placed = std::fs::set_permissions(&binding, std::fs::Permissions::from_mode(0o600))
        .and_then(|()| std::fs::rename(&binding, path))
        .and_then(|()| std::fs::symlink_metadata(path));
    match placed {
        Ok(meta) => Ok(UnixSocket {
            listener,
            path: path.to_owned(),
            file: (meta.dev(), meta.ino()),
        }),
        Err(error) => {
            let _ = std::fs::remove_file(&binding);
            Err(failed(error))
        }
    }
}
