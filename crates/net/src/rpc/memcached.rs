//! memcached's ASCII protocol: encoding `get` and `set` requests into a preallocated buffer
//! and parsing responses (pure; whole, partial and pipelined), plus the 8-byte frame header
//! memcached puts before every UDP datagram.
//!
//! Keys are `k` followed by the key's number, zero-padded to the key size, so a key is
//! written without allocating and every key of the key space is distinct.

use super::reply::{line_end, Answer, Parse};

/// Longest key memcached accepts.
pub const MAX_KEY: usize = 250;
/// Longest response line the parser waits for before calling the input invalid.
pub const MAX_LINE: usize = 2_048;
/// Size of memcached's UDP frame header.
pub const UDP_HEADER: usize = 8;

/// A memcached operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// `get <key>`.
    Get,
    /// `set <key> 0 0 <bytes>` with a value.
    Set,
}

/// What a memcached response was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reply {
    /// `VALUE …` then `END`: a get found its value.
    Hit,
    /// `END` alone: a get found nothing.
    Miss,
    /// `STORED`.
    Stored,
    /// `NOT_STORED`, `EXISTS` or `NOT_FOUND`: the server refused a conditional store.
    NotStored,
    /// `ERROR`, `CLIENT_ERROR …` or `SERVER_ERROR …`.
    Error,
}

impl Reply {
    /// As the generator counts it.
    pub fn answer(self) -> Answer {
        Answer {
            error: self == Reply::Error,
            miss: self == Reply::Miss,
            close: false,
        }
    }
}

/// Digits of `n` in decimal (at least 1).
pub fn digits(mut n: u64) -> usize {
    let mut d = 1;
    while n >= 10 {
        n /= 10;
        d += 1;
    }
    d
}

/// Writes key number `id` as `k` and `len - 1` zero-padded digits. `len` must be at least
/// `digits(id) + 1` (the configuration checks it for the whole key space).
fn put_key(out: &mut Vec<u8>, id: u64, len: usize) {
    out.push(b'k');
    let width = len - 1;
    let start = out.len();
    out.resize(start + width, b'0');
    let mut n = id;
    let mut i = start + width;
    while n > 0 && i > start {
        i -= 1;
        out[i] = b'0' + (n % 10) as u8;
        n /= 10;
    }
}

fn put_decimal(out: &mut Vec<u8>, n: u64) {
    let d = digits(n);
    let start = out.len();
    out.resize(start + d, b'0');
    let mut n = n;
    for i in (start..start + d).rev() {
        out[i] = b'0' + (n % 10) as u8;
        n /= 10;
    }
}

/// Appends `get <key>\r\n` for key `id` of length `key_len`.
pub fn encode_get(out: &mut Vec<u8>, id: u64, key_len: usize) {
    out.extend_from_slice(b"get ");
    put_key(out, id, key_len);
    out.extend_from_slice(b"\r\n");
}

/// Appends `set <key> 0 0 <n>\r\n<value>\r\n` with the first `value_len` bytes of
/// `filler` as the value (`filler` must be at least that long).
pub fn encode_set(out: &mut Vec<u8>, id: u64, key_len: usize, value_len: usize, filler: &[u8]) {
    out.extend_from_slice(b"set ");
    put_key(out, id, key_len);
    out.extend_from_slice(b" 0 0 ");
    put_decimal(out, value_len as u64);
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(&filler[..value_len]);
    out.extend_from_slice(b"\r\n");
}

/// Appends memcached's UDP frame header: request id, sequence 0, one datagram.
pub fn encode_udp_header(out: &mut Vec<u8>, request_id: u16) {
    out.extend_from_slice(&request_id.to_be_bytes());
    out.extend_from_slice(&[0, 0, 0, 1, 0, 0]);
}

/// A UDP datagram's frame header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UdpFrame {
    /// The request id the response answers.
    pub request_id: u16,
    /// This datagram's number within the response.
    pub seq: u16,
    /// How many datagrams the response has.
    pub total: u16,
}

/// Reads the frame header at the front of a UDP datagram.
pub fn parse_udp_header(d: &[u8]) -> Option<UdpFrame> {
    if d.len() < UDP_HEADER {
        return None;
    }
    let be = |i: usize| u16::from_be_bytes([d[i], d[i + 1]]);
    Some(UdpFrame {
        request_id: be(0),
        seq: be(2),
        total: be(4),
    })
}

/// The `<bytes>` field of a `VALUE <key> <flags> <bytes> [<cas>]` line.
fn value_bytes(line: &[u8]) -> Option<usize> {
    let text = std::str::from_utf8(line).ok()?;
    let mut words = text.split(' ');
    (words.next()? == "VALUE").then_some(())?;
    let _key = words.next()?;
    let _flags = words.next()?;
    words.next()?.parse().ok()
}

/// Parses the response at the front of `buf`.
pub fn parse(buf: &[u8]) -> Parse<Reply> {
    let mut pos = 0;
    let mut hit = false;
    loop {
        let Some(end) = line_end(buf, pos) else {
            return if buf.len() - pos > MAX_LINE {
                Parse::Invalid("a memcached response line longer than 2048 bytes")
            } else {
                Parse::Incomplete
            };
        };
        let line = &buf[pos..end - 2];
        if line.starts_with(b"VALUE ") {
            let Some(n) = value_bytes(line) else {
                return Parse::Invalid("a VALUE line without a byte count");
            };
            let data_end = end + n + 2;
            if buf.len() < data_end {
                return Parse::Incomplete;
            }
            if &buf[end + n..data_end] != b"\r\n" {
                return Parse::Invalid("a value not followed by CRLF");
            }
            hit = true;
            pos = data_end;
            continue;
        }
        let reply = match line {
            b"END" if hit => Reply::Hit,
            b"END" => Reply::Miss,
            _ if hit => return Parse::Invalid("a value not followed by END"),
            b"STORED" => Reply::Stored,
            b"NOT_STORED" | b"EXISTS" | b"NOT_FOUND" => Reply::NotStored,
            b"ERROR" => Reply::Error,
            l if l.starts_with(b"CLIENT_ERROR") || l.starts_with(b"SERVER_ERROR") => Reply::Error,
            _ => return Parse::Invalid("not a memcached response"),
        };
        return Parse::Done(reply, end);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_encoded_with_padded_keys() {
        let mut out = Vec::with_capacity(128);
        encode_get(&mut out, 42, 6);
        assert_eq!(out, b"get k00042\r\n");
        out.clear();
        encode_set(&mut out, 7, 3, 5, b"xxxxxxxx");
        assert_eq!(out, b"set k07 0 0 5\r\nxxxxx\r\n");
        out.clear();
        encode_set(&mut out, 0, 2, 0, b"");
        assert_eq!(out, b"set k0 0 0 0\r\n\r\n");
        assert_eq!(
            (digits(0), digits(9), digits(10), digits(99_999)),
            (1, 1, 2, 5)
        );
    }

    #[test]
    fn whole_responses() {
        assert_eq!(parse(b"END\r\n"), Parse::Done(Reply::Miss, 5));
        assert_eq!(parse(b"STORED\r\n"), Parse::Done(Reply::Stored, 8));
        assert_eq!(parse(b"NOT_STORED\r\n"), Parse::Done(Reply::NotStored, 12));
        let hit = b"VALUE k01 0 3\r\nabc\r\nEND\r\n";
        assert_eq!(parse(hit), Parse::Done(Reply::Hit, hit.len()));
        let cas = b"VALUE k01 0 3 99\r\nabc\r\nEND\r\n";
        assert_eq!(parse(cas), Parse::Done(Reply::Hit, cas.len()));
    }

    #[test]
    fn errors_are_answers_that_count_as_errors() {
        for r in [
            &b"ERROR\r\n"[..],
            b"CLIENT_ERROR bad data chunk\r\n",
            b"SERVER_ERROR out of memory storing object\r\n",
        ] {
            let Parse::Done(reply, n) = parse(r) else {
                panic!("{r:?}")
            };
            assert_eq!((reply, n), (Reply::Error, r.len()));
            assert!(reply.answer().error);
        }
        assert!(Reply::Miss.answer().miss && !Reply::Miss.answer().error);
    }

    #[test]
    fn every_prefix_of_a_response_is_incomplete() {
        let hit = b"VALUE k01 0 10\r\n0123456789\r\nEND\r\n";
        for cut in 0..hit.len() {
            assert_eq!(parse(&hit[..cut]), Parse::Incomplete, "cut at {cut}");
        }
        // a value whose bytes contain CRLF and END is read by its length, not its text
        let tricky = b"VALUE k 0 7\r\nEND\r\n\r\n\r\nEND\r\n";
        assert_eq!(parse(tricky), Parse::Done(Reply::Hit, tricky.len()));
    }

    #[test]
    fn pipelined_responses_are_read_one_after_the_other() {
        let buf = b"STORED\r\nVALUE k1 0 2\r\nhi\r\nEND\r\nEND\r\nSTO";
        let mut pos = 0;
        let mut got = Vec::new();
        while let Parse::Done(r, n) = parse(&buf[pos..]) {
            got.push(r);
            pos += n;
        }
        assert_eq!(got, [Reply::Stored, Reply::Hit, Reply::Miss]);
        assert_eq!(&buf[pos..], b"STO");
    }

    #[test]
    fn garbage_is_invalid() {
        assert!(matches!(parse(b"HTTP/1.1 200 OK\r\n"), Parse::Invalid(_)));
        assert!(matches!(parse(b"VALUE k\r\n"), Parse::Invalid(_)));
        assert!(matches!(
            parse(b"VALUE k 0 2\r\nabXYEND\r\n"),
            Parse::Invalid(_)
        ));
        assert!(matches!(
            parse(b"VALUE k 0 2\r\nab\r\nSTORED\r\n"),
            Parse::Invalid(_)
        ));
        assert!(matches!(parse(&[b'x'; 3000]), Parse::Invalid(_)));
    }

    #[test]
    fn udp_frame_header_round_trips() {
        let mut out = Vec::new();
        encode_udp_header(&mut out, 0xbeef);
        assert_eq!(out.len(), UDP_HEADER);
        assert_eq!(
            parse_udp_header(&out),
            Some(UdpFrame {
                request_id: 0xbeef,
                seq: 0,
                total: 1
            })
        );
        assert_eq!(parse_udp_header(&out[..7]), None);
    }
}
