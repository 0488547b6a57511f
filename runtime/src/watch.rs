//! How the runtime's watches list what they watch, and when they list
//! again.

use std::collections::VecDeque;
use std::fmt::Debug;
use std::time::Duration;

use futures::stream::BoxStream;
use futures::{Stream, StreamExt};
use kube::api::{ListParams, WatchEvent, WatchParams};
use kube::runtime::watcher::{self, Event};
use kube::{Api, Resource};
use serde::de::DeserializeOwned;
use tokio::time::Instant;

/// A watch that lists from the API server's watch cache, in one piece.
///
/// `any_semantic` lists at resourceVersion 0, which the API server answers
/// from its watch cache, whole (it ignores the page size). While that
/// cache is not ready (it lists from etcd again after falling behind, as
/// it does on a busy server) the API server answers from etcd instead,
/// page by page when a page size is set. A list of tens of thousands of
/// objects then outlives etcd's compaction (410 Expired on a continue
/// token) and kube-runtime starts again from the first page: the leader's
/// watch of unassigned objects met that at 30,000 VPCs, and every VPC not
/// yet labelled waited for the next try. client-go answers an expired
/// continue with one whole list; a list without a page size is that list
/// from the start, and the watch-cache answer is the same as before.
/// The cost: a list from etcd arrives as one answer, held at once.
pub(crate) fn whole_list() -> watcher::Config {
    let mut config = watcher::Config::default().any_semantic();
    config.page_size = None;
    config
}

/// How long each watch of a [`relisting`] watch asks to stay open:
/// kube-runtime's and client-go's 290 s.
const WATCH_SECONDS: u32 = 290;

/// A [`relisting`] watch that ended sooner than this after it opened waits
/// out the rest before it lists again: a server that closes every watch at
/// once is not listed in a loop.
const LEAST_WATCH: Duration = Duration::from_secs(1);

/// A [`relisting`] watch that lasted less than this is short: each short
/// watch in a row doubles [`LEAST_WATCH`], up to [`LONGEST_WAIT`], and a
/// watch that lasts longer sets it back.
const SHORT_WATCH: Duration = Duration::from_secs(30);

/// The longest a [`relisting`] watch waits after it opened before it lists
/// again.
///
/// An overloaded API server closes watches within a second of opening
/// them (a watcher that falls behind the kind's events is dropped). At
/// 100,000 VPCs with three replicas, the four narrow watches of VPCs then
/// listed about 45 times a minute between them, each list a pass over the
/// whole watch cache that took the struggling server 0.5 to 1 s: most of
/// a core spent finding nothing. Backing off to one list every 16 s per
/// watch bounds that, at the price of seeing these narrow selectors'
/// events up to 16 s late while the server is in that state.
const LONGEST_WAIT: Duration = Duration::from_secs(16);

/// How long a [`relisting`] watch waits after it opened before listing
/// again, after `short` short watches in a row (the one that just ended
/// included).
fn least_watch(short: u32) -> Duration {
    let doublings = short.saturating_sub(1).min(16);
    LEAST_WATCH.saturating_mul(1 << doublings).min(LONGEST_WAIT)
}

/// A watch of the objects `selector` matches, for a selector that matches
/// few of a busy kind's objects (the query controllers' watch of the
/// managed resources they own, the assigner's of unassigned objects): it
/// lists again from the watch cache whenever its watch ends, where
/// kube-runtime's [`watcher::watcher`] watches again from the last
/// resourceVersion it saw. It yields the same events, so the same
/// adapters (`reflect`, `default_backoff`, `applied_objects`) apply.
///
/// Why: a watch from a resourceVersion makes the API server replay every
/// event of the kind since that version through the selector before it
/// sends anything new. A watch whose selector matched nothing for a while
/// holds an old version, so its replay grows with every write to the
/// kind. On a busy API server (kube-apiserver 1.20) every watch of the
/// kind was closed about every 0.2 s, and such a watch was back at once,
/// from the same version, with a longer replay. Measured at 30,000 VPCs
/// with three replicas: the query controllers' watch of the VPCs they own
/// (none in that benchmark) reopened 669 times in 5 minutes, every time
/// from the version of its first list, and the API server replayed 9.4
/// million events to VPC watches (188,000 at the same point with this).
/// A list from the watch cache for such a selector is a pass over the
/// cache that sends only the few objects matched, and the next watch
/// starts from the present.
pub(crate) fn relisting<K>(
    api: Api<K>,
    selector: &str,
) -> impl Stream<Item = watcher::Result<Event<K>>> + Send + use<K>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + 'static,
{
    let asks = Asks {
        api,
        list: ListParams::default().labels(selector).match_any(),
        watch: WatchParams::default()
            .labels(selector)
            .timeout(WATCH_SECONDS),
    };
    futures::stream::unfold(
        (Step::List, asks, 0),
        |(step, asks, mut short)| async move {
            let (event, next) = step.next(&asks, &mut short).await;
            Some((event, (next, asks, short)))
        },
    )
    .filter_map(futures::future::ready)
}

/// The stream `start` makes, made only once `wanted` turns true: a watch
/// nothing reads yet is not opened (the query controllers' watch of the
/// managed resources their queries own, [`crate::query`]). Ends without
/// starting if `wanted`'s sender is dropped first.
pub(crate) fn once_wanted<S>(
    mut wanted: tokio::sync::watch::Receiver<bool>,
    start: impl FnOnce() -> S + Send + 'static,
) -> impl Stream<Item = S::Item> + Send + 'static
where
    S: Stream<Item: Send> + Send + 'static,
{
    let mut start = Some(start);
    futures::stream::once(async move { wanted.wait_for(|wanted| *wanted).await.is_ok() })
        .filter(|wanted| futures::future::ready(*wanted))
        .flat_map(move |_| match start.take() {
            Some(start) => start().left_stream(),
            None => futures::stream::empty().right_stream(),
        })
}

/// What a [`relisting`] watch asks the API server, the same every time.
struct Asks<K> {
    api: Api<K>,
    list: ListParams,
    watch: WatchParams,
}

/// Where a [`relisting`] watch is.
enum Step<K> {
    /// About to list.
    List,
    /// Handing out what the list found, then watching from `version`.
    Listed {
        objects: VecDeque<K>,
        version: String,
    },
    /// Passing on what the watch opened at `opened` sends.
    Watching {
        events: BoxStream<'static, kube::Result<WatchEvent<K>>>,
        opened: Instant,
    },
}

impl<K> Step<K>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + 'static,
{
    /// One step: what to yield (if anything), and the step after it;
    /// `short` counts the short watches in a row.
    async fn next(
        self,
        asks: &Asks<K>,
        short: &mut u32,
    ) -> (Option<watcher::Result<Event<K>>>, Step<K>) {
        match self {
            Step::List => match asks.api.list(&asks.list).await {
                Ok(listed) => match listed.metadata.resource_version.filter(|v| !v.is_empty()) {
                    Some(version) => (
                        Some(Ok(Event::Init)),
                        Step::Listed {
                            objects: listed.items.into(),
                            version,
                        },
                    ),
                    None => (Some(Err(watcher::Error::NoResourceVersion)), Step::List),
                },
                Err(error) => (
                    Some(Err(watcher::Error::InitialListFailed(error))),
                    Step::List,
                ),
            },
            Step::Listed {
                mut objects,
                version,
            } => match objects.pop_front() {
                Some(object) => (
                    Some(Ok(Event::InitApply(object))),
                    Step::Listed { objects, version },
                ),
                None => match asks.api.watch(&asks.watch, &version).await {
                    Ok(events) => (
                        Some(Ok(Event::InitDone)),
                        Step::Watching {
                            events: events.boxed(),
                            opened: Instant::now(),
                        },
                    ),
                    // No `InitDone`: a reflector keeps the store it had,
                    // and the next list starts over.
                    Err(error) => (
                        Some(Err(watcher::Error::WatchStartFailed(error))),
                        Step::List,
                    ),
                },
            },
            Step::Watching { mut events, opened } => match events.next().await {
                Some(Ok(WatchEvent::Added(object) | WatchEvent::Modified(object))) => (
                    Some(Ok(Event::Apply(object))),
                    Step::Watching { events, opened },
                ),
                Some(Ok(WatchEvent::Deleted(object))) => (
                    Some(Ok(Event::Delete(object))),
                    Step::Watching { events, opened },
                ),
                Some(Ok(WatchEvent::Bookmark(_))) => (None, Step::Watching { events, opened }),
                // 410 Expired or any other: list again, which costs little
                // for the selectors this is for.
                Some(Ok(WatchEvent::Error(status))) => {
                    (Some(Err(watcher::Error::WatchError(status))), Step::List)
                }
                Some(Err(error)) => (Some(Err(watcher::Error::WatchFailed(error))), Step::List),
                None => {
                    *short = if opened.elapsed() < SHORT_WATCH {
                        *short + 1
                    } else {
                        0
                    };
                    tokio::time::sleep_until(opened + least_watch(*short)).await;
                    (None, Step::List)
                }
            },
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::collections::VecDeque;
    use std::sync::{Arc, Mutex};

    use futures::{FutureExt, StreamExt};
    use http_body_util::Full;
    use hyper::body::Bytes;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::Api;
    use kube::runtime::watcher::{Error, Event};
    use serde_json::{Value, json};

    use super::{once_wanted, relisting};

    fn config_map(version: &str) -> Value {
        json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a", "namespace": "ns", "resourceVersion": version},
        })
    }

    fn list(version: &str, items: Vec<Value>) -> String {
        json!({
            "apiVersion": "v1", "kind": "ConfigMapList",
            "metadata": {"resourceVersion": version}, "items": items,
        })
        .to_string()
    }

    fn event(type_: &str, object: Value) -> String {
        format!("{}\n", json!({"type": type_, "object": object}))
    }

    /// A client whose server answers `answers` in order, one per request,
    /// and records each request's path and query. A watch's answer is a
    /// finite body: the server ends that watch once it is sent.
    pub(crate) fn scripted(answers: Vec<String>) -> (kube::Client, Arc<Mutex<Vec<String>>>) {
        scripted_with_status(answers.into_iter().map(|body| (200, body)).collect())
    }

    /// [`scripted`], each answer with its HTTP status.
    pub(crate) fn scripted_with_status(
        answers: Vec<(u16, String)>,
    ) -> (kube::Client, Arc<Mutex<Vec<String>>>) {
        scripted_recording(answers, |request| request.uri().to_string())
    }

    /// [`scripted_with_status`], recording each request as `describe`
    /// words it (for a test that checks more than the path and query).
    pub(crate) fn scripted_recording(
        answers: Vec<(u16, String)>,
        describe: fn(&http::Request<kube::client::Body>) -> String,
    ) -> (kube::Client, Arc<Mutex<Vec<String>>>) {
        let asked = Arc::new(Mutex::new(Vec::new()));
        let answers = Arc::new(Mutex::new(VecDeque::from(answers)));
        let seen = asked.clone();
        let service = tower::service_fn(move |request: http::Request<kube::client::Body>| {
            seen.lock().unwrap().push(describe(&request));
            let answer = answers.lock().unwrap().pop_front();
            async move {
                let (status, body) = answer.ok_or("the script has no more answers")?;
                let mut response = http::Response::new(Full::new(Bytes::from(body)));
                *response.status_mut() = http::StatusCode::from_u16(status)?;
                Ok::<_, Box<dyn std::error::Error + Send + Sync>>(response)
            }
        });
        (kube::Client::new(service, "default"), asked)
    }

    /// What the stream yielded, in a word each.
    fn said(event: &Result<Event<ConfigMap>, Error>) -> String {
        let version = |cm: &ConfigMap| cm.metadata.resource_version.clone().unwrap_or_default();
        match event {
            Ok(Event::Init) => "init".to_owned(),
            Ok(Event::InitApply(cm)) => format!("listed@{}", version(cm)),
            Ok(Event::InitDone) => "done".to_owned(),
            Ok(Event::Apply(cm)) => format!("apply@{}", version(cm)),
            Ok(Event::Delete(cm)) => format!("delete@{}", version(cm)),
            Err(Error::WatchError(status)) => format!("error {}", status.code),
            Err(error) => format!("failed: {error}"),
        }
    }

    #[tokio::test]
    async fn a_stream_once_wanted_starts_only_when_wanted_and_never_if_abandoned() {
        use std::sync::atomic::{AtomicBool, Ordering};
        let started = Arc::new(AtomicBool::new(false));
        let (want, wanted) = tokio::sync::watch::channel(false);
        let flag = started.clone();
        let mut stream = std::pin::pin!(once_wanted(wanted, move || {
            flag.store(true, Ordering::SeqCst);
            futures::stream::iter([1, 2])
        }));
        assert!(stream.next().now_or_never().is_none(), "yielded unwanted");
        assert!(!started.load(Ordering::SeqCst), "started before wanted");
        want.send_replace(true);
        assert_eq!(stream.as_mut().collect::<Vec<_>>().await, [1, 2]);
        assert!(started.load(Ordering::SeqCst));

        let (want, wanted) = tokio::sync::watch::channel(false);
        let never = once_wanted(
            wanted,
            || -> futures::stream::Iter<std::vec::IntoIter<u8>> {
                panic!("started although never wanted")
            },
        );
        drop(want);
        assert_eq!(never.collect::<Vec<_>>().await, Vec::<u8>::new());
    }

    #[tokio::test(start_paused = true)]
    async fn a_watch_that_ends_lists_again_instead_of_resuming_from_its_last_event() {
        let expired = json!({
            "apiVersion": "v1", "kind": "Status", "status": "Failure",
            "message": "too old resource version", "reason": "Expired", "code": 410,
        });
        let (client, asked) = scripted(vec![
            list("100", vec![config_map("90")]),
            event("MODIFIED", config_map("105")),
            list("200", vec![config_map("105")]),
            event("ERROR", expired),
            list("300", Vec::new()),
            event("DELETED", config_map("310")),
        ]);
        let api: Api<ConfigMap> = Api::all(client);
        let events: Vec<String> = relisting(api, "app=x")
            .take(12)
            .map(|event| said(&event))
            .collect()
            .await;
        assert_eq!(
            events,
            [
                "init",
                "listed@90",
                "done",
                "apply@105", // the server ends the watch
                "init",
                "listed@105",
                "done",
                "error 410", // an error ends it too
                "init",
                "done",
                "delete@310", // then a list fails:
                "failed: failed to perform initial object list: ServiceError: the script has no more answers",
            ]
        );
        let asked = asked.lock().unwrap().clone();
        let query = |uri: &str| {
            uri.split_once('?')
                .map(|(_, q)| q.to_owned())
                .unwrap_or_default()
        };
        let watched: Vec<String> = asked
            .iter()
            .filter(|uri| uri.contains("watch=true"))
            .map(|uri| query(uri))
            .collect();
        assert_eq!(watched.len(), 3, "{asked:#?}");
        for (watch, version) in watched.iter().zip(["100", "200", "300"]) {
            assert!(
                watch.contains(&format!("resourceVersion={version}")),
                "each watch starts at its list's version, never at its last event's (105): {watch}"
            );
            assert!(watch.contains("labelSelector=app%3Dx"), "{watch}");
        }
        let lists: Vec<&String> = asked
            .iter()
            .filter(|uri| !uri.contains("watch=true"))
            .collect();
        assert_eq!(lists.len(), 4, "{asked:#?}");
        for list in lists {
            assert!(
                list.contains("resourceVersion=0") && list.contains("labelSelector=app%3Dx"),
                "lists from the watch cache: {list}"
            );
        }
    }

    #[tokio::test(start_paused = true)]
    async fn watches_the_server_ends_at_once_list_again_less_and_less_often() {
        // Six lists, each followed by a watch the server ends at once.
        let mut script = Vec::new();
        for n in 1..=6 {
            script.push(list(&format!("{n}00"), Vec::new()));
            script.push(String::new());
        }
        let (client, asked) = scripted(script);
        let api: Api<ConfigMap> = Api::all(client);
        let start = tokio::time::Instant::now();
        let mut listed_at = Vec::new();
        let mut events = std::pin::pin!(relisting(api, "app=x"));
        while let Some(event) = events.next().await {
            if matches!(event, Ok(Event::Init)) {
                listed_at.push(start.elapsed().as_secs());
            }
            if event.is_err() {
                break; // the script ran out
            }
        }
        // Each wait after a watch that ended at once doubles, to 16 s.
        assert_eq!(listed_at, [0, 1, 3, 7, 15, 31], "{asked:#?}");
        assert_eq!(super::least_watch(40), super::LONGEST_WAIT);
    }
}
