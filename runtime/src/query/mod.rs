//! Query resources: a query filters the
//! cloud's resources of one kind and owns one observe-only managed resource
//! per match, in its own namespace. The managed resources are ordinary
//! ones: the managed controllers observe them, report them `Ready`, and let
//! other resources reference them. The query controller only lists, creates
//! and releases managed-resource objects, and writes its own status; it
//! never changes anything in the cloud.
//!
//! A provider supplies, per query kind, the [`crossplane_types::Query`]
//! type (its spec, status and managed kind) and [`QueryKind`]: how to list
//! one page of the filter's matches, and which filters it cannot use. The
//! runtime does the rest:
//!
//! - it connects through the query's ProviderConfig as managed resources
//!   do (the provider's [`Connect`]), and lists every page on the query's
//!   poll, reusing the listing between polls;
//! - it keeps the matches [`crossplane_types::QuerySpec`] selects
//!   (`mostRecent`, `limit`) and names each one's managed resource the same
//!   way on every run (`<query>-<external name>`, cut and ended with a
//!   hash when that is no valid name or too long), so a restart converges on
//!   the same objects instead of duplicating them;
//! - it server-side applies the managed resource of each new match:
//!   `managementPolicies: ["Observe"]`, the external name, the query's
//!   ProviderConfig, the label [`crossplane_types::query::name_label`] and
//!   the query as controlling owner, so deleting the query deletes them
//!   (Kubernetes' garbage collector) and, observe-only, never their cloud
//!   resources;
//! - it releases the managed resource of a match that is gone or no longer
//!   matches, and writes the status only when it changes.
//!
//! The poll period is the provider's `--poll-interval`, or the query's
//! `crossplane.io/poll-interval` annotation, read as for managed
//! resources; a new
//! `crossplane.io/reconcile-requested-at` token lists at once.

mod controller;
mod plan;
pub(crate) mod reconcile;
mod state;
mod status;

use std::future::Future;

use crossplane_types::Query;

use crate::connect::Connect;
use crate::error::ExternalError;

pub(crate) use controller::run_query_controller;
pub use plan::Found;

/// One page of a filter's matches.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Page {
    /// The matches on this page.
    pub found: Vec<Found>,
    /// Where the next page starts; `None` on the last.
    pub next: Option<String>,
}

/// The cloud side of a query kind, for the provider whose [`Connect`] is
/// `C`, implemented on the query type (the type parameter is the
/// provider's own type, so the orphan rule allows a provider to implement
/// it on its API crate's types, as [`crate::CloudKind`]).
pub trait QueryKind<C: Connect>: Query {
    /// Why the query's filter cannot be used, for what neither the schema
    /// nor its CEL rules can say (two values for one tag key, a malformed
    /// range): the message for `Synced`. `None` when it can be used.
    fn unusable(&self) -> Option<String> {
        None
    }

    /// One page of the resources the filter matches, starting at `page`
    /// (`None`: the first). A page holds a bounded number of resources, so
    /// no call lists the whole account at once.
    fn list(
        &self,
        client: &C::Client,
        page: Option<String>,
    ) -> impl Future<Output = Result<Page, ExternalError>> + Send;
}
