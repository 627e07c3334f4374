//! Connections to MCP servers, with a deadline on every operation.

use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, ContentBlock, ListToolsResult, PaginatedRequestParams};
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Map, Value};
use tokio::process::Child;
use tokio::sync::watch;
use toolgate::ToolOutput;
use toolgate::visible::visible;
use toolgate_store::Transport;

use crate::output::sanitize;

mod stdio;

use stdio::{MAX_MESSAGE, StderrTail, Watched, handshake_reason, log_stderr, reason_of, stopped};

/// Deadlines for talking to servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadlines {
    /// Starting a server and the MCP handshake.
    pub connect: Duration,
    /// One page of `tools/list`.
    pub list_page: Duration,
    /// One `tools/call`.
    pub call: Duration,
}

impl Default for Deadlines {
    fn default() -> Self {
        Self {
            connect: Duration::from_secs(15),
            list_page: Duration::from_secs(15),
            call: Duration::from_secs(30),
        }
    }
}

/// Talking to a server failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClientError {
    /// The stored transport cannot be used.
    #[error("server `{server}` has an unusable transport: {reason}")]
    Transport {
        /// The server.
        server: String,
        /// Why.
        reason: String,
    },
    /// The process could not be started or the handshake failed.
    #[error("cannot connect to server `{server}`: {reason}")]
    Connect {
        /// The server.
        server: String,
        /// Why.
        reason: String,
    },
    /// The server did not answer in time.
    #[error("server `{server}` did not answer {what} within {} s", deadline.as_secs_f64())]
    Deadline {
        /// The server.
        server: String,
        /// What was asked.
        what: &'static str,
        /// The deadline.
        deadline: Duration,
    },
    /// The server's reply was larger than the client takes in one message:
    /// the client dropped it. The call ran on the server; its result is lost.
    #[error(
        "server `{server}` sent a result too large for {what}: over {} MiB in one message, the client's limit; the call ran on the server, and its result was dropped",
        limit / (1024 * 1024)
    )]
    TooLarge {
        /// The server.
        server: String,
        /// What was asked.
        what: &'static str,
        /// The limit, in bytes.
        limit: usize,
    },
    /// The request left and no answer came back: the connection closed or
    /// failed after it was sent, or what came back was not its answer. The
    /// server may have run it.
    #[error("server `{server}` gave no answer to {what}: {reason}")]
    Lost {
        /// The server.
        server: String,
        /// What was asked.
        what: &'static str,
        /// Why.
        reason: String,
    },
    /// The request failed before it could run: the server answered with an
    /// error, or refused the client.
    #[error("server `{server}` failed {what}: {reason}")]
    Request {
        /// The server.
        server: String,
        /// What was asked.
        what: &'static str,
        /// Why.
        reason: String,
    },
}

impl ClientError {
    /// Whether the request may have reached the server and run there, its
    /// answer lost: it was sent, and no answer of the server's came back
    /// (too large to take, past its deadline, or the connection gone). A
    /// request that failed before it was sent, or that the server answered
    /// with an error, did not run.
    pub fn reached_server(&self) -> bool {
        match self {
            Self::TooLarge { .. } | Self::Lost { .. } => true,
            Self::Deadline { what, .. } => *what == CALL,
            Self::Transport { .. } | Self::Connect { .. } | Self::Request { .. } => false,
        }
    }

    /// How an answer was lost, in words, for [`ClientError::reached_server`].
    fn how_lost(&self) -> String {
        match self {
            Self::TooLarge { limit, .. } => format!(
                "it was over {} MiB in one message, the client's limit, and was dropped",
                limit / (1024 * 1024)
            ),
            Self::Deadline { deadline, .. } => {
                format!("none came within {} s", deadline.as_secs_f64())
            }
            Self::Lost { reason, .. } => reason.clone(),
            other => other.to_string(),
        }
    }
}

/// Whether a failed request provably did not run there: the server
/// answered it with a JSON-RPC error (an answer, like `isError`), or no
/// connection to the server could be made, so nothing was sent. An HTTP
/// status (a 401, a 404 for an expired session, a 429) is not proof: a front
/// may have passed the request on before it answered so. Anything else after
/// a request was handed to the transport may have reached the server.
fn answered_or_unsent(error: &rmcp::ServiceError) -> bool {
    use rmcp::transport::streamable_http_client::StreamableHttpError;
    match error {
        rmcp::ServiceError::McpError(_) => true,
        rmcp::ServiceError::TransportSend(sent) => matches!(
            sent.error.downcast_ref::<StreamableHttpError<reqwest::Error>>(),
            Some(StreamableHttpError::Client(client)) if client.is_connect()
        ),
        _ => false,
    }
}

/// What a call is, in errors.
const CALL: &str = "tools/call";

type Session = RunningService<RoleClient, Refusing>;

/// The client side of every connection to a server: it never lets a server
/// reach anyone's prompt or model through toolgate. A server's sampling
/// request (`sampling/createMessage`) is refused, and its elicitation
/// (`elicitation/create`) declined — each logged with the server's name.
#[derive(Debug, Clone)]
pub(crate) struct Refusing {
    server: String,
}

impl rmcp::ClientHandler for Refusing {
    #[allow(
        deprecated,
        reason = "sampling is deprecated in MCP, and servers may still ask for it: refused"
    )]
    async fn create_message(
        &self,
        _: rmcp::model::CreateMessageRequestParams,
        _: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::CreateMessageResult, rmcp::ErrorData> {
        tracing::warn!(server = %visible(&self.server), "the server asked to sample a model through toolgate; refused");
        Err(rmcp::ErrorData::invalid_request(
            "toolgate does not let a server sample a model",
            None,
        ))
    }

    async fn create_elicitation(
        &self,
        _: rmcp::model::ElicitRequestParams,
        _: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        tracing::warn!(server = %visible(&self.server), "the server asked to elicit a user's input through toolgate; refused");
        Err(rmcp::ErrorData::invalid_request(
            "toolgate does not let a server ask a user for input",
            None,
        ))
    }
}

/// A live session, and for a stdio server the process behind it and the
/// count of messages it sent that were too large to take.
struct Live {
    service: Session,
    /// Killed when the session is dropped (`kill_on_drop`).
    child: Option<Child>,
    oversized: Option<watch::Receiver<u64>>,
}

/// One server's connection, made on first use and remade after a failure.
pub struct Connection {
    server: String,
    transport: Transport,
    deadlines: Deadlines,
    session: tokio::sync::Mutex<Option<Live>>,
    /// Calls sent and not yet answered.
    in_flight: AtomicUsize,
}

/// Counts a call in flight while it lives.
struct InFlight<'c>(&'c AtomicUsize);

impl<'c> InFlight<'c> {
    fn new(count: &'c AtomicUsize) -> Self {
        count.fetch_add(1, Ordering::SeqCst);
        Self(count)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("server", &self.server)
            .field("transport", &self.transport)
            .finish_non_exhaustive()
    }
}

impl Connection {
    /// A connection to `server` over `transport`; nothing is started yet.
    pub fn new(server: impl Into<String>, transport: Transport, deadlines: Deadlines) -> Arc<Self> {
        Arc::new(Self {
            server: server.into(),
            transport,
            deadlines,
            session: tokio::sync::Mutex::new(None),
            in_flight: AtomicUsize::new(0),
        })
    }

    /// The server's identifier.
    pub fn server(&self) -> &str {
        &self.server
    }

    async fn connect(&self) -> Result<Live, ClientError> {
        let connecting = async {
            match &self.transport {
                Transport::Stdio { command } => {
                    let Some((program, args)) = command.split_first() else {
                        return Err("the command is empty".to_owned());
                    };
                    let mut cmd = tokio::process::Command::new(program);
                    // The server's stderr never reaches the operator's
                    // terminal as it is: it is read here, line by line, and
                    // logged escaped (see `log_stderr`). Its stdout is
                    // watched for messages too large to take.
                    cmd.args(args)
                        .stdin(Stdio::piped())
                        .stdout(Stdio::piped())
                        .stderr(Stdio::piped())
                        .kill_on_drop(true);
                    let mut child = cmd
                        .spawn()
                        .map_err(|e| format!("cannot start `{program}`: {e}"))?;
                    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take())
                    else {
                        return Err(format!(
                            "cannot talk to `{program}`: no standard input or output"
                        ));
                    };
                    let tail = StderrTail::default();
                    if let Some(stderr) = child.stderr.take() {
                        tokio::spawn(log_stderr(self.server.clone(), stderr, tail.clone()));
                    }
                    let (stdout, oversized) = Watched::new(stdout);
                    let refusing = Refusing {
                        server: self.server.clone(),
                    };
                    match refusing.serve((stdout, stdin)).await {
                        Ok(service) => Ok(Live {
                            service,
                            child: Some(child),
                            oversized: Some(oversized),
                        }),
                        Err(error) => Err(stopped(&mut child, &tail, &error).await),
                    }
                }
                Transport::Http { url } => {
                    // A session the server calls expired is not made again
                    // behind the caller's back: rmcp would send the request
                    // that met the expiry a second time, and a call may
                    // already have run.
                    // Nor is a redirect followed: it would post the call
                    // again, and the call may have run before the answer
                    // that redirects.
                    let client = reqwest::Client::builder()
                        .redirect(reqwest::redirect::Policy::none())
                        .build()
                        .map_err(|e| format!("cannot make an HTTP client: {e}"))?;
                    let transport = StreamableHttpClientTransport::with_client(
                        client,
                        StreamableHttpClientTransportConfig::with_uri(url.as_str())
                            .reinit_on_expired_session(false),
                    );
                    let refusing = Refusing {
                        server: self.server.clone(),
                    };
                    match refusing.serve(transport).await {
                        Ok(service) => Ok(Live {
                            service,
                            child: None,
                            oversized: None,
                        }),
                        Err(e) => Err(format!(
                            "cannot reach {}: {}",
                            visible(url),
                            handshake_reason(&e)
                        )),
                    }
                }
                Transport::Unreadable { reason } => Err(reason.clone()),
            }
        };
        if let Transport::Unreadable { reason } = &self.transport {
            return Err(ClientError::Transport {
                server: self.server.clone(),
                reason: reason.clone(),
            });
        }
        match tokio::time::timeout(self.deadlines.connect, connecting).await {
            Ok(Ok(session)) => Ok(session),
            Ok(Err(reason)) => Err(ClientError::Connect {
                server: self.server.clone(),
                reason,
            }),
            Err(_) => Err(ClientError::Deadline {
                server: self.server.clone(),
                what: "the handshake",
                deadline: self.deadlines.connect,
            }),
        }
    }

    /// The live session's peer, connecting if there is none, and for a
    /// stdio server the count of its messages too large to take.
    async fn peer(
        &self,
    ) -> Result<(rmcp::Peer<RoleClient>, Option<watch::Receiver<u64>>), ClientError> {
        let mut session = self.session.lock().await;
        // A session is used while it is alive: not closed, its transport
        // open, its server's process running. One that died — the server
        // exited after a call, say — is made again before a request is sent
        // over it, so a call is never lost to a connection known dead.
        if let Some(live) = session.as_mut()
            && !live.service.is_closed()
            && !live.service.peer().is_transport_closed()
            && !live
                .child
                .as_mut()
                .is_some_and(|child| matches!(child.try_wait(), Ok(Some(_))))
        {
            return Ok((live.service.peer().clone(), live.oversized.clone()));
        }
        if session.is_some() {
            tracing::info!(server = %self.server, "the server's connection closed; it is made again");
        }
        let fresh = self.connect().await?;
        let peer = (fresh.service.peer().clone(), fresh.oversized.clone());
        *session = Some(fresh);
        Ok(peer)
    }

    /// Drops the session so the next request reconnects; a stdio server's
    /// process is stopped.
    async fn reset(&self) {
        if let Some(live) = self.session.lock().await.take() {
            let _ = live.service.cancel().await;
            if let Some(mut child) = live.child {
                let _ = child.start_kill();
                let _ = tokio::time::timeout(Duration::from_secs(2), child.wait()).await;
            }
        }
    }

    /// Closes the session, stopping a stdio server.
    pub async fn close(&self) {
        self.reset().await;
    }

    /// One page of the server's catalogue.
    pub async fn list_page(&self, cursor: Option<String>) -> Result<ListToolsResult, ClientError> {
        let (peer, _) = self.peer().await?;
        let params = cursor.map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
        match tokio::time::timeout(self.deadlines.list_page, peer.list_tools(params)).await {
            Ok(Ok(page)) => Ok(page),
            Ok(Err(error)) => {
                self.reset().await;
                Err(ClientError::Request {
                    server: self.server.clone(),
                    what: "tools/list",
                    reason: reason_of(&error),
                })
            }
            Err(_) => {
                self.reset().await;
                Err(ClientError::Deadline {
                    server: self.server.clone(),
                    what: "tools/list",
                    deadline: self.deadlines.list_page,
                })
            }
        }
    }

    /// Calls a tool by its remote name. A failure before the request was
    /// sent, or an error the server answered with (`isError`, a JSON-RPC
    /// error), is an error result for the model. A request that was sent and
    /// whose answer never came — the connection closed, the deadline passed,
    /// the answer too large to take — is [`ToolOutput::answer_lost`]: the
    /// server may have run it. No failure of one call resets the connection
    /// under others in flight; a connection that closed is made again by the
    /// next call.
    pub async fn call(&self, remote_name: &str, arguments: Map<String, Value>) -> ToolOutput {
        match self.try_call(remote_name, arguments).await {
            Ok(output) => output,
            Err(error) if error.reached_server() => {
                tracing::warn!(server = %self.server, tool = remote_name, %error, "a remote call's answer was lost");
                ToolOutput::answer_lost(sanitize(&format!(
                    "server `{}`: the call reached the server; its answer was lost: {}",
                    self.server,
                    error.how_lost()
                )))
            }
            Err(error) => {
                tracing::warn!(server = %self.server, tool = remote_name, %error, "remote call failed");
                ToolOutput::error(sanitize(&error.to_string()))
            }
        }
    }

    async fn try_call(
        &self,
        remote_name: &str,
        arguments: Map<String, Value>,
    ) -> Result<ToolOutput, ClientError> {
        let (peer, oversized) = self.peer().await?;
        let params = CallToolRequestParams::new(remote_name.to_owned()).with_arguments(arguments);
        let in_flight = InFlight::new(&self.in_flight);
        let call = tokio::time::timeout(self.deadlines.call, peer.call_tool(params));
        // A message too large to take is dropped unread, so whose answer it
        // was is unknown: it is this call's only when no other call is in
        // flight. Otherwise each call waits for its own answer or deadline.
        let too_large = async {
            match oversized {
                Some(mut seen) => loop {
                    seen.mark_unchanged();
                    if seen.changed().await.is_err() {
                        std::future::pending::<()>().await;
                    }
                    if in_flight.0.load(Ordering::SeqCst) == 1 {
                        break;
                    }
                },
                None => std::future::pending::<()>().await,
            }
        };
        let answered = tokio::select! {
            biased;
            answered = call => answered,
            () = too_large => {
                return Err(ClientError::TooLarge {
                    server: self.server.clone(),
                    what: CALL,
                    limit: MAX_MESSAGE,
                });
            }
        };
        let result = match answered {
            Ok(Ok(result)) => result,
            Ok(Err(error)) => {
                let answered = answered_or_unsent(&error);
                let reason = reason_of(&error);
                let server = self.server.clone();
                return Err(if answered {
                    ClientError::Request {
                        server,
                        what: CALL,
                        reason,
                    }
                } else {
                    ClientError::Lost {
                        server,
                        what: CALL,
                        reason,
                    }
                });
            }
            Err(_) => {
                return Err(ClientError::Deadline {
                    server: self.server.clone(),
                    what: CALL,
                    deadline: self.deadlines.call,
                });
            }
        };
        drop(in_flight);
        let text = result
            .content
            .iter()
            .map(|block| match block {
                ContentBlock::Text(text) => text.text.clone(),
                other => serde_json::to_string(other).unwrap_or_default(),
            })
            .collect::<Vec<_>>()
            .join("\n");
        let text = sanitize(&text);
        Ok(if result.is_error == Some(true) {
            ToolOutput::error(format!(
                "server `{}` reported an error: {text}",
                self.server
            ))
        } else {
            let (rich, left_out) =
                crate::output::rich(&result.content, result.structured_content.as_ref());
            match left_out {
                Some(note) => ToolOutput::text(format!("{text}\n{note}")),
                None => ToolOutput::text(text).with_rich(rich),
            }
        })
    }
}
