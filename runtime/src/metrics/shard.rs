//! The `provider_shard_*` families: what replicas sharing the work
//! ([`crate::shard`]) did. The objects a replica owns are its share of
//! crossplane-runtime's `crossplane_managed_resource_exists`, which counts
//! what its watches hold.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use super::KindLabels;

/// The labels of `provider_shard_moves_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct MoveLabels {
    /// The kind, as [`crate::kind_label`] names it.
    pub kind: String,
    /// `assign` (a new object labelled), `drain` (a live owner asked to
    /// hand over), `undrain` (that request withdrawn), `release` (this
    /// replica handed an object over) or `takeover` (a revoked member's
    /// object relabelled).
    pub how: String,
}

/// The labels of `provider_shard_fenced_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct FencedLabels {
    /// The kind, as [`crate::kind_label`] names it.
    pub kind: String,
    /// `not_joined`, `expired` (the Lease not renewed within the renew
    /// deadline), `revoked` or `not_owner`.
    pub reason: String,
}

/// The sharding families.
#[derive(Clone)]
pub struct ShardMetrics {
    /// `provider_shard_members`: live members as this replica sees them.
    pub members: Gauge,
    /// `provider_shard_moves_total`: assignments and handovers, by kind and how.
    pub moves: Family<MoveLabels, Counter>,
    /// `provider_shard_unowned_seconds`: from the moment an object's last
    /// owner let go (or it was created) to its new owner's first
    /// reconcile, by kind.
    pub unowned: Family<KindLabels, Histogram>,
    /// `provider_shard_fenced_total`: cloud mutations refused, by kind and reason.
    pub fenced: Family<FencedLabels, Counter>,
}

impl ShardMetrics {
    pub(super) fn register(registry: &mut Registry) -> Self {
        let metrics = Self {
            members: Gauge::default(),
            moves: Family::default(),
            unowned: Family::new_with_constructor(super::seconds_histogram as fn() -> Histogram),
            fenced: Family::default(),
        };
        registry.register(
            "shard_members",
            "Live shard members as this replica sees them",
            metrics.members.clone(),
        );
        registry.register(
            "shard_moves",
            "Objects assigned or handed over between replicas, by kind and how",
            metrics.moves.clone(),
        );
        registry.register(
            "shard_unowned_seconds",
            "From an object's last owner letting go (or its creation) to its new owner's first reconcile",
            metrics.unowned.clone(),
        );
        registry.register(
            "shard_fenced",
            "Cloud mutations refused because this replica did not surely own the object",
            metrics.fenced.clone(),
        );
        metrics
    }

    /// Counts one cloud mutation of `kind` refused by the fence.
    pub(crate) fn fenced(&self, kind: &str, fenced: &crate::shard::Fenced) {
        use crate::shard::Fenced;
        let reason = match fenced {
            Fenced::NotJoined => "not_joined",
            Fenced::Expired { .. } => "expired",
            Fenced::Revoked => "revoked",
            Fenced::NotOwner => "not_owner",
        };
        self.fenced
            .get_or_create(&FencedLabels {
                kind: kind.to_owned(),
                reason: reason.to_owned(),
            })
            .inc();
    }

    /// Counts one move of an object of `kind`.
    pub(crate) fn moved(&self, kind: &str, how: &str) {
        self.moves
            .get_or_create(&MoveLabels {
                kind: kind.to_owned(),
                how: how.to_owned(),
            })
            .inc();
    }
}
