//! Conversion between a kind's API versions, as the API server asks for it:
//! a `ConversionReview` in, the objects in the desired version out.
//!
//! A provider declares each multi-version kind's steps once
//! ([`crossplane_types::conversion::KindVersions`], next to its types) and
//! hands them to [`Conversions`]; [`Conversions::answer`] turns a review's
//! body into its answer, and [`Webhook`] (feature `rustls-tls`) serves it on
//! `/convert` over TLS, as Crossplane's package manager wires a provider's
//! CRDs to it. An answer never fails the process: a review that cannot be
//! read, an object of a kind or version not declared, a kept copy that is
//! not valid, each gets a `Failure` result whose message says which object
//! and why, and the API server returns that message to its client.

#[cfg(feature = "rustls-tls")]
mod serve;
pub mod storage;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::time::Instant;

use crossplane_types::conversion::{ConversionError, KindVersions};
use kube::core::Status;
use kube::core::conversion::{ConversionRequest, ConversionResponse, ConversionReview};
use serde_json::Value;

use crate::metrics::Metrics;
use crate::metrics::conversion::ReviewLabels;

#[cfg(feature = "rustls-tls")]
pub use serve::{CONVERT_PATH, ServeError, Webhook, WebhookSettings};

/// The multi-version kinds of a provider, by group and kind.
#[derive(Clone)]
pub struct Conversions {
    kinds: HashMap<(&'static str, &'static str), &'static KindVersions>,
    metrics: Metrics,
}

/// Why one object of a review was not converted.
#[derive(Debug, thiserror::Error)]
enum ObjectError {
    #[error("object {index} has no kind")]
    NoKind { index: usize },
    #[error("object {index} ({name}) is a {kind} of {group}, which has no conversion here")]
    Undeclared {
        index: usize,
        name: String,
        group: String,
        kind: String,
    },
    #[error("object {index} ({name}): {source}")]
    Conversion {
        index: usize,
        name: String,
        #[source]
        source: ConversionError,
    },
}

impl Conversions {
    /// The conversions of `kinds`, recording into `metrics`.
    pub fn new(kinds: impl IntoIterator<Item = &'static KindVersions>, metrics: &Metrics) -> Self {
        Self {
            kinds: kinds.into_iter().map(|k| ((k.group, k.kind), k)).collect(),
            metrics: metrics.clone(),
        }
    }

    /// Whether any kind is declared (a provider without one need not serve).
    pub fn is_empty(&self) -> bool {
        self.kinds.is_empty()
    }

    /// The answer (a `ConversionReview` with a response) to the review
    /// `body`; never an error: a problem is the answer's `Failure`.
    pub fn answer(&self, body: &[u8]) -> ConversionReview {
        let started = Instant::now();
        let (desired, response) = match serde_json::from_slice::<ConversionReview>(body)
            .map_err(|e| e.to_string())
            .and_then(|review| ConversionRequest::from_review(review).map_err(|e| e.to_string()))
        {
            Err(reason) => (
                "unknown".to_owned(),
                ConversionResponse::invalid(Status::failure(
                    &format!("cannot read the ConversionReview: {reason}"),
                    "BadRequest",
                )),
            ),
            Ok(mut request) => {
                let desired = request.desired_api_version.clone();
                let objects = std::mem::take(&mut request.objects);
                let response = ConversionResponse::for_request(request);
                let response = match self.convert_all(objects, &desired) {
                    Ok(converted) => {
                        self.metrics
                            .conversion
                            .objects
                            .inc_by(converted.len() as u64);
                        response.success(converted)
                    }
                    Err(error) => {
                        tracing::warn!(%error, desired, "conversion refused");
                        response.failure(Status::failure(&error.to_string(), "Invalid"))
                    }
                };
                (desired, response)
            }
        };
        let result = if response.result.is_success() {
            "success"
        } else {
            "failure"
        };
        self.metrics
            .conversion
            .reviews
            .get_or_create(&ReviewLabels {
                desired,
                result: result.to_owned(),
            })
            .inc();
        self.metrics
            .conversion
            .duration
            .observe(started.elapsed().as_secs_f64());
        response.into_review()
    }

    /// Every object in `desired` (`group/version`), in order, or the first
    /// object's problem.
    fn convert_all(&self, objects: Vec<Value>, desired: &str) -> Result<Vec<Value>, ObjectError> {
        let (_, version) = desired.rsplit_once('/').unwrap_or(("", desired));
        objects
            .into_iter()
            .enumerate()
            .map(|(index, object)| {
                let name = name_of(&object);
                let kind = object
                    .get("kind")
                    .and_then(Value::as_str)
                    .ok_or(ObjectError::NoKind { index })?;
                let group = object
                    .get("apiVersion")
                    .and_then(Value::as_str)
                    .and_then(|v| v.rsplit_once('/'))
                    .map_or("", |(group, _)| group);
                let versions =
                    self.kinds
                        .get(&(group, kind))
                        .ok_or_else(|| ObjectError::Undeclared {
                            index,
                            name: name.clone(),
                            group: group.to_owned(),
                            kind: kind.to_owned(),
                        })?;
                versions
                    .convert(object, version)
                    .map_err(|source| ObjectError::Conversion {
                        index,
                        name,
                        source,
                    })
            })
            .collect()
    }
}

/// `namespace/name` of an object, or what it has of them, for messages.
fn name_of(object: &Value) -> String {
    let metadata = object.get("metadata");
    let field = |key| {
        metadata
            .and_then(|m| m.get(key))
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    match (field("namespace"), field("name")) {
        ("", "") => "unnamed".to_owned(),
        ("", name) => name.to_owned(),
        (namespace, name) => format!("{namespace}/{name}"),
    }
}
