//! HTTP/1.1 over keep-alive connections: the GET request (formatted once, sent as is) and
//! the response parser (pure; whole, partial and pipelined responses, `Content-Length`
//! and chunked bodies, `Connection: close`).

use super::reply::{line_end, Answer, Parse};

/// Largest response head (status line and headers) the parser waits for.
pub const MAX_HEAD: usize = 16 * 1024;

/// A parsed response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reply {
    /// The status code.
    pub status: u16,
    /// The server closes the connection after it.
    pub close: bool,
}

impl Reply {
    /// As the generator counts it: a status of 400 or more is an error.
    pub fn answer(self) -> Answer {
        Answer {
            error: self.status >= 400,
            miss: false,
            close: self.close,
        }
    }
}

/// The request: `GET <path> HTTP/1.1` with `Host` (keep-alive is HTTP/1.1's default).
pub fn request(host: &str, path: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: latlab\r\n\r\n").into_bytes()
}

fn parse_status(line: &[u8]) -> Option<u16> {
    let rest = line.strip_prefix(b"HTTP/1.")?;
    let code = rest.get(2..5)?;
    if rest.get(1) != Some(&b' ') || !code.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(code).ok()?.parse().ok()
}

/// A header's name (case-insensitive) and trimmed value.
fn header(line: &[u8]) -> Option<(&[u8], &[u8])> {
    let colon = line.iter().position(|&b| b == b':')?;
    Some((&line[..colon], line[colon + 1..].trim_ascii()))
}

/// The end of a chunked body that starts at `pos`, if all of it is in `buf`.
fn chunked_end(buf: &[u8], mut pos: usize) -> Result<Option<usize>, &'static str> {
    loop {
        let Some(end) = line_end(buf, pos) else {
            return Ok(None);
        };
        let size_text = buf[pos..end - 2]
            .split(|&b| b == b';')
            .next()
            .unwrap_or_default()
            .trim_ascii();
        let size = std::str::from_utf8(size_text)
            .ok()
            .and_then(|s| usize::from_str_radix(s, 16).ok())
            .ok_or("a chunk size that is not hexadecimal")?;
        if size == 0 {
            // trailers, then an empty line
            let mut p = end;
            loop {
                let Some(e) = line_end(buf, p) else {
                    return Ok(None);
                };
                if e - p == 2 {
                    return Ok(Some(e));
                }
                p = e;
            }
        }
        let data_end = end + size + 2;
        if buf.len() < data_end {
            return Ok(None);
        }
        if &buf[end + size..data_end] != b"\r\n" {
            return Err("a chunk not followed by CRLF");
        }
        pos = data_end;
    }
}

/// Parses the response at the front of `buf`.
pub fn parse(buf: &[u8]) -> Parse<Reply> {
    let Some(status_end) = line_end(buf, 0) else {
        return incomplete_head(buf);
    };
    let Some(status) = parse_status(&buf[..status_end - 2]) else {
        return Parse::Invalid("not an HTTP/1.x status line");
    };
    let (mut length, mut chunked, mut close) = (None, false, false);
    let mut pos = status_end;
    let head_end = loop {
        let Some(end) = line_end(buf, pos) else {
            return incomplete_head(buf);
        };
        if end - pos == 2 {
            break end;
        }
        let Some((name, value)) = header(&buf[pos..end - 2]) else {
            return Parse::Invalid("a header line without ':'");
        };
        if name.eq_ignore_ascii_case(b"content-length") {
            match std::str::from_utf8(value)
                .ok()
                .and_then(|v| v.parse::<usize>().ok())
            {
                Some(n) => length = Some(n),
                None => return Parse::Invalid("a Content-Length that is not a number"),
            }
        } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
            chunked = value
                .split(|&b| b == b',')
                .any(|t| t.trim_ascii().eq_ignore_ascii_case(b"chunked"));
        } else if name.eq_ignore_ascii_case(b"connection") {
            close = value
                .split(|&b| b == b',')
                .any(|t| t.trim_ascii().eq_ignore_ascii_case(b"close"));
        }
        pos = end;
    };
    let reply = Reply { status, close };
    // 1xx, 204 and 304 have no body whatever the headers say
    if status < 200 || status == 204 || status == 304 {
        return Parse::Done(reply, head_end);
    }
    if chunked {
        return match chunked_end(buf, head_end) {
            Ok(Some(end)) => Parse::Done(reply, end),
            Ok(None) => Parse::Incomplete,
            Err(why) => Parse::Invalid(why),
        };
    }
    match length {
        Some(n) if buf.len() >= head_end + n => Parse::Done(reply, head_end + n),
        Some(_) => Parse::Incomplete,
        None => Parse::Invalid("a response without Content-Length or chunked body (its end is the connection's close, which keep-alive cannot use)"),
    }
}

fn incomplete_head(buf: &[u8]) -> Parse<Reply> {
    if buf.len() > MAX_HEAD {
        Parse::Invalid("a response head longer than 16 KiB")
    } else {
        Parse::Incomplete
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OK: &[u8] = b"HTTP/1.1 200 OK\r\nServer: nginx\r\nContent-Length: 5\r\n\r\nhello";

    #[test]
    fn the_request_is_a_keep_alive_get() {
        assert_eq!(
            request("10.0.0.2:8080", "/index.html"),
            b"GET /index.html HTTP/1.1\r\nHost: 10.0.0.2:8080\r\nUser-Agent: latlab\r\n\r\n"
        );
    }

    #[test]
    fn a_response_with_a_length() {
        assert_eq!(
            parse(OK),
            Parse::Done(
                Reply {
                    status: 200,
                    close: false
                },
                OK.len()
            )
        );
        for cut in 0..OK.len() {
            assert_eq!(parse(&OK[..cut]), Parse::Incomplete, "cut at {cut}");
        }
    }

    #[test]
    fn chunked_bodies_and_their_prefixes() {
        let r = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=1\r\nhello\r\n3\r\n\r\n\r\r\n0\r\nX-T: 1\r\n\r\n";
        assert_eq!(
            parse(r),
            Parse::Done(
                Reply {
                    status: 200,
                    close: false
                },
                r.len()
            )
        );
        for cut in 0..r.len() {
            assert_eq!(parse(&r[..cut]), Parse::Incomplete, "cut at {cut}");
        }
        let bad = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n";
        assert!(matches!(parse(bad), Parse::Invalid(_)));
    }

    #[test]
    fn pipelined_responses_and_close() {
        let mut buf = OK.to_vec();
        buf.extend_from_slice(
            b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nConnection: keep-alive, Close\r\n\r\n",
        );
        buf.extend_from_slice(b"HTTP/1.1 204 No Content\r\n\r\nHTTP/1.1 2");
        let mut pos = 0;
        let mut got = Vec::new();
        while let Parse::Done(r, n) = parse(&buf[pos..]) {
            got.push(r);
            pos += n;
        }
        assert_eq!(
            got,
            [
                Reply {
                    status: 200,
                    close: false
                },
                Reply {
                    status: 404,
                    close: true
                },
                Reply {
                    status: 204,
                    close: false
                }
            ]
        );
        assert_eq!(&buf[pos..], b"HTTP/1.1 2");
        assert!(got[1].answer().error && got[1].answer().close);
        assert!(!got[0].answer().error);
    }

    #[test]
    fn what_is_not_a_usable_response() {
        assert!(matches!(parse(b"STORED\r\n"), Parse::Invalid(_)));
        assert!(matches!(
            parse(b"HTTP/1.1 200 OK\r\nbroken\r\n\r\n"),
            Parse::Invalid(_)
        ));
        assert!(matches!(
            parse(b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n"),
            Parse::Invalid(_)
        ));
        assert!(matches!(
            parse(b"HTTP/1.0 200 OK\r\n\r\n"),
            Parse::Invalid(_)
        ));
        assert!(matches!(
            parse(&vec![b'a'; MAX_HEAD + 1]),
            Parse::Invalid(_)
        ));
    }
}
