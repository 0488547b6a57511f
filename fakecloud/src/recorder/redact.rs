//! Keeping secrets out of recordings while replays still behave alike.
//!
//! A recorded body's secrets (`masterPassword`, `password`, wherever they
//! appear) are replaced by stand-ins: the same length, each character a
//! password may hold mapped to another such character and every other one
//! to `@` (which a password may not hold), by a key drawn for each
//! recording and never written down. So a stand-in is valid exactly when
//! the password was; the same password gives the same stand-in throughout a
//! recording, and different ones differ. Replayed, a create or password
//! change succeeds or fails as it did, and an `authenticate` with the right
//! password still matches and a wrong one still does not. A stand-in tells
//! nothing of its password but its length (and, as equal stand-ins, that
//! two passwords were equal).

use serde_json::Value;
use sha2::{Digest, Sha256};

/// Fields whose values are secrets, at any depth of a body.
const SECRET_FIELDS: [&str; 2] = ["masterPassword", "password"];

/// The characters a password may hold (`database::password`): printable
/// ASCII but `/`, `"` and `@`.
fn allowed() -> impl Iterator<Item = u8> {
    (b' '..=b'~').filter(|c| !b"/\"@".contains(c))
}

/// A request body as a recording keeps it.
#[derive(Debug, PartialEq)]
pub enum RecordedBody {
    /// No body.
    Empty,
    /// JSON: as sent when it holds no secret, else with stand-ins.
    Json(String),
    /// Not JSON: left out, as a secret in it could not be found.
    Malformed,
}

/// Stand-ins of one recording.
pub struct Redactor {
    key: [u8; 32],
    alphabet: Vec<u8>,
}

impl Redactor {
    /// A redactor with a key of its own (random even on a seeded server: the
    /// key is no generated id, and must not move the seeded streams).
    pub fn new() -> Redactor {
        Redactor {
            key: rand::random(),
            alphabet: allowed().collect(),
        }
    }

    /// `body` as a recording keeps it.
    pub fn body(&self, body: &[u8]) -> RecordedBody {
        if body.is_empty() {
            return RecordedBody::Empty;
        }
        let Ok(mut value) = serde_json::from_slice::<Value>(body) else {
            return RecordedBody::Malformed;
        };
        if !self.redact(&mut value) {
            // Valid JSON is UTF-8, so the body is kept byte for byte: an
            // idempotent create's replay sends what the first one did.
            if let Ok(text) = std::str::from_utf8(body) {
                return RecordedBody::Json(text.to_string());
            }
        }
        RecordedBody::Json(value.to_string())
    }

    /// Replaces every secret in `value`; whether there was one. A secret
    /// that is no string (refused by the server as such) becomes `false`,
    /// refused alike, and `null` (no secret) stays.
    fn redact(&self, value: &mut Value) -> bool {
        match value {
            Value::Object(map) => {
                let mut found = false;
                for (field, value) in map.iter_mut() {
                    if SECRET_FIELDS.contains(&field.as_str()) {
                        match value {
                            Value::Null => continue,
                            Value::String(secret) => *secret = self.stand_in(secret),
                            other => *other = Value::Bool(false),
                        }
                        found = true;
                    } else {
                        found |= self.redact(value);
                    }
                }
                found
            }
            Value::Array(items) => items
                .iter_mut()
                .fold(false, |found, item| self.redact(item) | found),
            _ => false,
        }
    }

    /// The stand-in of `secret` (see the module).
    pub fn stand_in(&self, secret: &str) -> String {
        let n = self.alphabet.len();
        secret
            .chars()
            .zip(self.keystream(secret))
            .map(
                |(c, k)| match self.alphabet.iter().position(|&a| char::from(a) == c) {
                    Some(i) => char::from(self.alphabet[(i + usize::from(k)) % n]),
                    None => '@',
                },
            )
            .collect()
    }

    /// Bytes derived from the key and the whole secret:
    /// `SHA-256(key, secret, block)` for block 0, 1, ...
    fn keystream(&self, secret: &str) -> impl Iterator<Item = u8> + '_ {
        let secret = secret.to_string();
        (0u64..).flat_map(move |block| {
            let mut hasher = Sha256::new();
            hasher.update(self.key);
            hasher.update((secret.len() as u64).to_le_bytes());
            hasher.update(secret.as_bytes());
            hasher.update(block.to_le_bytes());
            hasher.finalize().to_vec()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_valid_password(p: &str) -> bool {
        (8..=128).contains(&p.chars().count())
            && p.chars()
                .all(|c| (' '..='~').contains(&c) && !"/\"@".contains(c))
    }

    #[test]
    fn a_stand_in_keeps_length_and_validity_and_hides_the_password() {
        let redactor = Redactor::new();
        for password in [
            "correct horse battery staple",
            "short",
            "has@at-sign",
            "ünïcödé-pässwörd",
            &"x".repeat(128),
        ] {
            let stand_in = redactor.stand_in(password);
            assert_eq!(stand_in.chars().count(), password.chars().count());
            assert_eq!(is_valid_password(&stand_in), is_valid_password(password));
            assert_ne!(stand_in, password);
        }
    }

    #[test]
    fn one_password_gives_one_stand_in_per_recording() {
        let (a, b) = (Redactor::new(), Redactor::new());
        assert_eq!(a.stand_in("same-password"), a.stand_in("same-password"));
        assert_ne!(a.stand_in("same-password"), a.stand_in("same-passworD"));
        assert_ne!(a.stand_in("same-password"), b.stand_in("same-password"));
    }

    #[test]
    fn bodies_keep_their_bytes_unless_they_hold_a_secret() {
        let redactor = Redactor::new();
        let plain = br#"{ "cidrBlock": "10.0.0.0/16" }"#;
        assert_eq!(
            redactor.body(plain),
            RecordedBody::Json(String::from_utf8(plain.to_vec()).unwrap())
        );
        assert_eq!(redactor.body(b""), RecordedBody::Empty);
        assert_eq!(
            redactor.body(br#"{"masterPassword": "hunter22"#),
            RecordedBody::Malformed
        );
        let RecordedBody::Json(text) = redactor.body(
            br#"{"identifier":"db","masterPassword":"hunter2hunter2","nested":[{"password":12345678}],"tags":{"password":null}}"#,
        ) else {
            panic!("not JSON")
        };
        assert!(
            !text.contains("hunter2") && !text.contains("12345678"),
            "{text}"
        );
        let value: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value["identifier"], "db");
        assert_eq!(
            value["masterPassword"].as_str().unwrap().len(),
            "hunter2hunter2".len()
        );
        assert_eq!(value["nested"][0]["password"], false);
        assert_eq!(value["tags"]["password"], Value::Null);
    }
}
