//! What a managed resource asks of its own reconciles through
//! crossplane-runtime v2's two annotations, decided apart from I/O:
//! [`poll_interval`] (`crossplane.io/poll-interval`, its own poll period)
//! and [`pending_request`] (`crossplane.io/reconcile-requested-at`, a
//! reconcile asked for now). [`crate::reconcile`] reads the annotations
//! and carries the answers out.
//!
//! An invalid poll interval (not a Go duration, zero or negative) is a
//! user error no retry can fix, so it is reported, not defaulted:
//! crossplane-runtime's `GetPollInterval` silently falls back to
//! `--poll-interval`, which leaves a typo (`5mins`) unnoticed for ever.
//! The reconcile then stops before it connects to the cloud, as for
//! management policies it cannot honour: `Synced=False` (reason
//! `ReconcileError`) with [`InvalidPollInterval`]'s message, no cloud call,
//! no backoff, and no further reconcile until the object changes. Acting on
//! the cloud while ignoring one of the user's instructions would make the
//! resource's behaviour depend on a value the user believes is in force.
//! Two things go on regardless: a pause (reported first, as the user
//! stopped everything) and a deletion (the poll period concerns a live
//! resource only, and a typo must not strand a finalizer).

use std::time::Duration;

use crossplane_types::well_known::POLL_INTERVAL_ANNOTATION;

/// A `crossplane.io/poll-interval` value that cannot be used, with why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid {POLL_INTERVAL_ANNOTATION} annotation {value:?}: {reason}; \
     use a positive Go duration such as \"30s\", \"5m\" or \"1h30m\""
)]
pub struct InvalidPollInterval {
    pub value: String,
    pub reason: &'static str,
}

/// When a settled resource is polled next: `interval` moved at random by
/// up to `jitter` either side (crossplane-runtime's `WithPollJitterHook`),
/// so resources created together spread their polls out instead of
/// calling the cloud in lockstep for ever. `jitter` unset is 5 % of
/// `interval`, as the upjet providers set it. `unit` is a random number in
/// `[0, 1)`, passed in so the bounds can be tested; the result is never
/// below `floor` (`--min-poll-interval`).
pub fn jittered(
    interval: Duration,
    jitter: Option<Duration>,
    floor: Duration,
    unit: f64,
) -> Duration {
    let jitter = jitter.unwrap_or_else(|| interval / 20).as_secs_f64();
    let offset = (unit.clamp(0.0, 1.0) * 2.0 - 1.0) * jitter;
    let seconds = (interval.as_secs_f64() + offset).max(floor.as_secs_f64());
    Duration::from_secs_f64(seconds)
}

/// The poll period of a resource whose `crossplane.io/poll-interval`
/// annotation is `annotation` (`None` or empty: not set), in a provider
/// polling every `default` and never more often than every `minimum`.
///
/// Unset, it is `default` (the `--poll-interval` flag, left as the
/// operator chose it); set, it is the annotation's duration clamped up to
/// `minimum`, so one resource cannot make the provider hammer the cloud.
pub fn poll_interval(
    annotation: Option<&str>,
    default: Duration,
    minimum: Duration,
) -> Result<Duration, InvalidPollInterval> {
    let Some(value) = annotation.filter(|v| !v.is_empty()) else {
        return Ok(default);
    };
    let invalid = |reason| InvalidPollInterval {
        value: value.to_owned(),
        reason,
    };
    match parse_go_duration(value).map_err(invalid)? {
        (true, d) if !d.is_zero() => Err(invalid("it is negative")),
        (_, d) if d.is_zero() => Err(invalid("it is zero")),
        (_, d) => Ok(d.max(minimum)),
    }
}

/// Parses Go's `time.ParseDuration` syntax: an optional sign, then one or
/// more decimal numbers (with an optional fraction) each with a unit out
/// of `ns`, `us` (or `µs`, `μs`), `ms`, `s`, `m`, `h`, as in `1h30m`,
/// `1.5s` or `300ms`; `0` alone is zero. Returns whether it is negative,
/// and its magnitude.
pub fn parse_go_duration(text: &str) -> Result<(bool, Duration), &'static str> {
    const NOT_A_DURATION: &str = "it is not a duration";
    let (negative, mut rest) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if rest == "0" {
        return Ok((negative, Duration::ZERO));
    }
    if rest.is_empty() {
        return Err(NOT_A_DURATION);
    }
    let mut total: u128 = 0;
    while !rest.is_empty() {
        let digits = |s: &str| s.bytes().take_while(u8::is_ascii_digit).count();
        let whole_len = digits(rest);
        let (whole, after) = rest.split_at(whole_len);
        let (fraction, after) = match after.strip_prefix('.') {
            Some(after) => after.split_at(digits(after)),
            None => ("", after),
        };
        if whole.is_empty() && fraction.is_empty() {
            return Err(NOT_A_DURATION);
        }
        let unit_len = after
            .char_indices()
            .find(|(_, c)| c.is_ascii_digit() || *c == '.')
            .map_or(after.len(), |(i, _)| i);
        let (unit, after) = after.split_at(unit_len);
        let nanos: u128 = match unit {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            "" => return Err("it has a number without a unit"),
            _ => return Err("it has an unknown unit"),
        };
        let too_large = "it is too large";
        let whole: u128 = if whole.is_empty() {
            0
        } else {
            whole.parse().map_err(|_| too_large)?
        };
        // Digits past nanosecond precision (19 for hours) change nothing.
        let fraction = &fraction[..fraction.len().min(19)];
        let scale = 10u128.pow(fraction.len() as u32);
        let fraction: u128 = if fraction.is_empty() {
            0
        } else {
            fraction.parse().map_err(|_| too_large)?
        };
        total = whole
            .checked_mul(nanos)
            .and_then(|w| w.checked_add(fraction * nanos / scale))
            .and_then(|part| total.checked_add(part))
            .filter(|t| *t <= i64::MAX as u128)
            .ok_or(too_large)?;
        rest = after;
    }
    let nanos = u64::try_from(total).map_err(|_| "it is too large")?;
    Ok((negative, Duration::from_nanos(nanos)))
}

/// The `crossplane.io/reconcile-requested-at` token `requested` if no
/// reconcile has handled it yet, given the object's
/// `status.lastHandledReconcileAt` `handled`: such a resource is due a
/// reconcile now (the limiter's work lane, not the poll lane), and the
/// reconcile that handles it records the token. An empty or removed token
/// asks for nothing.
pub fn pending_request<'a>(requested: Option<&'a str>, handled: Option<&str>) -> Option<&'a str> {
    requested.filter(|token| !token.is_empty() && Some(*token) != handled)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEFAULT: Duration = Duration::from_secs(60);
    const MIN: Duration = Duration::from_secs(1);

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    #[test]
    fn jitter_moves_a_poll_either_side_within_its_bound() {
        let minute = secs(60);
        // Unset: 5 % of the interval, so 57 s .. 63 s.
        assert_eq!(jittered(minute, None, MIN, 0.0), secs(57));
        assert_eq!(jittered(minute, None, MIN, 0.5), minute);
        assert_eq!(jittered(minute, None, MIN, 1.0), secs(63));
        // Set: that many seconds either side.
        assert_eq!(jittered(minute, Some(secs(10)), MIN, 0.0), secs(50));
        assert_eq!(jittered(minute, Some(secs(10)), MIN, 1.0), secs(70));
        assert_eq!(jittered(minute, Some(Duration::ZERO), MIN, 0.9), minute);
        // Never below the floor, however wide the jitter.
        assert_eq!(jittered(secs(2), Some(secs(10)), MIN, 0.0), MIN);
        // Many draws stay within the bounds and use both sides.
        let draws: Vec<Duration> = (0..1_000)
            .map(|_| jittered(minute, Some(secs(6)), MIN, rand::random()))
            .collect();
        assert!(draws.iter().all(|d| (secs(54)..=secs(66)).contains(d)));
        assert!(draws.iter().any(|d| *d < minute) && draws.iter().any(|d| *d > minute));
    }

    #[test]
    fn an_unset_annotation_keeps_the_providers_poll_interval() {
        assert_eq!(poll_interval(None, DEFAULT, MIN), Ok(DEFAULT));
        assert_eq!(poll_interval(Some(""), DEFAULT, MIN), Ok(DEFAULT));
        // The minimum bounds the annotation, not the operator's own flag.
        let fast = Duration::from_millis(250);
        assert_eq!(poll_interval(None, fast, MIN), Ok(fast));
    }

    #[test]
    fn a_go_duration_replaces_the_poll_interval() {
        assert_eq!(poll_interval(Some("30s"), DEFAULT, MIN), Ok(secs(30)));
        assert_eq!(poll_interval(Some("5m"), DEFAULT, MIN), Ok(secs(300)));
        assert_eq!(poll_interval(Some("1h30m"), DEFAULT, MIN), Ok(secs(5_400)));
        assert_eq!(
            poll_interval(Some("1.5s"), DEFAULT, MIN),
            Ok(Duration::from_millis(1_500))
        );
        assert_eq!(poll_interval(Some("+2h"), DEFAULT, MIN), Ok(secs(7_200)));
    }

    #[test]
    fn a_short_interval_is_clamped_up_to_the_minimum() {
        assert_eq!(poll_interval(Some("100ms"), DEFAULT, MIN), Ok(MIN));
        assert_eq!(poll_interval(Some("10s"), DEFAULT, secs(30)), Ok(secs(30)));
        assert_eq!(poll_interval(Some("1s"), DEFAULT, MIN), Ok(MIN));
    }

    #[test]
    fn unparseable_zero_and_negative_values_are_refused_with_a_clear_message() {
        for (value, reason) in [
            ("soon", "it is not a duration"),
            ("5mins", "it has an unknown unit"),
            ("1d", "it has an unknown unit"),
            ("30", "it has a number without a unit"),
            ("1h 30m", "it has an unknown unit"),
            ("-", "it is not a duration"),
            (".s", "it is not a duration"),
            ("0", "it is zero"),
            ("0s", "it is zero"),
            ("-5m", "it is negative"),
            ("9999999999h", "it is too large"),
        ] {
            let error = poll_interval(Some(value), DEFAULT, MIN).unwrap_err();
            assert_eq!(error.reason, reason, "{value}");
            let message = error.to_string();
            assert!(
                message.contains("crossplane.io/poll-interval")
                    && message.contains(&format!("{value:?}"))
                    && message.contains("\"30s\""),
                "{message}"
            );
        }
    }

    #[test]
    fn go_durations_parse_like_go() {
        let parse = |s| parse_go_duration(s).unwrap();
        assert_eq!(parse("0"), (false, Duration::ZERO));
        assert_eq!(parse("-0"), (true, Duration::ZERO));
        assert_eq!(parse("300ms"), (false, Duration::from_millis(300)));
        assert_eq!(parse("2h45m"), (false, secs(9_900)));
        assert_eq!(parse("1.5h"), (false, secs(5_400)));
        assert_eq!(parse(".5s"), (false, Duration::from_millis(500)));
        assert_eq!(parse("1µs"), (false, Duration::from_micros(1)));
        assert_eq!(parse("7ns"), (false, Duration::from_nanos(7)));
        assert_eq!(parse("-1m1s"), (true, secs(61)));
        assert!(parse_go_duration("").is_err());
        assert!(parse_go_duration("h").is_err());
    }

    #[test]
    fn a_token_is_pending_until_a_reconcile_has_handled_it() {
        assert_eq!(pending_request(None, None), None);
        assert_eq!(pending_request(Some(""), None), None, "empty asks nothing");
        assert_eq!(pending_request(Some("t1"), None), Some("t1"));
        assert_eq!(pending_request(Some("t1"), Some("t1")), None, "handled");
        assert_eq!(pending_request(Some("t2"), Some("t1")), Some("t2"));
        assert_eq!(pending_request(None, Some("t1")), None, "removed");
    }
}
