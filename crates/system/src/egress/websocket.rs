//! A model API's websocket through the proxy (OpenAI Responses over a websocket, as codex uses
//! it; issues 37 and 46). Both directions are read frame by frame:
//!
//! - the client's messages ([`FromClient`]) are each held whole (at most `session::BODY_MAX`)
//!   and read like a request body: one asking for a tool the provider runs itself (`tools`) is
//!   never passed on — the client gets a close frame (1008) naming the field instead;
//! - the server's frames ([`FromServer`]) are metered and pass the secret filter: headers
//!   unchanged, payloads with every secret replaced by a filler of the same length, so every
//!   frame keeps its length. A masked or extended (compressed) frame — which no server may send
//!   here, the proxy having taken the extensions out of the handshake — ends the websocket.
//!
//! A spent budget closes it. Not here: the handshake (`model`), what is refused (`tools`).

use std::future::Future;
use std::sync::Arc;
use std::task::Poll;

use hyper_util::rt::TokioIo;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::frames::{Frames, Header, Piece};
use super::meter::{AnswerMeter, Framing};
use super::scrub::Scrubber;
use super::session::{Session, BODY_MAX};
use crate::config::ProviderTool;

/// Why a websocket is closed by the proxy: the close code and its words.
pub type Close = (u16, String);

/// The client's side: each data message held whole and read before it is passed on; control
/// frames pass at once.
pub struct FromClient {
    frames: Frames,
    allowed: Vec<ProviderTool>,
    current: Option<Header>,
    mask_at: usize,
    /// The current data message: as it came, and unmasked.
    raw: Vec<u8>,
    data: Vec<u8>,
    /// The current control frame, as it came.
    control: Vec<u8>,
}

impl FromClient {
    pub fn new(allowed: Vec<ProviderTool>) -> FromClient {
        FromClient {
            frames: Frames::default(),
            allowed,
            current: None,
            mask_at: 0,
            raw: Vec::new(),
            data: Vec::new(),
            control: Vec::new(),
        }
    }

    /// The client's next bytes: what may be passed on now, or why the websocket is closed.
    pub fn feed(&mut self, bytes: &[u8]) -> Result<Vec<u8>, Close> {
        let mut pass = Vec::new();
        let mut closed: Option<Close> = None;
        let Self {
            frames,
            allowed,
            current,
            mask_at,
            raw,
            data,
            control,
        } = self;
        frames.split(bytes, |piece| {
            if closed.is_some() {
                return;
            }
            let is_control = current.is_some_and(|h| h.opcode >= 8);
            match piece {
                Piece::Header(h, head) => {
                    if h.rsv != 0 {
                        closed = Some((
                            1002,
                            "opentiger's proxy: extended frames are not taken here".into(),
                        ));
                        return;
                    }
                    *current = Some(h);
                    *mask_at = 0;
                    if h.opcode >= 8 {
                        control.extend_from_slice(head);
                    } else {
                        raw.extend_from_slice(head);
                    }
                }
                Piece::Payload(bytes) if is_control => control.extend_from_slice(bytes),
                Piece::Payload(bytes) => {
                    if data.len() + bytes.len() > BODY_MAX {
                        closed = Some((
                            1009,
                            format!(
                                "opentiger's proxy takes messages of at most {} MiB",
                                BODY_MAX >> 20
                            ),
                        ));
                        return;
                    }
                    raw.extend_from_slice(bytes);
                    let mask = current.and_then(|h| h.mask);
                    for b in bytes {
                        let m = mask.map_or(0, |m| m[*mask_at % 4]);
                        data.push(b ^ m);
                        *mask_at += 1;
                    }
                }
                Piece::End if is_control => pass.append(control),
                Piece::End => {
                    if !current.is_some_and(|h| h.fin) {
                        return;
                    }
                    if let Ok(value) = serde_json::from_slice::<serde_json::Value>(data) {
                        if let Some(refusal) = super::tools::refused(&value, allowed) {
                            closed = Some((1008, refusal.message()));
                            return;
                        }
                    }
                    data.clear();
                    pass.append(raw);
                }
            }
        });
        match closed {
            Some(close) => Err(close),
            None => Ok(pass),
        }
    }
}

/// The server's side: metered, and filtered for secrets frame by frame.
pub struct FromServer {
    frames: Frames,
    scrubber: Scrubber,
    meter: AnswerMeter,
}

impl FromServer {
    pub fn new(scrubber: Scrubber) -> FromServer {
        FromServer {
            frames: Frames::default(),
            scrubber,
            meter: AnswerMeter::new(Framing::WebSocket),
        }
    }

    /// The server's next bytes: what may be passed on now (and the usage they completed), or
    /// `None` when a frame no server may send here came.
    pub fn feed(&mut self, bytes: &[u8]) -> Option<(Vec<u8>, super::meter::Usage)> {
        self.meter.feed(bytes);
        let mut bad = false;
        let scrubber = &mut self.scrubber;
        self.frames.split(bytes, |piece| match piece {
            Piece::Header(h, head) => {
                bad |= h.mask.is_some() || h.rsv != 0;
                scrubber.framing(head);
            }
            Piece::Payload(bytes) => scrubber.content(bytes),
            Piece::End => {}
        });
        (!bad).then(|| (self.scrubber.take(), self.meter.take()))
    }

    /// What is left to pass on, and the usage of the last message.
    pub fn finish(self) -> (Vec<u8>, super::meter::Usage) {
        let mut scrubber = self.scrubber;
        (scrubber.finish(), self.meter.finish())
    }
}

/// A close frame from the server's side (unmasked), its words cut to fit.
pub fn close_frame((code, words): &Close) -> Vec<u8> {
    let mut reason = words.as_str();
    while reason.len() > 123 {
        let mut end = 120;
        while !reason.is_char_boundary(end) {
            end -= 1;
        }
        reason = &reason[..end];
    }
    let mut frame = vec![0x88, (2 + reason.len()) as u8];
    frame.extend(code.to_be_bytes());
    frame.extend(reason.as_bytes());
    frame
}

enum Either<A, B> {
    Left(A),
    Right(B),
}

/// Whichever of `a` and `b` ends first (the other is dropped).
async fn race<A: Future, B: Future>(a: A, b: B) -> Either<A::Output, B::Output> {
    let (mut a, mut b) = (std::pin::pin!(a), std::pin::pin!(b));
    std::future::poll_fn(|cx| {
        if let Poll::Ready(x) = a.as_mut().poll(cx) {
            return Poll::Ready(Either::Left(x));
        }
        if let Poll::Ready(y) = b.as_mut().poll(cx) {
            return Poll::Ready(Either::Right(y));
        }
        Poll::Pending
    })
    .await
}

/// Both directions of an upgraded websocket (see the module documentation).
pub async fn pump(
    client: hyper::upgrade::OnUpgrade,
    upstream: hyper::upgrade::OnUpgrade,
    session: Arc<Session>,
) {
    let (Ok(client), Ok(upstream)) = (client.await, upstream.await) else {
        return;
    };
    let (mut client_read, mut client_write) = tokio::io::split(TokioIo::new(client));
    let (mut up_read, mut up_write) = tokio::io::split(TokioIo::new(upstream));
    let mut from_client = FromClient::new(session.spec.provider_tools.clone());
    let mut from_server = FromServer::new(Scrubber::new(session.secrets().clone()));
    let session = &session;
    let outgoing = async {
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            let n = match client_read.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            session.touch();
            match from_client.feed(&buf[..n]) {
                Ok(pass) => {
                    if up_write.write_all(&pass).await.is_err() {
                        break;
                    }
                }
                Err(close) => return close,
            }
        }
        let _ = up_write.shutdown().await;
        // The server may still answer: the other direction decides when it ends.
        std::future::pending().await
    };
    let incoming = async {
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            let n = match up_read.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            let Some((pass, usage)) = from_server.feed(&buf[..n]) else {
                return;
            };
            session.add_usage(usage);
            session.touch();
            if client_write.write_all(&pass).await.is_err() || session.budget_spent().is_some() {
                return;
            }
        }
    };
    let ended = race(outgoing, incoming).await;
    let at_boundary = from_server.frames.at_boundary();
    let (rest, usage) = from_server.finish();
    session.add_usage(usage);
    let _ = client_write.write_all(&rest).await;
    if let (Either::Left(close), true) = (ended, at_boundary) {
        let close = (close.0, session.secrets().scrub(&close.1));
        let _ = client_write.write_all(&close_frame(&close)).await;
    }
    let _ = client_write.shutdown().await;
}

#[cfg(test)]
mod tests;
