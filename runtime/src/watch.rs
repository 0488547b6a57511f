//! How the runtime's watches list what they watch.

use kube::runtime::watcher;

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
