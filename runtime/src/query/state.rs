//! What the reconciles of one query kind's controller share and remember
//! between runs: the controller starts them with it, and each reconcile
//! reads and updates it, so it lives apart from both.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crossplane_types::query::name_label;
use crossplane_types::{CommonSpec, Managed, ManagementAction};
use kube::runtime::reflector::Store;
use kube::{Resource, ResourceExt};

use super::QueryKind;
use super::plan::{Found, Owned};
use crate::cluster::Listed;
use crate::connect::Connect;
use crate::context::{CATCH_UP_LIMIT, Context};

/// What a listing is made for: the query's generation, its poll period and
/// its `crossplane.io/reconcile-requested-at` token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Asked {
    pub generation: Option<i64>,
    pub poll: Duration,
    pub requested: Option<String>,
}

/// What the reconciles of one query kind's controller share.
pub struct QueryController<Q: QueryKind<C>, C: Connect> {
    pub(crate) ctx: Arc<Context>,
    pub(crate) connect: Arc<C>,
    /// The managed resources of every query of the kind (those carrying its
    /// label), from a watch: a reconcile compares them with the matches
    /// without reading them from the API server.
    owned: Store<Q::Managed>,
    /// When `owned` has listed once: what the first reconciles wait for.
    owned_listed: Listed,
    /// Turned true by the first reconcile: the watch filling `owned`
    /// starts then ([`super::controller`] says why not sooner).
    owned_wanted: tokio::sync::watch::Sender<bool>,
    /// Per query (by uid): its last listing and what it applied since.
    memory: Mutex<HashMap<String, Memory>>,
}

impl<Q: QueryKind<C>, C: Connect> QueryController<Q, C> {
    /// The shared state of a controller whose owned managed resources are
    /// in `owned`, with nothing remembered yet.
    /// `owned_wanted` is what the watch that fills `owned` waits for.
    pub(crate) fn new(
        ctx: Arc<Context>,
        connect: Arc<C>,
        owned: Store<Q::Managed>,
        owned_wanted: tokio::sync::watch::Sender<bool>,
    ) -> Self {
        Self {
            ctx,
            connect,
            owned_listed: Listed::of(&owned),
            owned_wanted,
            owned,
            memory: Mutex::new(HashMap::new()),
        }
    }
}

/// What a query's reconciles remember.
#[derive(Clone, Debug)]
pub(crate) struct Memory {
    /// The generation, poll period and `crossplane.io/reconcile-requested-at`
    /// token the listing was made for: an edited filter or period, or a new
    /// token, is listed again at once.
    generation: Option<i64>,
    poll: Duration,
    requested: Option<String>,
    listed_at: Instant,
    found: Vec<Found>,
    /// Names applied whose watch events have not arrived yet, and when.
    applied: BTreeMap<String, Instant>,
}

impl<Q: QueryKind<C>, C: Connect> QueryController<Q, C> {
    /// The last listing of the query `uid`, if made for `asked` less than
    /// its poll period ago, with when it was made.
    pub(crate) fn listing(&self, uid: &str, asked: &Asked) -> Option<(Vec<Found>, Instant)> {
        let memory = self.memory.lock().expect("query memory lock poisoned");
        memory
            .get(uid)
            .filter(|m| m.generation == asked.generation && m.poll == asked.poll)
            .filter(|m| m.requested == asked.requested)
            .filter(|m| m.listed_at.elapsed() < asked.poll)
            .map(|m| (m.found.clone(), m.listed_at))
    }

    /// Records a new listing of the query `uid`, made for `asked`.
    pub(crate) fn listed(&self, uid: &str, asked: Asked, found: &[Found]) {
        let mut memory = self.memory.lock().expect("query memory lock poisoned");
        let applied = memory.remove(uid).map(|m| m.applied).unwrap_or_default();
        memory.insert(
            uid.to_owned(),
            Memory {
                generation: asked.generation,
                poll: asked.poll,
                requested: asked.requested,
                listed_at: Instant::now(),
                found: found.to_vec(),
                applied,
            },
        );
    }

    /// The names applied for `uid` in the last [`CATCH_UP_LIMIT`] that the
    /// watch has not delivered yet; names it has (in `owned`) are
    /// forgotten.
    pub(crate) fn unseen(&self, uid: &str, owned: &[Owned]) -> BTreeSet<String> {
        let mut memory = self.memory.lock().expect("query memory lock poisoned");
        let Some(m) = memory.get_mut(uid) else {
            return BTreeSet::new();
        };
        m.applied.retain(|name, at| {
            at.elapsed() < CATCH_UP_LIMIT && !owned.iter().any(|o| &o.name == name)
        });
        m.applied.keys().cloned().collect()
    }

    /// Records that `name` was applied for `uid` just now.
    pub(crate) fn applied(&self, uid: &str, name: &str) {
        let mut memory = self.memory.lock().expect("query memory lock poisoned");
        if let Some(m) = memory.get_mut(uid) {
            m.applied.insert(name.to_owned(), Instant::now());
        }
    }

    /// Forgets a query that is being deleted.
    pub(crate) fn forget(&self, uid: &str) {
        self.memory
            .lock()
            .expect("query memory lock poisoned")
            .remove(uid);
    }

    /// Whether the watch of the managed resources has listed them once,
    /// waiting up to [`CATCH_UP_LIMIT`]: before that, every owned resource
    /// would look missing, and a restarted provider would apply them all
    /// again (harmless, being the same objects, but a write each). The
    /// first call starts that watch.
    pub(crate) async fn owned_listed(&self) -> bool {
        self.want_owned();
        self.owned_listed.within(CATCH_UP_LIMIT).await
    }

    /// Starts the watch of the managed resources the kind's queries own,
    /// if it has not started.
    pub(crate) fn want_owned(&self) {
        self.owned_wanted
            .send_if_modified(|wanted| !std::mem::replace(wanted, true));
    }

    /// The managed resources `query` owns: in its namespace, carrying its
    /// label, controlled by this query (an older query of the same name,
    /// deleted, may have left some for the garbage collector).
    pub(crate) fn owned_by(&self, query: &Q) -> Vec<Owned> {
        let label = name_label::<Q>();
        let (namespace, name, uid) = (query.namespace(), query.name_any(), query.uid());
        self.owned
            .state()
            .iter()
            .filter(|mr| mr.namespace() == namespace)
            .filter(|mr| mr.labels().get(&label) == Some(&name))
            .filter(|mr| {
                mr.owner_references()
                    .iter()
                    .any(|o| o.controller == Some(true) && Some(&o.uid) == uid.as_ref())
            })
            .map(|mr| Owned {
                name: mr.name_any(),
                external_name: mr
                    .annotations()
                    .get(crossplane_types::well_known::EXTERNAL_NAME_ANNOTATION)
                    .cloned(),
                observe_only: mr.resource_spec().management_policies()
                    == [ManagementAction::Observe],
                resource_version: mr.resource_version(),
                deleting: mr.meta().deletion_timestamp.is_some(),
            })
            .collect()
    }
}
