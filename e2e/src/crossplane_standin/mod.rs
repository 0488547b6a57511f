//! A stand-in for Crossplane's two activation controllers, for where this
//! project runs without Crossplane: the demo, `docker compose up` and the
//! e2e suite. It is test and demo equipment, never part of the provider,
//! and on the kind path (`scripts/kind-install`) real Crossplane does this
//! work instead.
//!
//! What it does, after Crossplane's documentation and seed 002:
//!
//! - installs the CRDs of `ManagedResourceDefinition` (MRD) and
//!   `ManagedResourceActivationPolicy` (MRAP),
//!   `apiextensions.crossplane.io/v1alpha1` ([`crds`]);
//! - on every change to an MRAP (and to an MRD or a CRD, below) lists all
//!   MRAPs, computes the MRD names they activate (exact names and `*`
//!   wildcards, [`policy::matches`]) and moves the matching MRDs from
//!   `Inactive` to `Active`, never back ([`policy::plan`]);
//! - applies each active MRD's CRD, its spec minus `connectionDetails` and
//!   `state`, owned by the MRD ([`policy::crd_of`]; CEL rules stripped on
//!   servers older than 1.25, as the harness does for every CRD);
//! - sets the MRD's `Established` condition (`False`/`InactiveManagedResource`,
//!   `Unknown`/`PendingManagedResource` until the CRD is Established, then
//!   `True`/`EstablishedManagedResource`) and the MRAP's `status.activated`
//!   (the MRDs it matches, sorted) and `Healthy` condition
//!   (`True`/`Running`, or `Unknown`/`EncounteredErrors`), as Crossplane does.
//!
//! [`Package::install`] plays Crossplane's package manager for the other
//! half: it applies the package's MRDs, `Inactive` because the provider
//! declares `safe-start`, and its CRDs that have no MRD (the ProviderConfig
//! kinds).
//!
//! Where the seed and Crossplane's docs leave room, chosen here:
//!
//! - MRDs and CRDs are watched as well as MRAPs, so an MRD applied after a
//!   policy that names it is activated then (Crossplane's MRAP controller
//!   does the same through a watch of MRDs), and a CRD deleted under an
//!   active MRD is applied again (Crossplane's MRD controller owns its CRDs).
//! - One pass over all policies and MRDs per batch of events, instead of
//!   one reconcile per object: the same outcome for a provider's handful of
//!   MRDs, with no event routing to get wrong ([`controller`]).
//! - A policy being deleted activates nothing more; deleting a policy
//!   deactivates nothing (seed 002: a started controller is not stopped).
//! - An MRD set back to `Inactive` by hand, which Crossplane's CEL rule
//!   forbids and a 1.20 server cannot, is left as it is: its condition says
//!   Inactive, its CRD stays, and a policy that names it activates it again.
//! - Not supported: the `crossplane.io/paused` annotation, Kubernetes
//!   events, and the `[...]` classes and `\` escapes of Go's
//!   `filepath.Match` (a pattern with them matches nothing and the MRAP's
//!   `Healthy` condition says so).

mod controller;
pub mod crds;
pub mod policy;
#[cfg(feature = "containers")]
pub mod runtime;

use std::path::{Path, PathBuf};
use std::time::Duration;

use crossplane_types::condition::Condition;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use kube::runtime::wait::{await_condition, conditions};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::conversion::WebhookTarget;
use crate::error::ClusterError;

/// Field manager of the stand-in's writes (CRDs, MRD state, statuses).
pub const FIELD_MANAGER: &str = "crossplane-standin";
/// Field manager of [`Package::install`], in the package manager's role.
pub const PACKAGE_MANAGER: &str = "crossplane-standin-package-manager";

/// Why the stand-in could not do its work.
#[derive(Debug, thiserror::Error)]
pub enum StandInError {
    #[error("{context}: {error}")]
    Kube { context: String, error: kube::Error },
    #[error(transparent)]
    Cluster(#[from] ClusterError),
    #[error("package {path}: {reason}")]
    Package { path: PathBuf, reason: String },
    #[error("timed out after {waited:?} waiting for {what}")]
    Timeout { what: String, waited: Duration },
    #[error("waiting for {what}: {error}")]
    Wait {
        what: String,
        error: kube::runtime::wait::Error,
    },
    #[error("the stand-in's watches ended")]
    WatchEnded,
    #[error("the stand-in's task died: {0}")]
    Task(tokio::task::JoinError),
}

impl From<tokio::task::JoinError> for StandInError {
    fn from(error: tokio::task::JoinError) -> Self {
        StandInError::Task(error)
    }
}

impl StandInError {
    pub(crate) fn kube(context: impl Into<String>, error: kube::Error) -> Self {
        Self::Kube {
            context: context.into(),
            error,
        }
    }
}

/// The MRD kind, for dynamic API calls.
pub fn mrd_resource() -> ApiResource {
    resource(crds::MRD_KIND, crds::MRD_PLURAL)
}

/// The MRAP kind, for dynamic API calls.
pub fn mrap_resource() -> ApiResource {
    resource(crds::MRAP_KIND, crds::MRAP_PLURAL)
}

fn resource(kind: &str, plural: &str) -> ApiResource {
    ApiResource {
        group: crds::GROUP.to_owned(),
        version: crds::VERSION.to_owned(),
        api_version: crds::API_VERSION.to_owned(),
        kind: kind.to_owned(),
        plural: plural.to_owned(),
    }
}

pub(crate) fn mrd_api(client: Client) -> Api<DynamicObject> {
    Api::all_with(client, &mrd_resource())
}

pub(crate) fn mrap_api(client: Client) -> Api<DynamicObject> {
    Api::all_with(client, &mrap_resource())
}

/// Whether CRDs must lose their CEL rules on this server (older than 1.25).
async fn strips_cel(client: &Client) -> Result<bool, StandInError> {
    let version = client
        .apiserver_version()
        .await
        .map_err(|e| StandInError::kube("reading the server version", e))?;
    Ok(!crate::crds::supports_cel_rules(
        &version.major,
        &version.minor,
    ))
}

/// Installs the MRD and MRAP CRDs and waits until both are Established;
/// returns whether the server predates CEL rules (older than 1.25). On such
/// a server the MRD's one CEL rule (`state` never back from `Active`) goes:
/// the stand-in itself never writes `Inactive` over `Active`.
pub async fn install_definitions(client: &Client) -> Result<bool, StandInError> {
    let strip = strips_cel(client).await?;
    let mut definitions = crds::definitions();
    if strip {
        definitions.iter_mut().for_each(|crd| {
            crate::crds::strip_cel_rules(crd);
        });
    }
    crate::crds::install(client, definitions, false, None).await?;
    Ok(strip)
}

/// Waits until someone else's stand-in (compose's `crossplane-standin`
/// service) has installed the MRD and MRAP CRDs.
pub async fn wait_for_definitions(client: &Client, timeout: Duration) -> Result<(), StandInError> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    for name in [crds::mrd_crd_name(), crds::mrap_crd_name()] {
        tokio::time::timeout(
            timeout,
            await_condition(api.clone(), &name, conditions::is_crd_established()),
        )
        .await
        .map_err(|_| StandInError::Timeout {
            what: format!("CRD {name} (installed by the crossplane-standin service)"),
            waited: timeout,
        })?
        .map_err(|error| StandInError::Wait {
            what: format!("CRD {name}"),
            error,
        })?;
    }
    Ok(())
}

/// Installs the MRD and MRAP CRDs, then runs the controllers until
/// `shutdown`. The CRDs it makes from MRDs whose conversion is a webhook
/// are pointed at `webhook`, as Crossplane's package manager points them
/// at the provider's Service ([`crate::conversion`]).
pub async fn run(
    client: Client,
    webhook: Option<WebhookTarget>,
    shutdown: CancellationToken,
) -> Result<(), StandInError> {
    let strip = install_definitions(&client).await?;
    controller::Reconciler::new(client, strip, webhook)
        .run(shutdown)
        .await
}

/// [`run`] against the cluster of a kubeconfig file (compose's service).
pub async fn run_with_kubeconfig(
    kubeconfig: &Path,
    webhook: Option<WebhookTarget>,
    shutdown: CancellationToken,
) -> Result<(), StandInError> {
    let client = crate::kubeconfig::client_from_file(kubeconfig).await?;
    run(client, webhook, shutdown).await
}

/// The stand-in running in a task of this process (tests, the local demo);
/// stopped by [`StandIn::stop`] or on drop.
pub struct StandIn {
    shutdown: CancellationToken,
    /// `None` only once [`StandIn::stop`] took it.
    task: Option<JoinHandle<Result<(), StandInError>>>,
}

impl StandIn {
    /// Installs the MRD and MRAP CRDs (returning once both are
    /// Established), then runs the controllers in a task, pointing the
    /// conversion of the CRDs it makes at `webhook` (see [`run`]).
    pub async fn start(
        client: Client,
        webhook: Option<WebhookTarget>,
    ) -> Result<Self, StandInError> {
        let strip = install_definitions(&client).await?;
        let shutdown = CancellationToken::new();
        let task =
            tokio::spawn(controller::Reconciler::new(client, strip, webhook).run(shutdown.clone()));
        Ok(Self {
            shutdown,
            task: Some(task),
        })
    }

    /// Whether its task still runs (it ends only on an error or a stop).
    pub fn is_running(&self) -> bool {
        self.task.as_ref().is_some_and(|task| !task.is_finished())
    }

    /// Stops it and returns how its task ended.
    pub async fn stop(mut self) -> Result<(), StandInError> {
        self.shutdown.cancel();
        match self.task.take() {
            Some(task) => task.await?,
            None => Ok(()),
        }
    }
}

impl Drop for StandIn {
    fn drop(&mut self) {
        self.shutdown.cancel();
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}

/// A Crossplane provider package as read from its folder: whether it
/// declares `safe-start`, its MRDs and its CRDs that have no MRD.
#[derive(Debug, Clone)]
pub struct Package {
    /// `spec.capabilities` of `crossplane.yaml` declare `safe-start`.
    pub safe_start: bool,
    /// The MRDs of `mrds/`, as written.
    pub mrds: Vec<Value>,
    /// The CRDs of `crds/` with no MRD of the same name (what Crossplane
    /// installs as plain CRDs: the ProviderConfig kinds).
    pub crds: Vec<Value>,
}

/// What [`Package::install`] created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installed {
    /// MRD names, in package order.
    pub mrds: Vec<String>,
    /// The state the MRDs were created in: `Inactive` for a `safe-start`
    /// provider, else `Active`.
    pub state: &'static str,
    /// CRD names, Established.
    pub crds: Vec<String>,
}

impl Package {
    /// Reads `dir` (`crossplane.yaml`, `mrds/`, `crds/`).
    pub fn load(dir: &Path) -> Result<Self, StandInError> {
        let meta_path = dir.join("crossplane.yaml");
        let meta = crate::crds::load_manifests(&meta_path)?;
        let capabilities: Vec<String> = meta
            .first()
            .and_then(|m| m.pointer("/spec/capabilities"))
            .and_then(Value::as_array)
            .map(|caps| {
                caps.iter()
                    .filter_map(|c| c.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        let mut mrds = Vec::new();
        for path in crate::crds::yaml_files(&dir.join("mrds"))? {
            for mrd in crate::crds::load_manifests(&path)? {
                if mrd["kind"] != crds::MRD_KIND {
                    return Err(StandInError::Package {
                        path,
                        reason: format!("{} is not a {}", mrd["kind"], crds::MRD_KIND),
                    });
                }
                mrds.push(mrd);
            }
        }
        let mrd_names: Vec<&str> = mrds.iter().map(name_of).collect();
        let mut plain = Vec::new();
        for path in crate::crds::yaml_files(&dir.join("crds"))? {
            for crd in crate::crds::load_manifests(&path)? {
                if !mrd_names.contains(&name_of(&crd)) {
                    plain.push(crd);
                }
            }
        }
        Ok(Self {
            safe_start: policy::declares_safe_start(&capabilities),
            mrds,
            crds: plain,
        })
    }

    /// The repository's (or `E2E_PACKAGE_DIR`'s) package.
    pub fn of_this_provider() -> Result<Self, StandInError> {
        Self::load(&crate::crds::package_dir())
    }

    /// Installs it as Crossplane's package manager does: the plain CRDs
    /// (waiting until Established), then the MRDs, `Inactive` for a
    /// `safe-start` provider and `Active` otherwise. An MRD that is Active
    /// already stays so.
    pub async fn install(&self, client: &Client) -> Result<Installed, StandInError> {
        let crds = crate::crds::install(client, self.crds.clone(), strips_cel(client).await?, None)
            .await?;
        let state = if self.safe_start {
            "Inactive"
        } else {
            "Active"
        };
        let mut mrds = Vec::new();
        for mrd in &self.mrds {
            mrds.push(apply_mrd(client, mrd, state).await?);
        }
        Ok(Installed { mrds, state, crds })
    }
}

/// Applies one MRD with `spec.state` set to `state`, unless it is Active
/// already; returns its name.
pub async fn apply_mrd(client: &Client, mrd: &Value, state: &str) -> Result<String, StandInError> {
    let api = mrd_api(client.clone());
    let name = name_of(mrd).to_owned();
    let active = api
        .get_opt(&name)
        .await
        .map_err(|e| StandInError::kube(format!("reading MRD {name}"), e))?
        .is_some_and(|existing| existing.data["spec"]["state"] == "Active");
    let mut mrd = mrd.clone();
    if let Some(spec) = mrd.get_mut("spec").and_then(Value::as_object_mut) {
        if active {
            spec.remove("state");
        } else {
            spec.insert("state".to_owned(), state.into());
        }
    }
    api.patch(
        &name,
        &PatchParams::apply(PACKAGE_MANAGER).force(),
        &Patch::Apply(&mrd),
    )
    .await
    .map_err(|e| StandInError::kube(format!("applying MRD {name}"), e))?;
    Ok(name)
}

fn name_of(object: &Value) -> &str {
    object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// An MRAP manifest.
pub fn activation_policy(name: &str, activate: &[&str]) -> Value {
    json!({
        "apiVersion": crds::API_VERSION,
        "kind": crds::MRAP_KIND,
        "metadata": {"name": name},
        "spec": {"activate": activate},
    })
}

/// Applies an MRAP manifest server-side as `manager` (a user's kubectl).
pub async fn apply_policy(
    client: &Client,
    policy: &Value,
    manager: &str,
) -> Result<(), StandInError> {
    let name = name_of(policy).to_owned();
    mrap_api(client.clone())
        .patch(
            &name,
            &PatchParams::apply(manager).force(),
            &Patch::Apply(policy),
        )
        .await
        .map_err(|e| StandInError::kube(format!("applying MRAP {name}"), e))?;
    Ok(())
}

/// Deletes an MRAP; one that does not exist is no error.
pub async fn delete_policy(client: &Client, name: &str) -> Result<(), StandInError> {
    match mrap_api(client.clone())
        .delete(name, &DeleteParams::default())
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(e) => Err(StandInError::kube(format!("deleting MRAP {name}"), e)),
    }
}

/// An MRD as `kubectl get mrd` shows it, with its documented connection
/// details.
#[derive(Debug, Clone, PartialEq)]
pub struct DefinitionStatus {
    pub name: String,
    /// `spec.state`.
    pub state: String,
    /// The `Established` condition, once the stand-in set one.
    pub established: Option<Condition>,
    /// `spec.connectionDetails[].name`.
    pub connection_details: Vec<String>,
}

impl DefinitionStatus {
    pub fn is_active(&self) -> bool {
        self.state == "Active"
    }

    pub fn is_established(&self) -> bool {
        self.established.as_ref().is_some_and(Condition::is_true)
    }

    /// `Established` as `kubectl get mrd` prints it: status and reason.
    pub fn established_column(&self) -> String {
        match &self.established {
            Some(c) => format!("{:?} ({})", c.status, c.reason),
            None => "-".to_owned(),
        }
    }
}

/// Every MRD in the cluster, by name.
pub async fn definitions(client: &Client) -> Result<Vec<DefinitionStatus>, StandInError> {
    let mut list: Vec<DefinitionStatus> = mrd_api(client.clone())
        .list(&ListParams::default())
        .await
        .map_err(|e| StandInError::kube("listing MRDs", e))?
        .items
        .iter()
        .map(|mrd| DefinitionStatus {
            name: mrd.name_any(),
            state: mrd.data["spec"]["state"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            established: condition(&mrd.data, policy::TYPE_ESTABLISHED),
            connection_details: strings(&mrd.data["spec"]["connectionDetails"], "name"),
        })
        .collect();
    list.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(list)
}

/// An MRAP with what the stand-in reported on it.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyStatus {
    pub name: String,
    /// `spec.activate`.
    pub activate: Vec<String>,
    /// `status.activated`.
    pub activated: Vec<String>,
    /// The `Healthy` condition, once set.
    pub healthy: Option<Condition>,
}

/// The MRAP `name`, if it exists.
pub async fn policy_status(
    client: &Client,
    name: &str,
) -> Result<Option<PolicyStatus>, StandInError> {
    let mrap = mrap_api(client.clone())
        .get_opt(name)
        .await
        .map_err(|e| StandInError::kube(format!("reading MRAP {name}"), e))?;
    Ok(mrap.map(|mrap| PolicyStatus {
        name: mrap.name_any(),
        activate: strings(&mrap.data["spec"]["activate"], ""),
        activated: strings(&mrap.data["status"]["activated"], ""),
        healthy: condition(&mrap.data, policy::TYPE_HEALTHY),
    }))
}

/// The strings of a JSON array, or of field `field` of its objects.
fn strings(array: &Value, field: &str) -> Vec<String> {
    array
        .as_array()
        .map(|items| {
            items
                .iter()
                .map(|item| if field.is_empty() { item } else { &item[field] })
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

fn condition(data: &Value, type_: &str) -> Option<Condition> {
    data["status"]["conditions"]
        .as_array()?
        .iter()
        .filter_map(|c| serde_json::from_value::<Condition>(c.clone()).ok())
        .find(|c| c.type_ == type_)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_providers_package_declares_safe_start_and_its_mrds_are_not_plain_crds() {
        let package = Package::of_this_provider().unwrap();
        assert!(package.safe_start);
        assert_eq!(package.mrds.len(), 8);
        assert!(
            package
                .mrds
                .iter()
                .all(|m| m["spec"]["state"] == "Inactive"),
            "the package's MRDs are written Inactive"
        );
        let plain: Vec<&str> = package.crds.iter().map(name_of).collect();
        for config in [
            "providerconfigs.fakecloud.crossplane.io",
            "providerconfigs.fakecloud.m.crossplane.io",
            "clusterproviderconfigs.fakecloud.m.crossplane.io",
        ] {
            assert!(plain.contains(&config), "{config} in {plain:?}");
        }
        assert!(
            package.mrds.iter().all(|m| !plain.contains(&name_of(m))),
            "a kind with an MRD gets its CRD from the MRD only: {plain:?}"
        );
    }

    #[test]
    fn strings_reads_arrays_of_strings_or_of_named_objects() {
        assert_eq!(strings(&json!(["a", "b"]), ""), ["a", "b"]);
        assert_eq!(
            strings(&json!([{"name": "port"}, {"name": "password"}]), "name"),
            ["port", "password"]
        );
        assert!(strings(&Value::Null, "").is_empty());
    }
}
