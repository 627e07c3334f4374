//! Streamed answers: the events of a 2xx event stream read, each within
//! the idle limit, into a protocol's assembler — and what is retried when a
//! stream breaks.

use super::{Delivered, Exchange, Failed, Post, request_id, shown, with_causes};
use crate::error::ProviderError;

/// What a streamed request was answered with: events, or — from a server
/// that does not stream — the whole answer at once.
pub(crate) enum Answer<A> {
    /// The body of an answer that came whole (`application/json`).
    Whole(Vec<u8>),
    /// The events, read into the protocol's assembler, up to the one that
    /// ends the answer.
    Streamed(A),
}

/// Reads a protocol's events into one answer.
pub(crate) trait Assembler {
    /// Takes the next event.
    fn event(&mut self, event: sse_stream::Sse) -> Result<(), StreamFault>;
    /// Whether the answer has begun: text, a call, or anything else of it
    /// arrived (an opening event or a keep-alive does not count).
    fn started(&self) -> bool;
    /// Whether the event that ends the answer arrived.
    fn ended(&self) -> bool;
    /// Whether a stream that closes now, before the event that ends the
    /// answer, still carried all of it (a server that never sends that
    /// event, but did send how the answer ended).
    fn may_end_here(&self) -> bool {
        false
    }
}

/// Why an event stream cannot go on.
pub(crate) enum StreamFault {
    /// The provider sent an error event; `retryable` when its kind is one a
    /// retry can fix (overloaded, a server error, a rate limit).
    Provider { message: String, retryable: bool },
    /// The event is not the protocol's.
    Malformed(String),
}

impl Exchange {
    /// Reads a 2xx event stream into `assembler`, each event within the
    /// idle limit, until the event that ends the answer.
    pub(super) async fn read_events<A: Assembler>(
        &self,
        response: reqwest::Response,
        post: &Post<'_>,
        mut assembler: A,
    ) -> Result<Delivered<Answer<A>>, Failed> {
        use futures_util::StreamExt as _;

        let request_id = request_id(response.headers(), post.key);
        let id = request_id.as_deref();
        // The bytes are counted before the event reader buffers them: a
        // line that never ends must not grow without bound.
        let over_limit = std::sync::atomic::AtomicBool::new(false);
        let limit = self.max_response_bytes;
        let mut read = 0_usize;
        let bytes = response.bytes_stream().map(|chunk| {
            let chunk = chunk.map_err(std::io::Error::other)?;
            read = read.saturating_add(chunk.len());
            if read > limit {
                over_limit.store(true, std::sync::atomic::Ordering::Relaxed);
                return Err(std::io::Error::other("over the size limit"));
            }
            Ok(chunk)
        });
        let mut events = std::pin::pin!(sse_stream::SseStream::from_bytes_stream(bytes));
        let mut count = 0_usize;
        let stopped = |assembler: &A, count: usize, reason: String| {
            let received = if assembler.started() {
                format!("{count} events, the answer begun")
            } else {
                format!("{count} events, none of the answer yet")
            };
            ProviderError::Interrupted {
                provider: self.provider,
                received,
                reason,
                request_id: request_id.clone(),
            }
        };
        loop {
            let Ok(next) = tokio::time::timeout(self.idle_limit, events.next()).await else {
                let reason = format!(
                    "no event came within the idle limit of {:.1} s (`idle_limit`); the model may still have been working, so the request is not sent again",
                    self.idle_limit.as_secs_f64()
                );
                return Err(Failed::Final(stopped(&assembler, count, reason)));
            };
            let cut = match next {
                Some(Ok(event)) => {
                    count += 1;
                    match assembler.event(event) {
                        Ok(()) if assembler.ended() => {
                            return Ok(Delivered {
                                answer: Answer::Streamed(assembler),
                                request_id,
                            });
                        }
                        Ok(()) => continue,
                        Err(StreamFault::Provider { message, retryable }) => {
                            let reason =
                                format!("it sent an error event: {}", shown(&message, post.key));
                            if retryable && !assembler.started() {
                                return Err(Failed::Unstarted { reason, request_id });
                            }
                            return Err(Failed::Final(stopped(&assembler, count, reason)));
                        }
                        Err(StreamFault::Malformed(reason)) => {
                            return Err(Failed::Final(self.malformed(&reason, post.key, id)));
                        }
                    }
                }
                Some(Err(error)) => {
                    if over_limit.load(std::sync::atomic::Ordering::Relaxed) {
                        return Err(Failed::Final(self.too_large(id)));
                    }
                    let sse_stream::Error::Body(cause) = error else {
                        let reason = format!("its event stream does not read: {error}");
                        return Err(Failed::Final(self.malformed(&reason, post.key, id)));
                    };
                    format!("the connection was cut: {}", with_causes(cause.as_ref()))
                }
                None if assembler.may_end_here() => {
                    return Ok(Delivered {
                        answer: Answer::Streamed(assembler),
                        request_id,
                    });
                }
                None => "the stream ended before the event that ends the answer".to_owned(),
            };
            // A stream cut before any of the answer arrived is sent again;
            // one cut after is not (see `ProviderError::Interrupted`).
            if assembler.started() {
                return Err(Failed::Final(stopped(&assembler, count, cut)));
            }
            return Err(Failed::Unstarted {
                reason: cut,
                request_id,
            });
        }
    }
}

/// The type of no stream: an exchange read whole never has one.
pub(super) enum Never {}

impl Assembler for Never {
    fn event(&mut self, _: sse_stream::Sse) -> Result<(), StreamFault> {
        match *self {}
    }
    fn started(&self) -> bool {
        match *self {}
    }
    fn ended(&self) -> bool {
        match *self {}
    }
}
