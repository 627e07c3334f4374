//! Connections the handler can break on purpose: a step can close one without
//! an answer, or cut an answer's body short, which no response value can say.
//!
//! Each accepted connection shares a [`Control`] with the handler (through
//! [`Peer`], its connect info); the connection's writes go through it.

use std::{
    io,
    net::SocketAddr,
    pin::Pin,
    sync::{Arc, Mutex, MutexGuard, PoisonError},
    task::{Context, Poll},
    time::Duration,
};

use axum::{
    extract::connect_info::Connected,
    serve::{IncomingStream, Listener},
};
use tokio::{
    io::{AsyncRead, AsyncWrite, ReadBuf},
    net::{TcpListener, TcpStream},
};

/// The end of a response's head.
const HEAD_END: &[u8; 4] = b"\r\n\r\n";

/// What the next writes on a connection do.
#[derive(Debug, Default)]
enum Mode {
    /// Pass through.
    #[default]
    Pass,
    /// Write nothing more: reset the connection.
    Reset,
    /// Write the response's head and `budget` bytes of its body, then break.
    Truncate {
        /// How much of [`HEAD_END`] the bytes written so far end with (4 once it was seen).
        matched: usize,
        /// The body bytes still allowed once the head is written.
        budget: usize,
    },
    /// Broken: every write fails.
    Broken,
}

/// The part of a connection's state the handler may change.
#[derive(Debug, Default)]
pub(crate) struct Control {
    mode: Mutex<Mode>,
}

impl Control {
    fn mode(&self) -> MutexGuard<'_, Mode> {
        self.mode.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Closes the connection (with a reset) instead of writing the next response.
    pub(crate) fn reset(&self) {
        *self.mode() = Mode::Reset;
    }

    /// Lets the next response's head out but only `budget` bytes of its body, then
    /// closes the connection.
    pub(crate) fn truncate_body(&self, budget: usize) {
        *self.mode() = Mode::Truncate { matched: 0, budget };
    }
}

/// The next state of a search for [`HEAD_END`] after `byte`.
fn head_step(matched: usize, byte: u8) -> usize {
    if matched < HEAD_END.len() && byte == HEAD_END[matched] {
        matched + 1
    } else {
        usize::from(byte == b'\r')
    }
}

/// How many bytes of `buf` a truncating connection may still write.
fn allowance(mut matched: usize, budget: usize, buf: &[u8]) -> usize {
    let mut head = 0;
    while matched < HEAD_END.len() {
        let Some(&byte) = buf.get(head) else {
            return buf.len();
        };
        matched = head_step(matched, byte);
        head += 1;
    }
    head + budget.min(buf.len() - head)
}

/// Accounts for `written` bytes on a truncating connection.
fn advance(matched: &mut usize, budget: &mut usize, written: &[u8]) {
    let mut rest = written;
    while *matched < HEAD_END.len() {
        let Some((&byte, tail)) = rest.split_first() else {
            return;
        };
        *matched = head_step(*matched, byte);
        rest = tail;
    }
    *budget = budget.saturating_sub(rest.len());
}

fn broken() -> io::Error {
    io::Error::new(
        io::ErrorKind::ConnectionAborted,
        "connection closed by the script",
    )
}

/// A TCP connection whose writes the handler can break.
#[derive(Debug)]
pub(crate) struct ControlledStream {
    inner: TcpStream,
    control: Arc<Control>,
}

impl AsyncRead for ControlledStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if matches!(*this.control.mode(), Mode::Broken) {
            return Poll::Ready(Err(broken()));
        }
        Pin::new(&mut this.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for ControlledStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let mut mode = this.control.mode();
        match &mut *mode {
            Mode::Pass => Pin::new(&mut this.inner).poll_write(cx, buf),
            _ if buf.is_empty() => Poll::Ready(Ok(0)),
            Mode::Reset => {
                // An abortive close: the peer sees a reset, not an orderly end.
                if let Err(error) = this.inner.set_zero_linger() {
                    eprintln!(
                        "toolgate-model-test-server: cannot set SO_LINGER for a reset: {error}"
                    );
                }
                *mode = Mode::Broken;
                Poll::Ready(Err(broken()))
            }
            Mode::Broken => Poll::Ready(Err(broken())),
            Mode::Truncate { matched, budget } => {
                let allowed = allowance(*matched, *budget, buf);
                if allowed == 0 {
                    *mode = Mode::Broken;
                    return Poll::Ready(Err(broken()));
                }
                let result = Pin::new(&mut this.inner).poll_write(cx, &buf[..allowed]);
                if let Poll::Ready(Ok(written)) = result {
                    advance(matched, budget, &buf[..written]);
                }
                result
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if matches!(*this.control.mode(), Mode::Broken) {
            return Poll::Ready(Err(broken()));
        }
        Pin::new(&mut this.inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

/// A connection's peer, as the handler sees it: its address and its [`Control`].
#[derive(Debug, Clone)]
pub(crate) struct Peer {
    /// The peer's address.
    pub(crate) addr: SocketAddr,
    /// The connection's control.
    pub(crate) control: Arc<Control>,
}

impl Connected<IncomingStream<'_, ControlledListener>> for Peer {
    fn connect_info(stream: IncomingStream<'_, ControlledListener>) -> Self {
        stream.remote_addr().clone()
    }
}

/// A TCP listener whose connections are [`ControlledStream`]s.
#[derive(Debug)]
pub(crate) struct ControlledListener {
    inner: TcpListener,
}

impl ControlledListener {
    /// Wraps a bound listener.
    pub(crate) fn new(inner: TcpListener) -> Self {
        Self { inner }
    }
}

impl Listener for ControlledListener {
    type Io = ControlledStream;
    type Addr = Peer;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            match self.inner.accept().await {
                Ok((inner, addr)) => {
                    let control = Arc::new(Control::default());
                    let peer = Peer {
                        addr,
                        control: Arc::clone(&control),
                    };
                    return (ControlledStream { inner, control }, peer);
                }
                Err(error) => {
                    eprintln!("toolgate-model-test-server: accept failed: {error}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        Ok(Peer {
            addr: self.inner.local_addr()?,
            control: Arc::default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_allowance_stops_inside_the_body() {
        let response = b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\n0123456789";
        let head = response.len() - 10;
        assert_eq!(allowance(0, 5, response), head + 5);
        // Written in pieces, the head is found across them.
        let (mut matched, mut budget) = (0, 5);
        advance(&mut matched, &mut budget, &response[..head - 2]);
        assert_eq!(allowance(matched, budget, &response[head - 2..]), 2 + 5);
        advance(&mut matched, &mut budget, &response[head - 2..head + 3]);
        assert_eq!((matched, budget), (4, 2));
        assert_eq!(allowance(matched, budget, &response[head + 3..]), 2);
        advance(&mut matched, &mut budget, &response[head + 3..head + 5]);
        assert_eq!(allowance(matched, budget, &response[head + 5..]), 0);
    }

    #[test]
    fn the_head_end_is_found_after_false_starts() {
        let mut matched = 0;
        for &byte in b"a\r\r\n\r\r\n\r\n" {
            matched = head_step(matched, byte);
        }
        assert_eq!(matched, 4);
    }
}
