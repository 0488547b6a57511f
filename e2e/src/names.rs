//! Names for what a test creates.
//!
//! Here rather than in `lib.rs`, which re-exports it: `cluster` and
//! `containers` name what they create with it, and the crate root uses
//! `cluster` (re-exports from it), so they must not use the root.

/// `prefix` plus a random suffix: a DNS-1123 name no other test uses.
pub fn unique_name(prefix: &str) -> String {
    let suffix = uuid::Uuid::new_v4().simple().to_string();
    format!("{prefix}-{}", &suffix[..10])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unique_names_are_valid_and_distinct() {
        let a = unique_name("vpc");
        let b = unique_name("vpc");
        assert_ne!(a, b);
        assert!(a.starts_with("vpc-") && a.len() == 14, "{a}");
        assert!(
            a.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        );
    }
}
