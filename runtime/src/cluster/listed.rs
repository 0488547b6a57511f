//! Whether a watch cache has listed once, awaitable by many reconciles at
//! the same time.
//!
//! kube-runtime's `Store::wait_until_ready` keeps a single waker: its
//! readiness is a oneshot receiver, and each poll of a waiting call
//! replaces the waker of the one polled before. Of several reconciles that
//! wait at once for a new cache, only the last to poll is woken when the
//! cache lists; the others sleep until their own timeout. Measured on the
//! e2e control plane: the first reconciles of a starting replica, all
//! reading the ProviderConfig through a cache that did not exist yet,
//! waited the full 10 s of [`super::CACHE_SYNC`] for a cache that had
//! listed in milliseconds, holding their places in flight meanwhile.
//!
//! [`Listed`] waits on the store once, in a shared future that wakes
//! every caller waiting on it.

use std::future::Future;
use std::time::Duration;

use futures::FutureExt;
use futures::future::{BoxFuture, Shared};
use kube::Resource;
use kube::runtime::reflector::Store;

/// Whether a [`Store`] has listed once; cheap to clone, and every clone
/// waits on the same future.
#[derive(Clone)]
pub(crate) struct Listed {
    done: Shared<BoxFuture<'static, bool>>,
}

impl Listed {
    /// The first listing of `store`.
    pub(crate) fn of<K>(store: &Store<K>) -> Self
    where
        K: Resource + Clone + Send + Sync + 'static,
        K::DynamicType: Eq + std::hash::Hash + Clone + Send + Sync,
    {
        let store = store.clone();
        Self::when(async move { store.wait_until_ready().await.is_ok() })
    }

    /// The first listing of a cache that says it through `listed` turning
    /// true (false if its watch is dropped before).
    pub(crate) fn on(mut listed: tokio::sync::watch::Receiver<bool>) -> Self {
        Self::when(async move { listed.wait_for(|listed| *listed).await.is_ok() })
    }

    fn when(done: impl Future<Output = bool> + Send + 'static) -> Self {
        Self {
            done: done.boxed().shared(),
        }
    }

    /// Whether the store has listed, waiting up to `limit` for it; false
    /// too if its watch stopped before listing.
    pub(crate) async fn within(&self, limit: Duration) -> bool {
        matches!(
            tokio::time::timeout(limit, self.done.clone()).await,
            Ok(true)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::runtime::reflector::store::Writer;
    use kube::runtime::watcher;
    use std::time::Instant;

    /// Eight callers wait at once for a store that lists 100 ms later:
    /// every one of them returns then, not at its 10 s limit (the store's
    /// own `wait_until_ready` woke only the last to wait).
    #[tokio::test]
    async fn every_caller_waiting_at_once_is_woken_when_the_store_lists() {
        let mut writer = Writer::<ConfigMap>::default();
        let listed = Listed::of(&writer.as_reader());
        let started = Instant::now();
        let waiting: Vec<_> = (0..8)
            .map(|_| {
                let listed = listed.clone();
                tokio::spawn(async move {
                    let done = listed.within(Duration::from_secs(10)).await;
                    (done, started.elapsed())
                })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(100)).await;
        writer.apply_watcher_event(&watcher::Event::Init);
        writer.apply_watcher_event(&watcher::Event::InitDone);
        for caller in waiting {
            let (done, took) = caller.await.expect("the caller ran");
            assert!(done, "the store listed");
            assert!(
                took < Duration::from_secs(2),
                "woken when the store listed, not at its limit: {took:?}"
            );
        }
        // Once listed, a new caller does not wait at all.
        assert!(listed.within(Duration::ZERO).await);
    }

    #[tokio::test]
    async fn a_store_that_never_lists_is_not_listed_within_the_limit() {
        let writer = Writer::<ConfigMap>::default();
        let listed = Listed::of(&writer.as_reader());
        assert!(!listed.within(Duration::from_millis(50)).await);
    }

    #[tokio::test]
    async fn a_store_whose_watch_stopped_before_listing_is_not_listed() {
        let writer = Writer::<ConfigMap>::default();
        let listed = Listed::of(&writer.as_reader());
        drop(writer);
        assert!(!listed.within(Duration::from_secs(10)).await);
    }
}
