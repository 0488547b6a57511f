//! Reading an `Accept` header (RFC 9110, section 12.5.1) just far enough to
//! choose between OpenMetrics and the text format.

use crate::Format;

/// A q-value in thousandths (RFC 9110 allows three decimals): 0 ..= 1000.
type Weight = u16;

/// One media range of an `Accept` list: `type/subtype`, lower-cased, its
/// `version` parameter and its weight.
struct Range<'a> {
    media: String,
    version: Option<&'a str>,
    q: Weight,
}

pub(crate) fn negotiate(accept: &str) -> Format {
    // The most specific range that matches each format decides its weight
    // (RFC 9110: "more specific ranges override less specific ones"); the
    // rank orders them.
    let mut openmetrics: Option<(u8, Weight)> = None;
    let mut text: Option<(u8, Weight)> = None;
    for range in split_quoted(accept, ',').filter_map(parse_range) {
        if let Some(rank) = openmetrics_rank(&range) {
            better(&mut openmetrics, rank, range.q);
        }
        if let Some(rank) = text_rank(&range) {
            better(&mut text, rank, range.q);
        }
    }
    match openmetrics {
        Some((_, q)) if q > 0 && q >= text.map_or(0, |(_, q)| q) => Format::OpenMetrics,
        _ => Format::Text,
    }
}

/// Keeps the weight of the highest rank seen, the highest weight among
/// equal ranks (a list that names the same range twice).
fn better(best: &mut Option<(u8, Weight)>, rank: u8, q: Weight) {
    match best {
        Some((r, w)) if *r > rank || (*r == rank && *w >= q) => {}
        _ => *best = Some((rank, q)),
    }
}

/// How specifically `range` names OpenMetrics 1.0.0, if it does: the
/// version we serve, then no version, then 0.0.1 (whose syntax is the same
/// for what `prometheus-client` writes, and which Prometheus 2.5 to 2.48
/// asked for, some of them first). Wildcards do not count: OpenMetrics goes
/// only to a client that names it.
fn openmetrics_rank(range: &Range) -> Option<u8> {
    if range.media != "application/openmetrics-text" {
        return None;
    }
    match range.version {
        Some("1.0.0") => Some(3),
        None => Some(2),
        Some("0.0.1") => Some(1),
        Some(_) => None,
    }
}

/// How specifically `range` names the text format 0.0.4, if it does.
fn text_rank(range: &Range) -> Option<u8> {
    match (range.media.as_str(), range.version) {
        ("text/plain", Some("0.0.4")) => Some(4),
        ("text/plain", None) => Some(3),
        ("text/*", _) => Some(2),
        ("*/*", _) => Some(1),
        _ => None,
    }
}

/// `type/subtype;param=value;...`, or `None` for what is not a media range
/// or has a malformed q-value (RFC 9110 gives it no meaning: skipping it
/// is safer than guessing its weight).
fn parse_range(element: &str) -> Option<Range<'_>> {
    let mut parts = split_quoted(element, ';');
    let media = parts.next()?.trim();
    let (kind, subtype) = media.split_once('/')?;
    if !is_token(kind) || !is_token(subtype) {
        return None;
    }
    let mut range = Range {
        media: media.to_ascii_lowercase(),
        version: None,
        q: 1000,
    };
    for param in parts {
        let Some((name, value)) = param.split_once('=') else {
            continue;
        };
        let name = name.trim();
        let value = value.trim();
        let value = value
            .strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .unwrap_or(value);
        if name.eq_ignore_ascii_case("q") {
            range.q = parse_weight(value)?;
        } else if name.eq_ignore_ascii_case("version") {
            range.version = Some(value);
        }
    }
    Some(range)
}

/// A qvalue: `0`, `0.`, up to three decimals, or `1` with only zeros after.
fn parse_weight(value: &str) -> Option<Weight> {
    let (whole, fraction) = value.split_once('.').unwrap_or((value, ""));
    if fraction.len() > 3 || !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let thousandths: Weight = format!("{fraction:0<3}").parse().ok()?;
    match whole {
        "0" => Some(thousandths),
        "1" if thousandths == 0 => Some(1000),
        _ => None,
    }
}

/// RFC 9110's `token`: what a type or subtype may be (`*` included).
fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// `s` split at each `separator` outside a quoted string (a parameter's
/// value may be quoted and hold commas or semicolons).
fn split_quoted(s: &str, separator: char) -> impl Iterator<Item = &str> {
    let mut start = 0;
    let mut quoted = false;
    let mut escaped = false;
    let mut cuts = Vec::new();
    for (i, c) in s.char_indices() {
        if escaped {
            escaped = false;
        } else if quoted && c == '\\' {
            escaped = true;
        } else if c == '"' {
            quoted = !quoted;
        } else if c == separator && !quoted {
            cuts.push(&s[start..i]);
            start = i + c.len_utf8();
        }
    }
    cuts.push(&s[start..]);
    cuts.into_iter()
}

#[cfg(test)]
mod tests {
    use super::*;
    use Format::{OpenMetrics, Text};

    #[track_caller]
    fn check(accept: &str, expected: Format) {
        assert_eq!(negotiate(accept), expected, "Accept: {accept}");
    }

    #[test]
    fn no_header_or_no_preference_is_text() {
        check("", Text);
        check("   ", Text);
        check(",,", Text);
        check("*/*", Text);
        check("*/*;q=1", Text);
        check("application/*", Text);
        // curl, and a browser.
        check(
            "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8",
            Text,
        );
        check("application/json", Text);
    }

    #[test]
    fn text_plain_is_text() {
        check("text/plain", Text);
        check("text/plain;version=0.0.4", Text);
        check("text/plain; version=0.0.4; charset=utf-8", Text);
        check("text/*", Text);
        // Prometheus with `scrape_protocols: [PrometheusText0.0.4]`.
        check("text/plain;version=0.0.4;q=0.6,*/*;q=0.5", Text);
    }

    #[test]
    fn naming_openmetrics_is_openmetrics() {
        check("application/openmetrics-text", OpenMetrics);
        check("application/openmetrics-text; version=1.0.0", OpenMetrics);
        check("application/openmetrics-text;version=0.0.1", OpenMetrics);
        check("Application/OpenMetrics-Text;Version=1.0.0", OpenMetrics);
        check(
            "application/openmetrics-text;version=\"1.0.0\"",
            OpenMetrics,
        );
        check(
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
            OpenMetrics,
        );
        check("application/openmetrics-text;q=0.001", OpenMetrics);
    }

    #[test]
    fn an_unknown_openmetrics_version_is_not_openmetrics() {
        check("application/openmetrics-text;version=2.0.0", Text);
        check(
            "application/openmetrics-text;version=2.0.0,text/plain",
            Text,
        );
    }

    #[test]
    fn q_zero_is_not_acceptable() {
        check("application/openmetrics-text;q=0", Text);
        check("application/openmetrics-text;q=0.000", Text);
        check("application/openmetrics-text;version=1.0.0;q=0,*/*", Text);
        // The most specific range decides: 1.0.0 refused, even though a
        // version-less range is welcome.
        check(
            "application/openmetrics-text;version=1.0.0;q=0,application/openmetrics-text",
            Text,
        );
        // Text refused too: text is still the answer of last resort.
        check("application/openmetrics-text;q=0,text/plain;q=0", Text);
    }

    #[test]
    fn the_higher_q_wins_and_a_tie_is_openmetrics() {
        check("text/plain;q=0.9,application/openmetrics-text;q=0.8", Text);
        check(
            "text/plain;q=0.8,application/openmetrics-text;q=0.9",
            OpenMetrics,
        );
        check("text/plain,application/openmetrics-text", OpenMetrics);
        check("application/openmetrics-text,text/plain", OpenMetrics);
        check(
            "application/openmetrics-text;q=0.5,text/plain;q=0.5",
            OpenMetrics,
        );
        // A wildcard counts for text against OpenMetrics.
        check("application/openmetrics-text;q=0.4,*/*;q=0.5", Text);
        check("application/openmetrics-text;q=0.5,*/*", Text);
        // But a more specific text range overrides the wildcard.
        check(
            "application/openmetrics-text;q=0.4,text/plain;q=0.1,*/*",
            OpenMetrics,
        );
    }

    #[test]
    fn prometheus_scrapes_get_openmetrics() {
        // 2.5 to 2.48 (what Debian 12's 2.42 sends).
        check(
            "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1",
            OpenMetrics,
        );
        // The same with native histograms: protobuf first, which we do not
        // serve; OpenMetrics next.
        check(
            "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited,application/openmetrics-text;version=1.0.0;q=0.8,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1",
            OpenMetrics,
        );
        // 2.49 to 2.55 (`scrape_protocols`, default order).
        check(
            "application/openmetrics-text;version=1.0.0;q=0.5,application/openmetrics-text;version=0.0.1;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2",
            OpenMetrics,
        );
        // 3.x.
        check(
            "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6,application/openmetrics-text;version=0.0.1;q=0.5,text/plain;version=1.0.0;escaping=allow-utf-8;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2",
            OpenMetrics,
        );
        // 2.5 before 1.0.0 existed.
        check(
            "application/openmetrics-text; version=0.0.1,text/plain;version=0.0.4;q=0.5,*/*;q=0.1",
            OpenMetrics,
        );
        // Prometheus without OpenMetrics (before 2.5).
        check("text/plain;version=0.0.4;q=1,*/*;q=0.1", Text);
        // 3.x told to prefer the text format.
        check(
            "text/plain;version=0.0.4;q=0.6,application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.5,*/*;q=0.4",
            Text,
        );
    }

    #[test]
    fn malformed_ranges_are_skipped() {
        check("application/openmetrics-text;q=2", Text);
        check("application/openmetrics-text;q=1.5", Text);
        check("application/openmetrics-text;q=0.0001", Text);
        check("application/openmetrics-text;q=abc", Text);
        check("application/openmetrics-text;q=", Text);
        check("openmetrics", Text);
        check("application/", Text);
        check("application/openmetrics-text;q=abc,text/plain;q=0.1", Text);
        // A parameter without `=` is ignored, not fatal.
        check("application/openmetrics-text;foo", OpenMetrics);
        // A quoted comma does not split the list.
        check(
            "application/openmetrics-text;x=\"a,text/plain\";q=0.9,text/plain;q=0.8",
            OpenMetrics,
        );
    }

    #[test]
    fn q_values_parse_as_rfc_9110_says() {
        assert_eq!(parse_weight("0"), Some(0));
        assert_eq!(parse_weight("0."), Some(0));
        assert_eq!(parse_weight("0.5"), Some(500));
        assert_eq!(parse_weight("0.05"), Some(50));
        assert_eq!(parse_weight("0.125"), Some(125));
        assert_eq!(parse_weight("1"), Some(1000));
        assert_eq!(parse_weight("1.000"), Some(1000));
        assert_eq!(parse_weight("1.001"), None);
        assert_eq!(parse_weight("-0"), None);
        assert_eq!(parse_weight(".5"), None);
        assert_eq!(parse_weight("0.+5"), None);
    }

    /// Property-ish: for every pair of weights, with the ranges in either
    /// order and with or without a wildcard below both, OpenMetrics is
    /// chosen exactly when its weight is above 0 and at least text's.
    #[test]
    fn the_choice_follows_the_weights_whatever_the_order() {
        let weights = ["0", "0.001", "0.1", "0.4", "0.5", "0.75", "0.999", "1"];
        for om in weights {
            for text in weights {
                let expected = match (parse_weight(om), parse_weight(text)) {
                    (Some(o), Some(t)) if o > 0 && o >= t => OpenMetrics,
                    _ => Text,
                };
                let om_range = format!("application/openmetrics-text;version=1.0.0;q={om}");
                let text_range = format!("text/plain;version=0.0.4;q={text}");
                check(&format!("{om_range},{text_range}"), expected);
                check(&format!("{text_range},{om_range}"), expected);
                check(&format!("{text_range}, */*;q=0.001, {om_range}"), expected);
                check(&format!("{om_range} , {text_range} ,*/*;q=0"), expected);
            }
        }
    }
}
