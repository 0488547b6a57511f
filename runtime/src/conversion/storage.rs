//! Storage migration: objects stored at an older version rewritten at the
//! newest, so that a CRD's `status.storedVersions` can end with the newest
//! alone and the old version can one day be dropped.
//!
//! The API server keeps each object in the version it was written at until
//! it is written again, and lists in `storedVersions` every version any
//! object may still be stored at. Writing an object again, even with no
//! change, stores it at the storage version (the stored bytes differ, so
//! the write is not skipped): an empty merge patch per object does it, and
//! then `storedVersions` is set to the storage version alone. It is the
//! kube-storage-version-migrator's method, done once by the provider that
//! owns the kinds.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DynamicObject, ListParams, Patch, PatchParams};
use kube::{Client, ResourceExt};
use serde_json::json;

use crossplane_types::conversion::KindVersions;

use crate::metrics::Metrics;

/// Objects listed per page while migrating.
const PAGE: u32 = 500;

/// Why a kind's storage could not be migrated.
#[derive(Debug, thiserror::Error)]
pub enum MigrationError {
    /// A call to the API server failed.
    #[error("{what}: {source}")]
    Kube {
        /// What was being done.
        what: String,
        /// The client's error.
        #[source]
        source: kube::Error,
    },
}

fn kube_error(what: impl Into<String>) -> impl FnOnce(kube::Error) -> MigrationError {
    let what = what.into();
    move |source| MigrationError::Kube { what, source }
}

/// What [`migrate`] did for one kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Migrated {
    /// No CRD of the kind is installed.
    NoCrd,
    /// The CRD does not store the newest version yet (an older package).
    NotStoredYet,
    /// `storedVersions` was the newest alone already.
    Current,
    /// This many objects were rewritten and `storedVersions` set to the
    /// newest alone.
    Rewritten(usize),
}

/// Migrates the stored objects of each of `kinds` to its newest version,
/// where its CRD stores that version and lists others in `storedVersions`;
/// the CRDs are listed once for all of them. One result per kind, in
/// order: a kind's failure does not stop the others.
pub async fn migrate(
    client: &Client,
    kinds: &[&KindVersions],
    metrics: &Metrics,
) -> Result<Vec<Result<Migrated, MigrationError>>, MigrationError> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let list = crds
        .list(&ListParams::default())
        .await
        .map_err(kube_error("listing CRDs"))?;
    let mut results = Vec::with_capacity(kinds.len());
    for kind in kinds {
        let crd = list
            .items
            .iter()
            .find(|c| c.spec.group == kind.group && c.spec.names.kind == kind.kind);
        results.push(match crd {
            Some(crd) => migrate_kind(client, &crds, crd, kind, metrics).await,
            None => Ok(Migrated::NoCrd),
        });
    }
    Ok(results)
}

/// [`migrate`] for one kind whose CRD is `crd`.
async fn migrate_kind(
    client: &Client,
    crds: &Api<CustomResourceDefinition>,
    crd: &CustomResourceDefinition,
    kind: &KindVersions,
    metrics: &Metrics,
) -> Result<Migrated, MigrationError> {
    let newest = kind.newest();
    if !crd
        .spec
        .versions
        .iter()
        .any(|v| v.name == newest && v.storage)
    {
        return Ok(Migrated::NotStoredYet);
    }
    let stored = crd
        .status
        .as_ref()
        .and_then(|s| s.stored_versions.clone())
        .unwrap_or_default();
    if stored == [newest] {
        return Ok(Migrated::Current);
    }
    let name = crd.name_any();
    let resource = ApiResource {
        group: kind.group.to_owned(),
        version: newest.to_owned(),
        api_version: format!("{}/{newest}", kind.group),
        kind: kind.kind.to_owned(),
        plural: crd.spec.names.plural.clone(),
    };
    let objects: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
    let mut rewritten = 0;
    let mut params = ListParams::default().limit(PAGE);
    loop {
        let page = objects
            .list_metadata(&params)
            .await
            .map_err(kube_error(format!("listing {}", name)))?;
        for object in &page.items {
            let namespace = object.namespace();
            let api: Api<DynamicObject> = match &namespace {
                Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
                None => Api::all_with(client.clone(), &resource),
            };
            match api
                .patch(
                    &object.name_any(),
                    &PatchParams::default(),
                    &Patch::Merge(json!({})),
                )
                .await
            {
                Ok(_) => {
                    rewritten += 1;
                    metrics.conversion.migrated.inc();
                }
                // Deleted meanwhile: nothing left to store.
                Err(kube::Error::Api(status)) if status.code == 404 => {}
                Err(source) => {
                    return Err(MigrationError::Kube {
                        what: format!("rewriting {} {}", kind.kind, object.name_any()),
                        source,
                    });
                }
            }
        }
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => break,
        }
    }
    crds.patch_status(
        &name,
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"storedVersions": [newest]}})),
    )
    .await
    .map_err(kube_error(format!("setting {name}'s storedVersions")))?;
    tracing::info!(crd = %name, rewritten, from = ?stored, to = newest, "stored objects migrated");
    Ok(Migrated::Rewritten(rewritten))
}
