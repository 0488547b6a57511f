//! The `provider_conversion_*` families: what the conversion webhook
//! ([`crate::conversion`]) answered.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// The labels of `provider_conversion_reviews_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReviewLabels {
    /// The version asked for (`desiredAPIVersion`), or `unknown` when the
    /// review could not be read.
    pub desired: String,
    /// `success` or `failure`.
    pub result: String,
}

/// The conversion families.
#[derive(Clone)]
pub struct ConversionMetrics {
    /// `provider_conversion_reviews_total`: reviews answered, by desired
    /// version and result.
    pub reviews: Family<ReviewLabels, Counter>,
    /// `provider_conversion_objects_total`: objects converted.
    pub objects: Counter,
    /// `provider_conversion_seconds`: time to answer one review, from its
    /// body read to its answer encoded.
    pub duration: Histogram,
    /// `provider_conversion_migrated_objects_total`: objects rewritten at
    /// their kind's newest version by storage migration.
    pub migrated: Counter,
}

impl ConversionMetrics {
    pub(super) fn register(registry: &mut Registry) -> Self {
        let metrics = Self {
            reviews: Family::default(),
            objects: Counter::default(),
            // 50 µs .. ~0.8 s: a review is a few objects' JSON.
            duration: Histogram::new(exponential_buckets(0.000_05, 2.0, 15)),
            migrated: Counter::default(),
        };
        registry.register(
            "conversion_reviews",
            "ConversionReviews answered by the conversion webhook, by desired version and result",
            metrics.reviews.clone(),
        );
        registry.register(
            "conversion_objects",
            "Objects converted by the conversion webhook",
            metrics.objects.clone(),
        );
        registry.register(
            "conversion_seconds",
            "Time to answer one ConversionReview",
            metrics.duration.clone(),
        );
        registry.register(
            "conversion_migrated_objects",
            "Objects rewritten at their kind's newest version by storage migration",
            metrics.migrated.clone(),
        );
        metrics
    }
}
