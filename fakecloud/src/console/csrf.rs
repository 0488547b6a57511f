//! Cross-site request checks for every state-changing form of the console.
//!
//! Two independent checks, because each alone has gaps: the browser's word
//! on where a request comes from (`Sec-Fetch-Site`, else `Origin` against
//! `Host`), which a page elsewhere cannot forge but old browsers and
//! non-browser clients do not send; and a per-session token in a hidden
//! field, which a page elsewhere cannot read. `SameSite=Strict` on the
//! cookie is a third.

use axum::http::HeaderMap;
use axum::http::header::{HOST, ORIGIN};

use super::error::ConsoleError;
use super::secret::same_secret;

/// The form field holding the session's token.
pub const FIELD: &str = "csrf";

/// Refuses a request the browser says comes from another site.
pub fn check_origin(headers: &HeaderMap) -> Result<(), ConsoleError> {
    if let Some(site) = headers.get("sec-fetch-site") {
        // `none` is a user typing a URL or using a bookmark: never a form
        // POST of ours.
        if site.as_bytes() != b"same-origin" {
            return Err(ConsoleError::CrossSite("Sec-Fetch-Site"));
        }
    }
    let Some(origin) = headers.get(ORIGIN) else {
        return Ok(());
    };
    let origin = origin
        .to_str()
        .map_err(|_| ConsoleError::CrossSite("Origin"))?;
    let host = headers
        .get(HOST)
        .and_then(|host| host.to_str().ok())
        .ok_or(ConsoleError::CrossSite("Host"))?;
    let origin_host = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"));
    if origin_host == Some(host) {
        Ok(())
    } else {
        Err(ConsoleError::CrossSite("Origin"))
    }
}

/// Refuses a form (`application/x-www-form-urlencoded`) whose token is not
/// the session's.
pub fn check_token(form: &[u8], expected: &str) -> Result<(), ConsoleError> {
    let sent = form_urlencoded::parse(form)
        .find(|(name, _)| name == FIELD)
        .map(|(_, value)| value);
    match sent {
        Some(sent) if same_secret(&sent, expected) => Ok(()),
        _ => Err(ConsoleError::FormToken),
    }
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.insert(*name, HeaderValue::from_static(value));
        }
        headers
    }

    #[test]
    fn a_form_of_our_own_pages_passes() {
        let ours = headers(&[
            ("host", "127.0.0.1:8787"),
            ("origin", "http://127.0.0.1:8787"),
            ("sec-fetch-site", "same-origin"),
        ]);
        assert!(check_origin(&ours).is_ok());
    }

    #[test]
    fn a_client_that_says_nothing_is_left_to_the_token() {
        assert!(check_origin(&headers(&[("host", "localhost:8787")])).is_ok());
    }

    #[test]
    fn a_form_posted_from_another_site_is_refused() {
        for refused in [
            headers(&[("host", "127.0.0.1:8787"), ("sec-fetch-site", "cross-site")]),
            headers(&[("host", "127.0.0.1:8787"), ("sec-fetch-site", "same-site")]),
            headers(&[("host", "127.0.0.1:8787"), ("sec-fetch-site", "none")]),
            headers(&[
                ("host", "127.0.0.1:8787"),
                ("origin", "http://evil.example"),
            ]),
            headers(&[("host", "127.0.0.1:8787"), ("origin", "null")]),
            headers(&[
                ("host", "127.0.0.1:8787"),
                ("origin", "http://127.0.0.1:8787.evil.example"),
            ]),
            headers(&[("origin", "http://127.0.0.1:8787")]),
        ] {
            assert!(
                matches!(check_origin(&refused), Err(ConsoleError::CrossSite(_))),
                "{refused:?}"
            );
        }
    }

    #[test]
    fn the_form_must_carry_the_sessions_token() {
        assert!(check_token(b"key=team&csrf=s3cret&value=a", "s3cret").is_ok());
        for form in [
            &b"key=team&value=a"[..],
            b"csrf=wrong",
            b"csrf=",
            b"csrf=s3cre",
            b"csrf=s3cret2",
        ] {
            assert!(
                matches!(check_token(form, "s3cret"), Err(ConsoleError::FormToken)),
                "{}",
                String::from_utf8_lossy(form)
            );
        }
    }
}
