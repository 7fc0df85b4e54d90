//! Websocket frames (RFC 6455 §5.2) read as their bytes come: each frame's header, then its
//! payload in pieces, then its end — for the meter (the server's messages) and the websocket
//! filters (`websocket`). Pure.
//! Not for: what a message means (`meter`, `tools`), passing bytes on (`websocket`).

/// One frame's header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub fin: bool,
    /// The three extension bits.
    pub rsv: u8,
    pub opcode: u8,
    pub mask: Option<[u8; 4]>,
    pub len: u64,
}

/// A stream of frames, piece by piece.
#[derive(Debug, PartialEq, Eq)]
pub enum Piece<'a> {
    /// A frame's header, read, with its bytes.
    Header(Header, &'a [u8]),
    /// Bytes of its payload, as they came (masked, if it is).
    Payload(&'a [u8]),
    /// The frame ended.
    End,
}

/// Splits a stream of frames into headers and payloads as its bytes come.
#[derive(Default)]
pub struct Frames {
    head: Vec<u8>,
    remaining: u64,
    in_payload: bool,
}

/// The length of the header whose first bytes are `head` (2 until its second byte is known).
fn head_len(head: &[u8]) -> usize {
    if head.len() < 2 {
        return 2;
    }
    let ext = match head[1] & 0x7f {
        126 => 2,
        127 => 8,
        _ => 0,
    };
    2 + ext + if head[1] & 0x80 != 0 { 4 } else { 0 }
}

fn header(head: &[u8]) -> Header {
    let (len, at) = match head[1] & 0x7f {
        126 => (u64::from(u16::from_be_bytes([head[2], head[3]])), 4),
        127 => {
            let mut b = [0u8; 8];
            b.copy_from_slice(&head[2..10]);
            (u64::from_be_bytes(b), 10)
        }
        n => (u64::from(n), 2),
    };
    Header {
        fin: head[0] & 0x80 != 0,
        rsv: (head[0] >> 4) & 0x07,
        opcode: head[0] & 0x0f,
        mask: (head[1] & 0x80 != 0).then(|| [head[at], head[at + 1], head[at + 2], head[at + 3]]),
        len,
    }
}

impl Frames {
    /// Passes the pieces of `bytes` to `out`, in order.
    pub fn split(&mut self, mut bytes: &[u8], mut out: impl FnMut(Piece<'_>)) {
        while !bytes.is_empty() {
            if !self.in_payload {
                let take = head_len(&self.head)
                    .saturating_sub(self.head.len())
                    .min(bytes.len());
                self.head.extend_from_slice(&bytes[..take]);
                bytes = &bytes[take..];
                if self.head.len() >= 2 && self.head.len() == head_len(&self.head) {
                    let h = header(&self.head);
                    out(Piece::Header(h, &self.head));
                    self.head.clear();
                    self.remaining = h.len;
                    self.in_payload = h.len > 0;
                    if h.len == 0 {
                        out(Piece::End);
                    }
                }
                continue;
            }
            let take = usize::try_from(self.remaining)
                .unwrap_or(usize::MAX)
                .min(bytes.len());
            out(Piece::Payload(&bytes[..take]));
            bytes = &bytes[take..];
            self.remaining -= take as u64;
            if self.remaining == 0 {
                self.in_payload = false;
                out(Piece::End);
            }
        }
    }

    /// Whether the stream is between two frames.
    pub fn at_boundary(&self) -> bool {
        !self.in_payload && self.head.is_empty()
    }
}

/// A frame as a client (with `mask`) or a server (without) sends it, for the tests.
#[cfg(test)]
pub fn frame(fin: bool, opcode: u8, payload: &[u8], mask: Option<[u8; 4]>) -> Vec<u8> {
    let mut out = vec![(if fin { 0x80 } else { 0 }) | opcode];
    let m = if mask.is_some() { 0x80 } else { 0 };
    match payload.len() {
        n if n < 126 => out.push(m | n as u8),
        n if n <= usize::from(u16::MAX) => {
            out.push(m | 126);
            out.extend((n as u16).to_be_bytes());
        }
        n => {
            out.push(m | 127);
            out.extend((n as u64).to_be_bytes());
        }
    }
    match mask {
        Some(mask) => {
            out.extend(mask);
            out.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
        }
        None => out.extend_from_slice(payload),
    }
    out
}
