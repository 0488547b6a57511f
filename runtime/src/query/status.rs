//! A query's status, decided apart from I/O: after a successful reconcile
//! ([`settled`]) and after a failed one ([`failed`]). Each returns the new
//! status only when it differs from the current one, so a query whose
//! matches did not change costs no write.

use crossplane_types::condition::TYPE_READY;
use crossplane_types::query::MAX_LISTED_MATCHES;
use crossplane_types::{Condition, QueryMatch, QueryStatus, Selection};

use super::plan::Desired;

/// How a query's messages name the managed kind its matches become:
/// `VPC`, `VPCs`.
#[derive(Clone, Copy, Debug)]
pub struct Noun<'a>(pub &'a str);

impl Noun<'_> {
    /// `1 VPC`, `3 VPCs`, `no VPC`.
    fn count(self, n: usize) -> String {
        match n {
            0 => format!("no {}", self.0),
            1 => format!("1 {}", self.0),
            n => format!("{n} {}s", self.0),
        }
    }
}

/// What a successful reconcile found and did.
#[derive(Clone, Debug)]
pub struct Outcome<'a> {
    /// The matches kept, each with its managed resource's name, oldest
    /// first.
    pub kept: &'a [Desired],
    /// How many matched before `mostRecent` or `limit`.
    pub total: usize,
    pub selection: Selection,
    /// Kept matches whose managed resource waits for an older one of the
    /// same name to be deleted.
    pub waiting: usize,
    pub generation: Option<i64>,
}

/// The `Ready` message: how many matched, how many were kept and why.
fn ready_message(noun: Noun<'_>, outcome: &Outcome<'_>) -> String {
    let kept = outcome.kept.len();
    let (total, kind) = (outcome.total, noun.0);
    if total == 0 {
        return format!("no {kind} matches the filter: there is nothing to observe");
    }
    let matched = match total {
        1 => format!("1 {kind} matches"),
        n => format!("{n} {kind}s match"),
    };
    let selected = match outcome.selection {
        _ if kept == total => String::new(),
        Selection::MostRecent => "; mostRecent keeps the newest".to_owned(),
        _ => format!("; limit keeps the oldest {kept}"),
    };
    let each = if kept == 1 {
        format!("it is observed by an observe-only {kind} (status.matches)")
    } else {
        format!("each is observed by an observe-only {kind} of its own (status.matches)")
    };
    format!("{matched}{selected}: {each}")
}

/// The status after a successful reconcile: the matches, `Synced=True`,
/// and `Ready=True` once every kept match has its managed resource
/// (`Ready=False`, reason `Creating`, while some wait for an older one of
/// the same name to go). `None` when that is the status already.
pub fn settled(
    current: Option<&QueryStatus>,
    noun: Noun<'_>,
    outcome: &Outcome<'_>,
) -> Option<QueryStatus> {
    let mut status = current.cloned().unwrap_or_default();
    let before = status.clone();
    status.match_count = Some(outcome.kept.len() as i64);
    status.matches = outcome
        .kept
        .iter()
        .take(MAX_LISTED_MATCHES)
        .map(|d| QueryMatch {
            external_name: d.found.external_name.clone(),
            name: d.name.clone(),
        })
        .collect();
    let ready = if outcome.waiting == 0 {
        Condition::available().with_message(ready_message(noun, outcome))
    } else {
        Condition::creating().with_message(format!(
            "{} waiting for an older managed resource of the same name to be deleted",
            noun.count(outcome.waiting)
        ))
    };
    let stamp = |c: Condition| match outcome.generation {
        Some(generation) => c.with_observed_generation(generation),
        None => c,
    };
    status.set_condition(stamp(ready));
    status.set_condition(stamp(Condition::reconcile_success()));
    (status != before).then_some(status)
}

/// The status after a failed reconcile: `Synced=False` with the error, the
/// matches as they were. A query that never succeeded gets `Ready=False`
/// (`Unavailable`) too, so it does not show no readiness at all. `None`
/// when that is the status already.
pub fn failed(
    current: Option<&QueryStatus>,
    message: &str,
    generation: Option<i64>,
) -> Option<QueryStatus> {
    let mut status = current.cloned().unwrap_or_default();
    let before = status.clone();
    let stamp = |c: Condition| match generation {
        Some(generation) => c.with_observed_generation(generation),
        None => c,
    };
    if status.condition(TYPE_READY).is_none() {
        status.set_condition(stamp(
            Condition::unavailable().with_message("the filter has not been run successfully yet"),
        ));
    }
    status.set_condition(stamp(Condition::reconcile_error(message)));
    (status != before).then_some(status)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::plan::{Found, desired};
    use crossplane_types::condition::{ConditionStatus, TYPE_SYNCED};

    fn kept(n: usize) -> Vec<Desired> {
        desired(
            "q",
            (0..n)
                .map(|i| Found {
                    external_name: format!("vpc-{i}"),
                    created_at: jiff::Timestamp::from_second(i as i64).unwrap(),
                    for_provider: serde_json::json!({}),
                })
                .collect(),
        )
    }

    fn outcome(kept: &[Desired], total: usize, selection: Selection) -> Outcome<'_> {
        Outcome {
            kept,
            total,
            selection,
            waiting: 0,
            generation: Some(1),
        }
    }

    fn message<'a>(status: &'a QueryStatus, type_: &str) -> (&'a ConditionStatus, &'a str) {
        let c = status.condition(type_).unwrap();
        (&c.status, c.message.as_deref().unwrap_or_default())
    }

    #[test]
    fn no_match_is_ready_with_zero_matches_and_says_so() {
        let status = settled(None, Noun("VPC"), &outcome(&[], 0, Selection::All)).unwrap();
        assert_eq!(status.match_count, Some(0));
        assert!(status.matches.is_empty());
        assert_eq!(
            message(&status, TYPE_READY),
            (
                &ConditionStatus::True,
                "no VPC matches the filter: there is nothing to observe"
            )
        );
        assert_eq!(message(&status, TYPE_SYNCED).0, &ConditionStatus::True);
    }

    #[test]
    fn matches_are_counted_listed_and_explained() {
        let three = kept(3);
        let status = settled(None, Noun("VPC"), &outcome(&three, 3, Selection::All)).unwrap();
        assert_eq!(status.match_count, Some(3));
        assert_eq!(
            status.matches[0],
            QueryMatch {
                external_name: "vpc-0".into(),
                name: "q-vpc-0".into()
            }
        );
        assert_eq!(
            message(&status, TYPE_READY).1,
            "3 VPCs match: each is observed by an observe-only VPC of its own (status.matches)"
        );
        let newest = &three[2..];
        let status = settled(
            None,
            Noun("VPC"),
            &outcome(newest, 3, Selection::MostRecent),
        )
        .unwrap();
        assert_eq!(
            message(&status, TYPE_READY).1,
            "3 VPCs match; mostRecent keeps the newest: it is observed by an observe-only VPC (status.matches)"
        );
        let status = settled(
            None,
            Noun("VPC"),
            &outcome(&three[..2], 3, Selection::First(2)),
        )
        .unwrap();
        assert!(
            message(&status, TYPE_READY)
                .1
                .contains("limit keeps the oldest 2")
        );
    }

    #[test]
    fn the_list_is_bounded_and_the_count_is_not() {
        let many = kept(MAX_LISTED_MATCHES + 5);
        let status = settled(
            None,
            Noun("VPC"),
            &outcome(&many, many.len(), Selection::All),
        )
        .unwrap();
        assert_eq!(status.matches.len(), MAX_LISTED_MATCHES);
        assert_eq!(status.match_count, Some(many.len() as i64));
    }

    #[test]
    fn the_same_outcome_again_writes_nothing() {
        let two = kept(2);
        let first = settled(None, Noun("VPC"), &outcome(&two, 2, Selection::All)).unwrap();
        assert_eq!(
            settled(Some(&first), Noun("VPC"), &outcome(&two, 2, Selection::All)),
            None
        );
    }

    #[test]
    fn a_failure_keeps_the_matches_and_reports_on_synced_only() {
        let two = kept(2);
        let good = settled(None, Noun("VPC"), &outcome(&two, 2, Selection::All)).unwrap();
        let bad = failed(Some(&good), "cannot list VPCs: throttled", Some(1)).unwrap();
        assert_eq!(bad.matches, good.matches);
        assert_eq!(message(&bad, TYPE_READY).0, &ConditionStatus::True);
        assert_eq!(
            message(&bad, TYPE_SYNCED),
            (&ConditionStatus::False, "cannot list VPCs: throttled")
        );
        assert_eq!(
            failed(Some(&bad), "cannot list VPCs: throttled", Some(1)),
            None
        );
        let never = failed(None, "boom", None).unwrap();
        assert_eq!(message(&never, TYPE_READY).0, &ConditionStatus::False);
    }

    #[test]
    fn resources_waiting_for_an_old_one_to_go_leave_the_query_not_ready() {
        let one = kept(1);
        let waiting = Outcome {
            waiting: 1,
            ..outcome(&one, 1, Selection::All)
        };
        let status = settled(None, Noun("VPC"), &waiting).unwrap();
        assert_eq!(status.condition(TYPE_READY).unwrap().reason, "Creating");
    }
}
