//! A watch cache of one resource's labels, in every namespace, for
//! [`super::Cluster::labels_watched`] and [`super::Cluster::count_watched`],
//! which read labels and nothing else.
//!
//! Its one user at scale is the ProviderConfigUsages: one per managed
//! resource, all of them in every process (a resource asks whether its own
//! usage exists, a ProviderConfig counts its usages). A kube-runtime
//! `Store<DynamicObject>` trimmed to names and labels still held about
//! 2.2 KB per object (an `ObjectMeta` of empty fields, and in each key the
//! five strings of the `ApiResource`): 63 MiB at 30,000 resources, in each
//! replica that shares them. Here an object is its name and a shared
//! pointer to its labels, which are interned (a usage's labels are its
//! ProviderConfig's name and kind, the same for thousands of objects),
//! under its namespace: about 100 bytes each. The watch asks for metadata
//! alone, so the API server does not send (nor the process decode) specs.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use futures::StreamExt;
use kube::Api;
use kube::api::{DynamicObject, PartialObjectMeta};
use kube::runtime::{WatchStreamExt, watcher};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::{Listed, selector_matches};
use crate::watch::whole_list;

type Labels = BTreeMap<String, String>;

/// The labels of one resource's objects, kept current by a watch.
#[derive(Clone)]
pub(crate) struct LabelCache {
    entries: Arc<RwLock<Entries>>,
    listed: Listed,
}

impl LabelCache {
    /// Starts watching `api`'s objects; the task ends when aborted.
    pub(crate) fn start(api: Api<PartialObjectMeta<DynamicObject>>) -> (Self, JoinHandle<()>) {
        let entries = Arc::new(RwLock::new(Entries::default()));
        let (listed, listed_rx) = watch::channel(false);
        let writer = entries.clone();
        // From the API server's watch cache, in one piece, as the
        // controllers list.
        let config = whole_list();
        let task = tokio::spawn(async move {
            let mut events = watcher(api, config).default_backoff().boxed();
            while let Some(event) = events.next().await {
                // Errors are retried with backoff by the stream itself; the
                // cache keeps what it last knew meanwhile.
                let Ok(event) = event else { continue };
                if writer.write().expect("label cache poisoned").apply(event) {
                    listed.send_replace(true);
                }
            }
        });
        let cache = Self {
            entries,
            listed: Listed::on(listed_rx),
        };
        (cache, task)
    }

    /// Whether the cache has listed once, waiting up to `limit` for it.
    pub(crate) async fn listed_within(&self, limit: Duration) -> bool {
        self.listed.within(limit).await
    }

    /// The labels of the object `name` (in `namespace`, for a namespaced
    /// resource); `None` when the cache holds no such object.
    pub(crate) fn labels(&self, namespace: Option<&str>, name: &str) -> Option<Labels> {
        let entries = self.entries.read().expect("label cache poisoned");
        entries.labels(namespace, name).cloned()
    }

    /// How many objects (in `namespace`, or in all) match `selector`.
    pub(crate) fn count(&self, namespace: Option<&str>, selector: &str) -> usize {
        let entries = self.entries.read().expect("label cache poisoned");
        entries.count(namespace, selector)
    }
}

/// Namespace (empty for a cluster-scoped object), then name, to labels.
type Objects = HashMap<Arc<str>, HashMap<Box<str>, Arc<Labels>>>;

/// What the cache holds, and what a new listing has found so far.
#[derive(Default)]
struct Entries {
    objects: Objects,
    /// Set from a listing's start to its end, then swapped in whole, so a
    /// relist (after a watch expired) never shows a half-listed cache.
    listing: Option<Objects>,
    /// Every distinct label set held, so objects with the same labels
    /// share one copy.
    interned: HashSet<Arc<Labels>>,
}

impl Entries {
    /// Applies one watch event; true when a listing has just ended.
    fn apply(&mut self, event: watcher::Event<PartialObjectMeta<DynamicObject>>) -> bool {
        match event {
            watcher::Event::Init => self.listing = Some(Objects::default()),
            watcher::Event::InitApply(object) => {
                let entry = self.entry(&object);
                let listing = self.listing.get_or_insert_with(Objects::default);
                insert(listing, entry);
            }
            watcher::Event::InitDone => {
                if let Some(listed) = self.listing.take() {
                    self.objects = listed;
                }
                self.interned.retain(|labels| Arc::strong_count(labels) > 1);
                return true;
            }
            watcher::Event::Apply(object) => {
                let entry = self.entry(&object);
                if let Some(replaced) = insert(&mut self.objects, entry) {
                    self.release(replaced);
                }
            }
            watcher::Event::Delete(object) => {
                let namespace = object.metadata.namespace.as_deref().unwrap_or_default();
                let name = object.metadata.name.as_deref().unwrap_or_default();
                if let Some(names) = self.objects.get_mut(namespace) {
                    let removed = names.remove(name);
                    if names.is_empty() {
                        self.objects.remove(namespace);
                    }
                    if let Some(removed) = removed {
                        self.release(removed);
                    }
                }
            }
        }
        false
    }

    /// What the cache keeps of `object`: its namespace, its name and its
    /// labels, interned.
    fn entry(&mut self, object: &PartialObjectMeta<DynamicObject>) -> Entry {
        // Cloned only when new: most objects share a label set held already.
        let none = Labels::new();
        let labels = object.metadata.labels.as_ref().unwrap_or(&none);
        let labels = match self.interned.get(labels) {
            Some(shared) => shared.clone(),
            None => {
                let shared = Arc::new(labels.clone());
                self.interned.insert(shared.clone());
                shared
            }
        };
        Entry {
            namespace: object.metadata.namespace.clone().unwrap_or_default(),
            name: object.metadata.name.clone().unwrap_or_default().into(),
            labels,
        }
    }

    /// Forgets an interned label set that no object holds any more (the
    /// set itself and `labels` are its last two holders).
    fn release(&mut self, labels: Arc<Labels>) {
        if Arc::strong_count(&labels) == 2 {
            self.interned.remove(&*labels);
        }
    }

    fn labels(&self, namespace: Option<&str>, name: &str) -> Option<&Labels> {
        let names = self.objects.get(namespace.unwrap_or_default())?;
        names.get(name).map(|labels| &**labels)
    }

    fn count(&self, namespace: Option<&str>, selector: &str) -> usize {
        let matching = |names: &HashMap<Box<str>, Arc<Labels>>| {
            names
                .values()
                .filter(|labels| selector_matches(labels, selector))
                .count()
        };
        match namespace {
            Some(namespace) => self.objects.get(namespace).map_or(0, matching),
            None => self.objects.values().map(matching).sum(),
        }
    }
}

/// One object as the cache keeps it.
struct Entry {
    namespace: String,
    name: Box<str>,
    labels: Arc<Labels>,
}

/// Puts `entry` in `objects`; the labels it replaced, if any.
fn insert(objects: &mut Objects, entry: Entry) -> Option<Arc<Labels>> {
    let names = match objects.get_mut(entry.namespace.as_str()) {
        Some(names) => names,
        None => objects.entry(entry.namespace.into()).or_default(),
    };
    names.insert(entry.name, entry.labels)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::api::ObjectMeta;
    use watcher::Event;

    fn object(
        namespace: Option<&str>,
        name: &str,
        labels: &[(&str, &str)],
    ) -> PartialObjectMeta<DynamicObject> {
        PartialObjectMeta {
            types: None,
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                namespace: namespace.map(str::to_owned),
                labels: Some(
                    labels
                        .iter()
                        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                        .collect(),
                ),
                ..ObjectMeta::default()
            },
            _phantom: std::marker::PhantomData,
        }
    }

    fn listed(objects: Vec<PartialObjectMeta<DynamicObject>>) -> Entries {
        let mut entries = Entries::default();
        entries.apply(Event::Init);
        for object in objects {
            assert!(!entries.apply(Event::InitApply(object)));
        }
        assert!(entries.apply(Event::InitDone));
        entries
    }

    #[test]
    fn labels_are_found_by_namespace_and_name_and_counted_by_selector() {
        let entries = listed(vec![
            object(Some("a"), "u1", &[("config", "default")]),
            object(Some("a"), "u2", &[("config", "other")]),
            object(Some("b"), "u1", &[("config", "default")]),
            object(None, "c1", &[("config", "default")]),
        ]);
        let labels = entries.labels(Some("a"), "u2").unwrap();
        assert_eq!(labels.get("config").map(String::as_str), Some("other"));
        assert!(entries.labels(Some("a"), "c1").is_none());
        assert!(entries.labels(None, "c1").is_some());
        assert!(entries.labels(Some("c"), "u1").is_none());
        assert_eq!(entries.count(None, "config=default"), 3);
        assert_eq!(entries.count(Some("a"), "config=default"), 1);
        assert_eq!(entries.count(Some("a"), ""), 2);
        assert_eq!(entries.count(Some("nowhere"), ""), 0);
    }

    #[test]
    fn objects_with_the_same_labels_share_one_copy_until_the_last_goes() {
        let mut entries = listed(vec![
            object(Some("a"), "u1", &[("config", "default")]),
            object(Some("a"), "u2", &[("config", "default")]),
        ]);
        assert_eq!(entries.interned.len(), 1);
        entries.apply(Event::Apply(object(Some("a"), "u1", &[("config", "x")])));
        assert_eq!(entries.interned.len(), 2);
        entries.apply(Event::Delete(object(Some("a"), "u2", &[])));
        assert_eq!(entries.interned.len(), 1, "nobody holds config=default");
        assert_eq!(entries.count(None, "config=default"), 0);
        entries.apply(Event::Delete(object(Some("a"), "u1", &[])));
        assert!(entries.interned.is_empty());
        assert!(entries.objects.is_empty(), "an emptied namespace goes too");
        // Deleting what is not there changes nothing.
        entries.apply(Event::Delete(object(Some("a"), "u1", &[])));
        assert!(entries.objects.is_empty());
    }

    #[test]
    fn a_relist_shows_the_old_contents_until_it_ends_then_only_what_it_found() {
        let mut entries = listed(vec![
            object(Some("a"), "gone", &[("config", "default")]),
            object(Some("a"), "kept", &[("config", "default")]),
        ]);
        entries.apply(Event::Init);
        entries.apply(Event::InitApply(object(
            Some("a"),
            "kept",
            &[("config", "x")],
        )));
        assert!(
            entries.labels(Some("a"), "gone").is_some(),
            "still the old list"
        );
        assert_eq!(entries.count(None, "config=default"), 2);
        assert!(entries.apply(Event::InitDone));
        assert!(entries.labels(Some("a"), "gone").is_none());
        assert_eq!(entries.count(None, "config=x"), 1);
        assert_eq!(entries.interned.len(), 1, "config=default is released");
    }
}
