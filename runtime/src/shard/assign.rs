//! Which replica owns an object: rendezvous (highest-random-weight)
//! hashing of the object's key over the live members.
//!
//! Every member gets a score for the object, a hash of the pair; the
//! highest score owns it. Adding a member moves only the objects the new
//! member now wins, about 1/(N+1) of them; removing one moves only that
//! member's objects, spread over the others. No ring, no virtual nodes, no
//! state: any replica and any test computes the same owner from the same
//! members, and with a few replicas the O(N) scores per object are
//! nothing beside an API write.
//!
//! The hash is FNV-1a 64 followed by splitmix64's finaliser, written here
//! rather than `std`'s hasher, whose output Rust does not promise to keep
//! from one release to the next: two replicas built by different compilers
//! must agree. FNV-1a alone spreads its low bits poorly on keys that differ
//! only at the end (`vpc-1`, `vpc-2`); the finaliser mixes every input bit
//! into every output bit.

/// The owner of the object `key` among `members` (the live replicas'
/// identities, in any order); `None` when there is no member.
pub(crate) fn owner<'m>(key: &str, members: &'m [String]) -> Option<&'m str> {
    members
        .iter()
        .max_by_key(|member| (score(member, key), member.as_str()))
        .map(String::as_str)
}

/// The key an object is assigned by: its API group, kind, namespace and
/// name. Stable for the object's life and known before it exists (unlike
/// its uid), so the owner of a name is the same in every cluster, and a
/// VPC and a Subnet of one name are placed independently.
pub(crate) fn object_key(group: &str, kind: &str, namespace: Option<&str>, name: &str) -> String {
    format!("{group}/{kind}/{}/{name}", namespace.unwrap_or(""))
}

fn score(member: &str, key: &str) -> u64 {
    let bytes = member.bytes().chain([0]).chain(key.bytes());
    mix(fnv1a(bytes))
}

fn fnv1a(bytes: impl Iterator<Item = u8>) -> u64 {
    bytes.fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// splitmix64's finaliser.
fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn members(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| (*n).to_owned()).collect()
    }

    fn keys(count: usize) -> Vec<String> {
        (0..count)
            .map(|i| {
                object_key(
                    "network.example.org",
                    "VPC",
                    Some(&format!("team-{}", i % 3)),
                    &format!("vpc-{i}"),
                )
            })
            .collect()
    }

    fn assignment<'m>(keys: &[String], members: &'m [String]) -> Vec<&'m str> {
        keys.iter().map(|k| owner(k, members).unwrap()).collect()
    }

    #[test]
    fn no_member_owns_nothing_and_one_member_owns_everything() {
        assert_eq!(owner("a/VPC//x", &[]), None);
        let solo = members(&["only"]);
        assert!(assignment(&keys(100), &solo).iter().all(|o| *o == "only"));
    }

    #[test]
    fn the_owner_does_not_depend_on_the_members_order() {
        let forward = members(&["provider-a", "provider-b", "provider-c"]);
        let backward = members(&["provider-c", "provider-b", "provider-a"]);
        let keys = keys(1_000);
        assert_eq!(assignment(&keys, &forward), assignment(&keys, &backward));
    }

    /// The same members and keys give the same owners in every build: the
    /// hash is our own, not `std`'s. A changed value here would reshuffle
    /// every sharded provider on upgrade.
    #[test]
    fn the_hash_is_fixed() {
        assert_eq!(fnv1a(b"".iter().copied()), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a".iter().copied()), 0xaf63_dc4c_8601_ec8c);
        let three = members(&["provider-a", "provider-b", "provider-c"]);
        // FNV-1a 64 and splitmix64 computed apart (Python) give this score.
        assert_eq!(score("provider-a", "k"), 11_327_581_617_180_720_240);
        assert_eq!(
            assignment(&keys(6), &three),
            [
                "provider-c",
                "provider-c",
                "provider-b",
                "provider-b",
                "provider-a",
                "provider-a"
            ]
        );
    }

    #[test]
    fn three_members_share_evenly() {
        let three = members(&["provider-0", "provider-1", "provider-2"]);
        let keys = keys(30_000);
        let mut counts: HashMap<&str, usize> = HashMap::new();
        for owner in assignment(&keys, &three) {
            *counts.entry(owner).or_default() += 1;
        }
        assert_eq!(counts.len(), 3);
        for (member, count) in counts {
            let share = count as f64 / 30_000.0;
            assert!((0.31..0.36).contains(&share), "{member}: {share}");
        }
    }

    #[test]
    fn adding_a_member_moves_about_one_in_n_and_only_to_it() {
        let three = members(&["provider-0", "provider-1", "provider-2"]);
        let four = members(&["provider-0", "provider-1", "provider-2", "provider-3"]);
        let keys = keys(30_000);
        let before = assignment(&keys, &three);
        let after = assignment(&keys, &four);
        let moved: Vec<_> = before.iter().zip(&after).filter(|(b, a)| b != a).collect();
        assert!(
            moved.iter().all(|(_, to)| **to == "provider-3"),
            "only the new member gains"
        );
        let share = moved.len() as f64 / keys.len() as f64;
        assert!((0.22..0.28).contains(&share), "moved {share}");
    }

    #[test]
    fn removing_a_member_moves_only_its_objects() {
        let three = members(&["provider-0", "provider-1", "provider-2"]);
        let two = members(&["provider-0", "provider-2"]);
        let keys = keys(30_000);
        let before = assignment(&keys, &three);
        let after = assignment(&keys, &two);
        for (b, a) in before.iter().zip(&after) {
            if *b != "provider-1" {
                assert_eq!(b, a, "an object of a surviving member moved");
            }
        }
        let gained_by_0 = before
            .iter()
            .zip(&after)
            .filter(|(b, a)| **b == "provider-1" && **a == "provider-0")
            .count();
        let orphaned = before.iter().filter(|b| **b == "provider-1").count();
        let share = gained_by_0 as f64 / orphaned as f64;
        assert!(
            (0.45..0.55).contains(&share),
            "the survivors split it: {share}"
        );
    }

    #[test]
    fn the_key_names_group_kind_namespace_and_name() {
        assert_eq!(object_key("g", "VPC", Some("ns"), "n"), "g/VPC/ns/n");
        assert_eq!(object_key("g", "VPC", None, "n"), "g/VPC//n");
    }
}
