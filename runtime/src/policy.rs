//! What a managed resource's `managementPolicies` and `deletionPolicy` allow
//! the reconciler to do (seed 003), as plain functions over plain data.
//!
//! Two rules go deliberately beyond crossplane-runtime, toward leaving the
//! external resource alone whenever the user's intent is ambiguous:
//! - `deletionPolicy: Orphan` orphans even when the policies name `Delete`
//!   (seed 003, "Deletion policy"); crossplane-runtime ignores `Orphan` for a
//!   non-default policy set that names `Delete`.
//! - a policy set without `Create` never mutates a resource that does not
//!   exist; crossplane-runtime still calls Update for `{Observe, Update}`.
//!   That rule lives in the reconciler's plan; [`Actions::create`] is its input.

use crossplane_types::{DeletionPolicy, ManagementAction};

/// The actions a resource's policies allow, once the set is known supported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Actions {
    pub observe: bool,
    pub create: bool,
    pub update: bool,
    pub delete: bool,
    pub late_initialize: bool,
}

impl Actions {
    /// Everything: `["*"]`, and what applies when management policies are
    /// switched off by flag (seed 000, "Feature Gating").
    pub const ALL: Actions = Actions {
        observe: true,
        create: true,
        update: true,
        delete: true,
        late_initialize: true,
    };
}

/// What the reconciler may do with a resource, decided before any I/O.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    /// `managementPolicies: []` or the `crossplane.io/paused` annotation: no
    /// call to the cloud, no change but the `Synced` condition.
    Paused,
    /// A combination crossplane-runtime does not support: report it, do nothing.
    Unsupported(String),
    Active(Actions),
}

const O: u8 = 1;
const C: u8 = 2;
const U: u8 = 4;
const D: u8 = 8;
const LI: u8 = 16;
/// `*`, kept apart from the five actions because `["*"]` is its own set.
const ALL_FLAG: u8 = 32;

/// The sets crossplane-runtime supports, compared as sets. The empty set is
/// the pause and is handled before this table is consulted.
const SUPPORTED: [u8; 14] = [
    ALL_FLAG,
    O | C | U | D | LI,
    O,
    O | C | U | D,
    O | C | U | LI,
    O | C | U,
    O | C | D | LI,
    O | C | LI,
    O | C | D,
    O | C,
    O | D,
    O | U,
    O | LI,
    O | U | LI,
];

fn flag(policy: &ManagementAction) -> u8 {
    match policy {
        ManagementAction::All => ALL_FLAG,
        ManagementAction::Observe => O,
        ManagementAction::Create => C,
        ManagementAction::Update => U,
        ManagementAction::Delete => D,
        ManagementAction::LateInitialize => LI,
    }
}

/// The human spelling of the supported sets, for the `Synced` message.
fn supported_sets_text() -> String {
    let names = [
        (ALL_FLAG, "*"),
        (O, "Observe"),
        (C, "Create"),
        (U, "Update"),
        (D, "Delete"),
        (LI, "LateInitialize"),
    ];
    let mut sets = vec!["[]".to_string()];
    sets.extend(SUPPORTED.iter().map(|set| {
        let members: Vec<&str> = names
            .iter()
            .filter(|(bit, _)| set & bit != 0)
            .map(|(_, name)| *name)
            .collect();
        format!("[{}]", members.join(", "))
    }));
    sets.join(", ")
}

/// Decides the mode from the policies, the paused annotation and whether the
/// management-policies feature is on. With the feature off the field is
/// ignored: every action is allowed and `deletionPolicy` alone decides
/// deletion (seed 000, "Feature Gating").
pub fn mode(policies: &[ManagementAction], paused_annotation: bool, feature_enabled: bool) -> Mode {
    if paused_annotation {
        return Mode::Paused;
    }
    if !feature_enabled {
        return Mode::Active(Actions::ALL);
    }
    let set = policies.iter().fold(0u8, |set, p| set | flag(p));
    if set == 0 {
        return Mode::Paused;
    }
    if !SUPPORTED.contains(&set) {
        return Mode::Unsupported(format!(
            "unsupported managementPolicies {}: use one of {}",
            serde_json::to_string(policies).unwrap_or_default(),
            supported_sets_text()
        ));
    }
    if set == ALL_FLAG {
        return Mode::Active(Actions::ALL);
    }
    Mode::Active(Actions {
        observe: set & O != 0,
        create: set & C != 0,
        update: set & U != 0,
        delete: set & D != 0,
        late_initialize: set & LI != 0,
    })
}

/// Whether deleting the managed resource must leave the external one alone:
/// when `deletionPolicy` is `Orphan`, or when the policies do not allow
/// `Delete`. Either side asking to orphan wins.
pub fn orphans_on_delete(actions: Actions, deletion_policy: &DeletionPolicy) -> bool {
    matches!(deletion_policy, DeletionPolicy::Orphan) || !actions.delete
}

#[cfg(test)]
mod tests {
    use super::*;
    use ManagementAction::*;

    fn active(policies: &[ManagementAction]) -> Actions {
        match mode(policies, false, true) {
            Mode::Active(actions) => actions,
            other => panic!("{policies:?}: expected active, got {other:?}"),
        }
    }

    #[test]
    fn star_and_the_full_list_allow_everything() {
        assert_eq!(active(&[All]), Actions::ALL);
        assert_eq!(
            active(&[Observe, Create, Update, Delete, LateInitialize]),
            Actions::ALL
        );
    }

    #[test]
    fn every_supported_set_is_active_with_exactly_its_actions() {
        let cases: &[(&[ManagementAction], Actions)] = &[
            (
                &[Observe],
                Actions {
                    observe: true,
                    ..Default::default()
                },
            ),
            (
                &[Observe, Create, Update, Delete],
                Actions {
                    late_initialize: false,
                    ..Actions::ALL
                },
            ),
            (
                &[Observe, Create, Update, LateInitialize],
                Actions {
                    delete: false,
                    ..Actions::ALL
                },
            ),
            (
                &[Observe, Create, Update],
                Actions {
                    delete: false,
                    late_initialize: false,
                    ..Actions::ALL
                },
            ),
            (
                &[Observe, Create, Delete, LateInitialize],
                Actions {
                    update: false,
                    ..Actions::ALL
                },
            ),
            (
                &[Observe, Create, LateInitialize],
                Actions {
                    update: false,
                    delete: false,
                    ..Actions::ALL
                },
            ),
            (
                &[Observe, Create, Delete],
                Actions {
                    update: false,
                    late_initialize: false,
                    ..Actions::ALL
                },
            ),
            (
                &[Observe, Create],
                Actions {
                    observe: true,
                    create: true,
                    ..Default::default()
                },
            ),
            (
                &[Observe, Delete],
                Actions {
                    observe: true,
                    delete: true,
                    ..Default::default()
                },
            ),
            (
                &[Observe, Update],
                Actions {
                    observe: true,
                    update: true,
                    ..Default::default()
                },
            ),
            (
                &[Observe, LateInitialize],
                Actions {
                    observe: true,
                    late_initialize: true,
                    ..Default::default()
                },
            ),
            (
                &[Observe, Update, LateInitialize],
                Actions {
                    observe: true,
                    update: true,
                    late_initialize: true,
                    ..Default::default()
                },
            ),
        ];
        for (policies, want) in cases {
            assert_eq!(active(policies), *want, "{policies:?}");
        }
    }

    #[test]
    fn order_and_duplicates_do_not_matter() {
        assert_eq!(
            active(&[Create, Observe, Create]),
            active(&[Observe, Create])
        );
    }

    #[test]
    fn empty_policies_and_the_annotation_pause() {
        assert_eq!(mode(&[], false, true), Mode::Paused);
        assert_eq!(mode(&[All], true, true), Mode::Paused);
        assert_eq!(mode(&[All], true, false), Mode::Paused);
    }

    #[test]
    fn unsupported_sets_name_the_supported_ones() {
        for policies in [
            &[Create][..],
            &[Delete],
            &[Observe, Create, Update, Delete, LateInitialize, All],
            &[All, Observe],
            &[Create, Update, Delete],
            &[Observe, Update, Delete],
        ] {
            match mode(policies, false, true) {
                Mode::Unsupported(message) => {
                    assert!(
                        message.contains("unsupported managementPolicies"),
                        "{message}"
                    );
                    assert!(
                        message.contains("[Observe, Create, Update, Delete]"),
                        "{message}"
                    );
                    assert!(message.contains("[*]"), "{message}");
                }
                other => panic!("{policies:?}: expected unsupported, got {other:?}"),
            }
        }
    }

    #[test]
    fn there_are_fifteen_supported_sets_counting_the_pause() {
        let all_subsets = (0u8..64).filter(|set| {
            let policies: Vec<ManagementAction> =
                [All, Observe, Create, Update, Delete, LateInitialize]
                    .into_iter()
                    .enumerate()
                    .filter(|(bit, _)| set & (1 << bit) != 0)
                    .map(|(_, p)| p)
                    .collect();
            !matches!(mode(&policies, false, true), Mode::Unsupported(_))
        });
        assert_eq!(all_subsets.count(), 15);
    }

    #[test]
    fn feature_off_ignores_policies() {
        assert_eq!(mode(&[Observe], false, false), Mode::Active(Actions::ALL));
        assert_eq!(mode(&[], false, false), Mode::Active(Actions::ALL));
        assert_eq!(mode(&[Create], false, false), Mode::Active(Actions::ALL));
    }

    #[test]
    fn orphan_wins_over_delete_and_missing_delete_orphans() {
        assert!(orphans_on_delete(Actions::ALL, &DeletionPolicy::Orphan));
        assert!(!orphans_on_delete(Actions::ALL, &DeletionPolicy::Delete));
        let no_delete = active(&[Observe, Create, Update, LateInitialize]);
        assert!(orphans_on_delete(no_delete, &DeletionPolicy::Delete));
        assert!(orphans_on_delete(
            active(&[Observe]),
            &DeletionPolicy::Delete
        ));
        let explicit_delete = active(&[Observe, Create, Update, Delete]);
        assert!(orphans_on_delete(explicit_delete, &DeletionPolicy::Orphan));
    }
}
