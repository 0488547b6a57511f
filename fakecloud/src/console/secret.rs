//! Comparing a secret the browser sent (a session's CSRF token, the admin
//! token at login) with the one expected, in time that does not tell an
//! attacker how much of it matched. Its own module because the session and
//! the cross-site checks both need it and neither should depend on the
//! other for it.

use subtle::ConstantTimeEq;

/// Compares two secrets in time that depends on their lengths only.
pub fn same_secret(sent: &str, expected: &str) -> bool {
    sent.as_bytes().ct_eq(expected.as_bytes()).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_compare_whole() {
        assert!(same_secret("token", "token"));
        assert!(!same_secret("token", "tokeN"));
        assert!(!same_secret("tok", "token"));
        assert!(!same_secret("", "token"));
    }
}
