//! The four query kinds (`VPCQuery`, `SubnetQuery`, `NodeGroupQuery`,
//! `DatabaseInstanceQuery`), each a thin mapping of its filter onto one of
//! fakecloud's list calls. Everything else (pages, `mostRecent` and
//! `limit`, the observe-only managed resources, status) is the runtime's
//! ([`runtime::query`]).
//!
//! fakecloud filters by tag on its side (`?tag=key` and `?tag=key=value`);
//! the other fields of a filter are compared here, on each page.

mod database;
mod network;
mod node_group;

use std::collections::BTreeMap;
use std::sync::Arc;

use apis::kinds::query::FilterBase;
use apis::kinds::{DatabaseInstanceQuery, NodeGroupQuery, SubnetQuery, VpcQuery};
use fakecloud::client::{ClientError, ListOptions};
use fakecloud::model::Page as CloudPage;
use runtime::query::{Found, Page};
use runtime::{ExternalError, Provider};

use crate::cloud::{CloudFailure, FakecloudConnect};

/// Resources per list call: enough that a thousand matches take two calls,
/// few enough that one answer stays small.
pub const PAGE_SIZE: u32 = 500;

/// `provider` with the four query kinds, which list through `connect`.
pub fn add(provider: Provider, connect: &Arc<FakecloudConnect>) -> Provider {
    provider
        .query::<VpcQuery, _>(connect.clone())
        .query::<SubnetQuery, _>(connect.clone())
        .query::<NodeGroupQuery, _>(connect.clone())
        .query::<DatabaseInstanceQuery, _>(connect.clone())
}

/// fakecloud's list options for one page of a filter: its tags, as
/// fakecloud's `tag` parameters (`key` or `key=value`).
fn options(base: &FilterBase, page: Option<String>) -> ListOptions {
    ListOptions {
        page_size: Some(PAGE_SIZE),
        page_token: page,
        tags: base
            .tags
            .iter()
            .flatten()
            .map(|tag| match tag.split_once('=') {
                Some((key, value)) => (key.to_owned(), Some(value.to_owned())),
                None => (tag.clone(), None),
            })
            .collect(),
    }
}

/// Two values required of one tag key: no resource can carry both, so the
/// filter is surely a mistake (the schema cannot see it, the cloud would
/// answer "no match").
fn conflicting_tags(base: &FilterBase) -> Option<String> {
    let mut values: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for tag in base.tags.iter().flatten() {
        if let Some((key, value)) = tag.split_once('=') {
            values.entry(key).or_default().push(value);
        }
    }
    values.into_iter().find_map(|(key, mut values)| {
        values.sort_unstable();
        values.dedup();
        (values.len() > 1).then(|| {
            format!(
                "spec.filter.tags requires tag {key:?} to be {} at once: no resource can match; keep one value",
                values
                    .iter()
                    .map(|v| format!("{v:?}"))
                    .collect::<Vec<_>>()
                    .join(" and ")
            )
        })
    })
}

/// One page of the runtime's matches from one page of fakecloud's list:
/// the resources `keep` accepts, each made a [`Found`] by `found`.
fn page<T>(
    listed: Result<CloudPage<T>, ClientError>,
    keep: impl Fn(&T) -> bool,
    found: impl Fn(T) -> Found,
) -> Result<Page, ExternalError> {
    let listed = listed.map_err(CloudFailure)?;
    Ok(Page {
        found: listed
            .items
            .into_iter()
            .filter(|item| keep(item))
            .map(found)
            .collect(),
        next: listed.next_page_token,
    })
}

/// Whether an optional filter field accepts `value`: unset accepts all.
fn accepts<T: PartialEq>(wanted: Option<&T>, value: &T) -> bool {
    wanted.is_none_or(|wanted| wanted == value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base(tags: &[&str]) -> FilterBase {
        FilterBase {
            region: "us-east-1".into(),
            tags: Some(tags.iter().map(|t| (*t).to_owned()).collect()),
        }
    }

    #[test]
    fn tags_become_fakecloud_tag_filters_on_bounded_pages() {
        let options = options(&base(&["team=b", "owner", "note=a=b"]), Some("7".into()));
        assert_eq!(
            options.tags,
            [
                ("team".to_owned(), Some("b".to_owned())),
                ("owner".to_owned(), None),
                ("note".to_owned(), Some("a=b".to_owned())),
            ]
        );
        assert_eq!(options.page_size, Some(PAGE_SIZE));
        assert_eq!(options.page_token.as_deref(), Some("7"));
    }

    #[test]
    fn one_key_with_two_values_is_refused_with_what_to_do() {
        assert_eq!(
            conflicting_tags(&base(&["team=b", "team", "env=prod"])),
            None
        );
        assert_eq!(conflicting_tags(&base(&["team=b", "team=b"])), None);
        assert_eq!(
            conflicting_tags(&base(&["team=a", "team=b"])).as_deref(),
            Some(
                "spec.filter.tags requires tag \"team\" to be \"a\" and \"b\" at once: no resource can match; keep one value"
            )
        );
    }
}
