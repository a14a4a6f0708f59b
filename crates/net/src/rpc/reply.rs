//! What a response parser says about the bytes at the front of a connection's input.

/// The outcome of parsing the front of a receive buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Parse<R> {
    /// Not a whole response yet: read more and parse again from the same start.
    Incomplete,
    /// A whole response of `consumed` bytes; what follows it is the next response.
    Done(R, usize),
    /// Not a response of the protocol: the connection cannot be read further.
    Invalid(&'static str),
}

/// What the generator counts of a response, whichever the protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Answer {
    /// The server answered with an error (memcached `ERROR`, `CLIENT_ERROR`,
    /// `SERVER_ERROR`; an HTTP status of 400 or more): counted, its latency not recorded.
    pub error: bool,
    /// A memcached get found no value (a miss is an answer, its latency is recorded).
    pub miss: bool,
    /// The server closes the connection after this response (HTTP `Connection: close`).
    pub close: bool,
}

impl Answer {
    /// A plain successful answer.
    pub const OK: Answer = Answer {
        error: false,
        miss: false,
        close: false,
    };
}

/// The index just past the first `\r\n` of `buf` at or after `from`, if any.
pub(crate) fn line_end(buf: &[u8], from: usize) -> Option<usize> {
    buf.get(from..)?
        .windows(2)
        .position(|w| w == b"\r\n")
        .map(|i| from + i + 2)
}
