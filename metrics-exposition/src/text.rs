//! OpenMetrics 1.0.0 to the Prometheus text format 0.0.4.
//!
//! The two formats share their sample syntax (names, label escaping,
//! values) but not their idea of a metric family's name, and the text
//! format knows neither `# UNIT`, `# EOF`, exemplars, nor OpenMetrics' info
//! and stateset types. What changes, and why:
//!
//! | OpenMetrics | text 0.0.4 | why |
//! | --- | --- | --- |
//! | counter `foo`, sample `foo_total` | counter `foo_total` | a text-format family is named as its samples; `# HELP foo` would leave `foo_total` with no help and no type |
//! | sample `foo_created` (counter, histogram, summary) | dropped | the text format has no created timestamps (Go's `promhttp` writes none there either); as a sample of the family it would be an unknown series |
//! | info `foo`, sample `foo_info` | gauge `foo_info` | the text format has no info type; Prometheus ingests an info as a gauge of 1 |
//! | stateset `foo` | gauge `foo` | likewise: one 0/1 gauge per state |
//! | unknown `foo` | untyped `foo` | the same meaning under the text format's name |
//! | gaugehistogram | [`Error::Unsupported`] | as a `histogram` its buckets would be read as counters and rated; `prometheus-client` 0.25 writes none |
//! | `# UNIT`, `# EOF` | dropped | not part of the text format |
//! | exemplar ` # {…} v [t]` after a value | dropped | the text format's parsers stop at it |
//! | timestamp in seconds (may be fractional) | integer milliseconds | each format's unit |
//! | `# HELP` escapes `\\`, `\n`, `\"` | escapes `\\`, `\n` | each format's escapes |
//!
//! Gauges, histograms and summaries keep their names and samples.

use std::collections::HashSet;
use std::fmt::Write as _;

use crate::Error;

/// Converts a complete OpenMetrics text exposition (ending in `# EOF`, as
/// `prometheus_client::encoding::text::encode` writes it) into the
/// Prometheus text format 0.0.4. See the module's table for what changes.
///
/// Strict where strictness keeps the output parseable: a line that is not
/// OpenMetrics, a missing `# EOF`, a family whose samples are not together,
/// or a type the text format cannot express is an error, never a body that
/// a scraper would reject or misread.
pub fn openmetrics_to_text(openmetrics: &str) -> Result<String, Error> {
    let mut converter = Converter::default();
    let mut eof = false;
    let mut count = 0;
    for (index, line) in openmetrics.lines().enumerate() {
        count = index + 1;
        let malformed = |reason: &'static str| Error::Malformed {
            line: index + 1,
            text: line.to_owned(),
            reason,
        };
        if eof {
            return Err(malformed("a line after # EOF"));
        }
        if line == "# EOF" {
            eof = true;
        } else if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, help) = rest.split_once(' ').unwrap_or((rest, ""));
            converter.metadata(name, Meta::Help(help), &malformed)?;
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest
                .split_once(' ')
                .ok_or_else(|| malformed("a TYPE line without a type"))?;
            let kind = Kind::parse(kind).ok_or_else(|| malformed("an unknown metric type"))?;
            converter.metadata(name, Meta::Type(kind), &malformed)?;
        } else if let Some(rest) = line.strip_prefix("# UNIT ") {
            let name = rest.split(' ').next().unwrap_or(rest);
            converter.metadata(name, Meta::Unit, &malformed)?;
        } else if line.starts_with('#') {
            return Err(malformed("a comment other than HELP, TYPE, UNIT or EOF"));
        } else {
            let sample = Sample::parse(line).map_err(malformed)?;
            converter.sample(&sample, &malformed)?;
        }
    }
    if !eof {
        return Err(Error::Malformed {
            line: count + 1,
            text: String::new(),
            reason: "no # EOF at the end",
        });
    }
    converter.finish()?;
    Ok(converter.out)
}

/// An OpenMetrics metric type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Counter,
    Gauge,
    Histogram,
    GaugeHistogram,
    StateSet,
    Info,
    Summary,
    Unknown,
}

impl Kind {
    fn parse(s: &str) -> Option<Kind> {
        Some(match s {
            "counter" => Kind::Counter,
            "gauge" => Kind::Gauge,
            "histogram" => Kind::Histogram,
            "gaugehistogram" => Kind::GaugeHistogram,
            "stateset" => Kind::StateSet,
            "info" => Kind::Info,
            "summary" => Kind::Summary,
            "unknown" => Kind::Unknown,
            _ => return None,
        })
    }

    /// The text format's name of a family `name` of this type, and its type.
    fn text_family(self, name: &str) -> (String, &'static str) {
        match self {
            Kind::Counter => (format!("{name}_total"), "counter"),
            Kind::Info => (format!("{name}_info"), "gauge"),
            Kind::Gauge | Kind::StateSet => (name.to_owned(), "gauge"),
            Kind::Histogram => (name.to_owned(), "histogram"),
            Kind::Summary => (name.to_owned(), "summary"),
            Kind::Unknown => (name.to_owned(), "untyped"),
            // Refused when its TYPE line is read.
            Kind::GaugeHistogram => (name.to_owned(), "untyped"),
        }
    }

    /// What becomes of a sample whose name is the family's name followed by
    /// `suffix`: kept, dropped, or `None` when it is not of this family.
    fn sample(self, suffix: &str) -> Option<Keep> {
        let keep = match (self, suffix) {
            (Kind::Counter, "_total")
            | (Kind::Gauge | Kind::StateSet | Kind::Unknown, "")
            | (Kind::Histogram, "_bucket" | "_count" | "_sum")
            | (Kind::Summary, "" | "_count" | "_sum")
            | (Kind::Info, "_info") => Keep::Yes,
            (Kind::Counter | Kind::Histogram | Kind::Summary, "_created") => Keep::No,
            _ => return None,
        };
        Some(keep)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Keep {
    Yes,
    No,
}

enum Meta<'a> {
    Help(&'a str),
    Type(Kind),
    Unit,
}

/// The family being read: its metadata until its first sample, when its
/// text-format header is written.
struct Family<'a> {
    name: &'a str,
    help: Option<&'a str>,
    kind: Option<Kind>,
    unit: bool,
    header_written: bool,
}

#[derive(Default)]
struct Converter<'a> {
    out: String,
    family: Option<Family<'a>>,
    /// The text-format names written, to refuse a second family of a name.
    written: HashSet<String>,
}

impl<'a> Converter<'a> {
    fn metadata(
        &mut self,
        name: &'a str,
        meta: Meta<'a>,
        malformed: &dyn Fn(&'static str) -> Error,
    ) -> Result<(), Error> {
        if !is_metric_name(name) {
            return Err(malformed("not a metric name"));
        }
        // Metadata of the family being read, before its samples; anything
        // else starts the next family.
        let same = self
            .family
            .as_ref()
            .is_some_and(|f| f.name == name && !f.header_written);
        if !same {
            self.finish()?;
            self.family = Some(Family {
                name,
                help: None,
                kind: None,
                unit: false,
                header_written: false,
            });
        }
        let Some(family) = self.family.as_mut() else {
            return Ok(());
        };
        match meta {
            Meta::Help(help) if family.help.is_none() => family.help = Some(help),
            Meta::Type(kind) if family.kind.is_none() => {
                if kind == Kind::GaugeHistogram {
                    return Err(Error::Unsupported {
                        family: name.to_owned(),
                        kind: "gaugehistogram".to_owned(),
                    });
                }
                family.kind = Some(kind);
            }
            Meta::Unit if !family.unit => family.unit = true,
            _ => return Err(malformed("a second HELP, TYPE or UNIT line for the family")),
        }
        Ok(())
    }

    fn sample(
        &mut self,
        sample: &Sample<'a>,
        malformed: &dyn Fn(&'static str) -> Error,
    ) -> Result<(), Error> {
        let of_family = self.family.as_ref().and_then(|f| {
            let suffix = sample.name.strip_prefix(f.name)?;
            f.kind.unwrap_or(Kind::Unknown).sample(suffix)
        });
        let keep = match of_family {
            Some(keep) => keep,
            None => {
                // A sample with no metadata of its own: OpenMetrics makes
                // it a family of type unknown, named as the sample.
                self.finish()?;
                self.family = Some(Family {
                    name: sample.name,
                    help: None,
                    kind: None,
                    unit: false,
                    header_written: false,
                });
                Keep::Yes
            }
        };
        self.header()?;
        if keep == Keep::No {
            return Ok(());
        }
        self.out.push_str(sample.name);
        self.out.push_str(sample.labels);
        self.out.push(' ');
        self.out.push_str(sample.value);
        if let Some(timestamp) = sample.timestamp {
            let millis = timestamp_millis(timestamp)
                .ok_or_else(|| malformed("a timestamp that is not a number of seconds"))?;
            // Writing to a String cannot fail.
            let _ = write!(self.out, " {millis}");
        }
        self.out.push('\n');
        Ok(())
    }

    /// Writes the current family's `# HELP` and `# TYPE`, once.
    fn header(&mut self) -> Result<(), Error> {
        let Some(family) = self.family.as_mut() else {
            return Ok(());
        };
        if family.header_written {
            return Ok(());
        }
        family.header_written = true;
        let (name, kind) = family
            .kind
            .unwrap_or(Kind::Unknown)
            .text_family(family.name);
        if let Some(help) = family.help {
            self.out.push_str("# HELP ");
            self.out.push_str(&name);
            self.out.push(' ');
            escape_help(&mut self.out, help);
            self.out.push('\n');
        }
        self.out.push_str("# TYPE ");
        self.out.push_str(&name);
        self.out.push(' ');
        self.out.push_str(kind);
        self.out.push('\n');
        if !self.written.insert(name.clone()) {
            return Err(Error::DuplicateFamily { name });
        }
        Ok(())
    }

    /// Ends the current family; one with no samples keeps its header.
    fn finish(&mut self) -> Result<(), Error> {
        self.header()?;
        self.family = None;
        Ok(())
    }
}

/// One sample line, its labels as written (`{...}` or empty: the two
/// formats escape label values alike).
struct Sample<'a> {
    name: &'a str,
    labels: &'a str,
    value: &'a str,
    timestamp: Option<&'a str>,
}

impl<'a> Sample<'a> {
    fn parse(line: &'a str) -> Result<Sample<'a>, &'static str> {
        let name_end = line.find(['{', ' ']).ok_or("a sample without a value")?;
        let name = &line[..name_end];
        if !is_metric_name(name) {
            return Err("not a metric name");
        }
        let rest = &line[name_end..];
        let (labels, rest) = if rest.starts_with('{') {
            let end = labels_end(rest).ok_or("labels without their closing brace")?;
            rest.split_at(end + 1)
        } else {
            ("", rest)
        };
        let rest = rest
            .strip_prefix(' ')
            .ok_or("no space before the sample's value")?;
        // An exemplar follows the value (and timestamp) after ` # `; a
        // value or a timestamp holds no `#`.
        let rest = rest.split_once(" # ").map_or(rest, |(sample, _)| sample);
        let mut fields = rest.split(' ');
        let value = fields.next().unwrap_or_default();
        if value.parse::<f64>().is_err() {
            return Err("a sample value that is not a number");
        }
        let timestamp = fields.next();
        if fields.next().is_some() {
            return Err("more than a value and a timestamp after the labels");
        }
        Ok(Sample {
            name,
            labels,
            value,
            timestamp,
        })
    }
}

/// The index of the `}` that closes the label set `labels` opens, outside
/// quoted values.
fn labels_end(labels: &str) -> Option<usize> {
    let mut quoted = false;
    let mut escaped = false;
    for (i, c) in labels.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            '}' if !quoted => return Some(i),
            _ => {}
        }
    }
    None
}

/// `[a-zA-Z_:][a-zA-Z0-9_:]*`, the names both formats share.
fn is_metric_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_' || b == b':')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b':')
}

/// An OpenMetrics timestamp (seconds, maybe fractional) in the text
/// format's integer milliseconds.
fn timestamp_millis(seconds: &str) -> Option<i64> {
    let millis = (seconds.parse::<f64>().ok()? * 1000.0).round();
    // i64's range, as f64: what `as` would otherwise saturate silently.
    if !millis.is_finite() || millis.abs() >= 9.2e18 {
        return None;
    }
    Some(millis as i64)
}

/// Writes an OpenMetrics `# HELP` text (escapes `\\`, `\n`, `\"`) with the
/// text format's escapes (`\\`, `\n`). A backslash OpenMetrics does not
/// define an escape for is taken literally (`prometheus-client` writes
/// help texts unescaped).
fn escape_help(out: &mut String, help: &str) {
    let mut chars = help.chars().peekable();
    while let Some(c) = chars.next() {
        let c = match (c, chars.peek()) {
            ('\\', Some('\\')) => {
                chars.next();
                '\\'
            }
            ('\\', Some('n')) => {
                chars.next();
                '\n'
            }
            ('\\', Some('"')) => {
                chars.next();
                '"'
            }
            _ => c,
        };
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn convert(openmetrics: &str) -> String {
        openmetrics_to_text(openmetrics).unwrap_or_else(|err| panic!("{err}\n{openmetrics}"))
    }

    #[track_caller]
    fn refused(openmetrics: &str) -> Error {
        match openmetrics_to_text(openmetrics) {
            Ok(text) => panic!("converted:\n{text}"),
            Err(err) => err,
        }
    }

    #[test]
    fn counters_take_their_samples_name_and_lose_created() {
        let text = convert(
            "# HELP jobs Jobs run.\n\
             # TYPE jobs counter\n\
             jobs_total{queue=\"a\"} 3\n\
             jobs_created{queue=\"a\"} 1.7e9\n\
             jobs_total{queue=\"b\"} 1\n\
             jobs_created{queue=\"b\"} 1.7e9\n\
             # EOF\n",
        );
        assert_eq!(
            text,
            "# HELP jobs_total Jobs run.\n\
             # TYPE jobs_total counter\n\
             jobs_total{queue=\"a\"} 3\n\
             jobs_total{queue=\"b\"} 1\n"
        );
    }

    #[test]
    fn histograms_and_summaries_keep_their_names_and_lose_created() {
        let text = convert(
            "# HELP t_seconds Time.\n\
             # TYPE t_seconds histogram\n\
             # UNIT t_seconds seconds\n\
             t_seconds_bucket{le=\"1.0\"} 1\n\
             t_seconds_bucket{le=\"+Inf\"} 2\n\
             t_seconds_count 2\n\
             t_seconds_sum 3.5\n\
             t_seconds_created 1.7e9\n\
             # TYPE rpc summary\n\
             rpc{quantile=\"0.5\"} 0.2\n\
             rpc_sum 4\n\
             rpc_count 9\n\
             rpc_created 1.7e9\n\
             # EOF\n",
        );
        assert_eq!(
            text,
            "# HELP t_seconds Time.\n\
             # TYPE t_seconds histogram\n\
             t_seconds_bucket{le=\"1.0\"} 1\n\
             t_seconds_bucket{le=\"+Inf\"} 2\n\
             t_seconds_count 2\n\
             t_seconds_sum 3.5\n\
             # TYPE rpc summary\n\
             rpc{quantile=\"0.5\"} 0.2\n\
             rpc_sum 4\n\
             rpc_count 9\n"
        );
    }

    #[test]
    fn info_stateset_and_unknown_become_gauges_and_untyped() {
        let text = convert(
            "# HELP build The build.\n\
             # TYPE build info\n\
             build_info{version=\"1\"} 1\n\
             # TYPE state stateset\n\
             state{state=\"a\"} 1\n\
             state{state=\"b\"} 0\n\
             # HELP other Something.\n\
             # TYPE other unknown\n\
             other 7\n\
             # EOF\n",
        );
        assert_eq!(
            text,
            "# HELP build_info The build.\n\
             # TYPE build_info gauge\n\
             build_info{version=\"1\"} 1\n\
             # TYPE state gauge\n\
             state{state=\"a\"} 1\n\
             state{state=\"b\"} 0\n\
             # HELP other Something.\n\
             # TYPE other untyped\n\
             other 7\n"
        );
    }

    #[test]
    fn a_sample_without_metadata_is_untyped() {
        assert_eq!(
            convert("bare{a=\"1\"} 2\n# EOF\n"),
            "# TYPE bare untyped\nbare{a=\"1\"} 2\n"
        );
        // Nor does a counter's metadata claim a gauge that follows it.
        assert_eq!(
            convert("# TYPE a counter\na_total 1\nb 2\n# EOF\n"),
            "# TYPE a_total counter\na_total 1\n# TYPE b untyped\nb 2\n"
        );
    }

    #[test]
    fn exemplars_are_stripped_and_timestamps_become_milliseconds() {
        let text = convert(
            "# TYPE a counter\n\
             a_total 1 # {trace_id=\"x # y\"} 1.0 1520879607.789\n\
             a_total{l=\"}\"} 2 1520879607.789 # {trace_id=\"z\"} 1\n\
             # TYPE h histogram\n\
             h_bucket{le=\"+Inf\"} 1 # {trace_id=\"q\"} 0.5\n\
             h_count 1\n\
             h_sum 0.5\n\
             # EOF\n",
        );
        assert_eq!(
            text,
            "# TYPE a_total counter\n\
             a_total 1\n\
             a_total{l=\"}\"} 2 1520879607789\n\
             # TYPE h histogram\n\
             h_bucket{le=\"+Inf\"} 1\n\
             h_count 1\n\
             h_sum 0.5\n"
        );
    }

    #[test]
    fn label_values_pass_through_with_their_escapes() {
        let line = "g{path=\"a \\\"b\\\" {c} # d\\\\e\\nf\"} NaN";
        let text = convert(&format!("# TYPE g gauge\n{line}\n# EOF\n"));
        assert_eq!(text, format!("# TYPE g gauge\n{line}\n"));
    }

    #[test]
    fn help_is_reescaped_for_the_text_format() {
        let text =
            convert("# HELP a Say \\\"hi\\\"\\nthen C:\\path\\\\x.\n# TYPE a gauge\na 1\n# EOF\n");
        assert_eq!(
            text,
            "# HELP a Say \"hi\"\\nthen C:\\\\path\\\\x.\n# TYPE a gauge\na 1\n"
        );
        // An empty help.
        assert_eq!(
            convert("# HELP a \n# TYPE a gauge\na 1\n# EOF\n"),
            "# HELP a \n# TYPE a gauge\na 1\n"
        );
    }

    #[test]
    fn a_family_without_samples_keeps_its_header() {
        assert_eq!(
            convert("# HELP c Calls.\n# TYPE c counter\n# HELP g G.\n# TYPE g gauge\ng 1\n# EOF\n"),
            "# HELP c_total Calls.\n# TYPE c_total counter\n# HELP g G.\n# TYPE g gauge\ng 1\n"
        );
    }

    #[test]
    fn gauge_histograms_are_refused() {
        let err = refused(
            "# TYPE q gaugehistogram\nq_bucket{le=\"+Inf\"} 1\nq_gcount 1\nq_gsum 1\n# EOF\n",
        );
        assert!(
            matches!(&err, Error::Unsupported { family, kind } if family == "q" && kind == "gaugehistogram"),
            "{err:?}"
        );
    }

    #[test]
    fn two_families_of_one_text_name_are_refused() {
        let err = refused("# TYPE a counter\na_total 1\n# TYPE a_total gauge\na_total 2\n# EOF\n");
        assert!(
            matches!(&err, Error::DuplicateFamily { name } if name == "a_total"),
            "{err:?}"
        );
        // A family's samples apart from each other.
        let err = refused("# TYPE a gauge\na 1\n# TYPE b gauge\nb 1\na 2\n# EOF\n");
        assert!(
            matches!(&err, Error::DuplicateFamily { name } if name == "a"),
            "{err:?}"
        );
    }

    #[test]
    fn what_is_not_openmetrics_is_refused_with_its_line() {
        for (input, line, reason) in [
            ("a 1\n", 2, "no # EOF at the end"),
            ("# EOF\na 1\n", 2, "a line after # EOF"),
            ("# TYPE a gauge\na\n# EOF\n", 2, "a sample without a value"),
            (
                "# TYPE a gauge\na one\n# EOF\n",
                2,
                "a sample value that is not a number",
            ),
            (
                "# TYPE a gauge\na{b=\"1\" 1\n# EOF\n",
                2,
                "labels without their closing brace",
            ),
            (
                "# TYPE a gauge\na 1 2 3\n# EOF\n",
                2,
                "more than a value and a timestamp after the labels",
            ),
            (
                "# TYPE a gauge\na 1 soon\n# EOF\n",
                2,
                "a timestamp that is not a number of seconds",
            ),
            (
                "# TYPE a gauge\na{b=\"1\"}1\n# EOF\n",
                2,
                "no space before the sample's value",
            ),
            ("# TYPE a thing\n# EOF\n", 1, "an unknown metric type"),
            ("# TYPE a\n# EOF\n", 1, "a TYPE line without a type"),
            ("# TYPE 1a gauge\n# EOF\n", 1, "not a metric name"),
            (
                "# TYPE a gauge\n# TYPE a counter\n# EOF\n",
                2,
                "a second HELP, TYPE or UNIT line for the family",
            ),
            (
                "# a comment\n# EOF\n",
                1,
                "a comment other than HELP, TYPE, UNIT or EOF",
            ),
            ("\n# EOF\n", 1, "a sample without a value"),
        ] {
            match refused(input) {
                Error::Malformed {
                    line: at,
                    reason: why,
                    ..
                } => assert_eq!((at, why), (line, reason), "{input:?}"),
                err => panic!("{input:?}: {err:?}"),
            }
        }
    }

    #[test]
    fn timestamps_round_to_the_millisecond() {
        assert_eq!(timestamp_millis("1"), Some(1000));
        assert_eq!(timestamp_millis("1.0005"), Some(1001));
        assert_eq!(timestamp_millis("-1.5"), Some(-1500));
        assert_eq!(timestamp_millis("1e300"), None);
        assert_eq!(timestamp_millis("NaN"), None);
        assert_eq!(timestamp_millis(""), None);
    }
}
