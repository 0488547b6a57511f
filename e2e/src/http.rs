//! A plain HTTP/1.0 GET for the provider's `/metrics` and `/readyz`.
//!
//! Written by hand because the e2e crate has no HTTP client dependency of
//! its own and these two endpoints need nothing more than a request line and
//! the body back.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How long one local request may take.
const TIMEOUT: Duration = Duration::from_secs(5);

/// The status code and body of `GET path` from `addr` (`host:port`; a name
/// such as a compose service's is resolved).
pub(crate) async fn get(addr: &str, path: &str) -> std::io::Result<(u16, String)> {
    tokio::time::timeout(TIMEOUT, async {
        let mut stream = TcpStream::connect(addr).await?;
        stream
            .write_all(format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").as_bytes())
            .await?;
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).await?;
        parse(&String::from_utf8_lossy(&raw))
    })
    .await
    .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, format!("GET {path}")))?
}

fn parse(response: &str) -> std::io::Result<(u16, String)> {
    let bad = || std::io::Error::new(std::io::ErrorKind::InvalidData, "malformed HTTP response");
    let (head, body) = response.split_once("\r\n\r\n").ok_or_else(bad)?;
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .ok_or_else(bad)?;
    Ok((status, body.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_status_and_body() {
        let (status, body) = parse("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok").unwrap();
        assert_eq!((status, body.as_str()), (200, "ok"));
    }

    #[test]
    fn rejects_a_response_without_a_header_end() {
        assert!(parse("HTTP/1.1 200 OK\r\n").is_err());
        assert!(parse("garbage\r\n\r\n").is_err());
    }
}
