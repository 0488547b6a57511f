//! Generation of `package/crds/*.yaml` and `package/mrds/*.yaml` from the
//! Rust types.
//!
//! The files are committed so that `kubectl apply` and `crossplane xpkg
//! build` need no Rust toolchain; [`stale_files`] lets a test fail when they
//! no longer match the types.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceConversion, CustomResourceDefinition, CustomResourceDefinitionSpec,
    ServiceReference, WebhookClientConfig, WebhookConversion,
};
use kube::CustomResourceExt;
use kube::core::ObjectMeta;
use kube::core::crd::merge_crds;
use serde::{Deserialize, Serialize};

use crate::kinds::provider_config::m::{
    ClusterProviderConfig, ClusterProviderConfigUsage, ProviderConfig as NamespacedProviderConfig,
    ProviderConfigUsage as NamespacedProviderConfigUsage,
};
use crate::kinds::{
    DatabaseInstance, DatabaseInstanceQuery, NodeGroup, NodeGroupQuery, ProviderConfig,
    ProviderConfigUsage, Subnet, SubnetQuery, Vpc, VpcQuery, database_instance, nodegroup, subnet,
    vpc,
};
use crossplane_types::conversion::KindVersions;
use crossplane_types::{ConnectionDetail, Managed};

/// The command that regenerates the files, as the README and the file
/// headers state it.
pub const REGENERATE_COMMAND: &str = "cargo run -p apis --bin generate";

/// API version of Crossplane's `ManagedResourceDefinition`.
pub const MRD_API_VERSION: &str = "apiextensions.crossplane.io/v1alpha1";

/// Folder, under the package root, of the generated CRDs.
pub const CRDS_DIR: &str = "crds";
/// Folder, under the package root, of the generated MRDs.
pub const MRDS_DIR: &str = "mrds";

/// Why generation failed.
#[derive(Debug, thiserror::Error)]
pub enum GenerateError {
    /// A manifest could not be rendered as YAML.
    #[error("cannot render {name} as YAML")]
    Render {
        /// Name of the manifest.
        name: String,
        /// The serializer's error.
        #[source]
        source: serde_yaml::Error,
    },
    /// A file or folder could not be read, written or removed.
    #[error("cannot {action} {path}")]
    Io {
        /// What was attempted.
        action: &'static str,
        /// The path it was attempted on.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
}

/// Whether Crossplane creates the CRD of an MRD.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum MrdState {
    /// The CRD exists.
    Active,
    /// The CRD is not created until a `ManagedResourceActivationPolicy`
    /// activates the MRD.
    Inactive,
}

/// One documented connection-detail key of an MRD.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnectionDetailDoc {
    /// The Secret data key.
    pub name: String,
    /// What the value is.
    pub description: String,
}

/// `spec` of a `ManagedResourceDefinition`: a CRD spec plus the connection
/// details and the activation state (seed 002).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ManagedResourceDefinitionSpec {
    /// The CRD spec.
    #[serde(flatten)]
    pub crd: CustomResourceDefinitionSpec,
    /// The keys the kind writes to its connection Secret.
    pub connection_details: Vec<ConnectionDetailDoc>,
    /// `Inactive`: this provider has the `late-mr-activation` capability.
    pub state: MrdState,
}

/// Crossplane's `ManagedResourceDefinition`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ManagedResourceDefinition {
    /// `apiextensions.crossplane.io/v1alpha1`.
    pub api_version: String,
    /// `ManagedResourceDefinition`.
    pub kind: String,
    /// Named like the CRD: `<plural>.<group>`.
    pub metadata: ObjectMeta,
    /// The CRD spec plus connection details and state.
    pub spec: ManagedResourceDefinitionSpec,
}

/// The MRD of a managed kind, documenting [`Managed::CONNECTION_DETAILS`].
pub fn mrd<M: Managed>() -> ManagedResourceDefinition {
    mrd_of(M::crd(), M::CONNECTION_DETAILS)
}

/// The MRD of a CRD, documenting `connection_details`.
fn mrd_of(
    crd: CustomResourceDefinition,
    details: &[ConnectionDetail],
) -> ManagedResourceDefinition {
    ManagedResourceDefinition {
        api_version: MRD_API_VERSION.to_owned(),
        kind: "ManagedResourceDefinition".to_owned(),
        metadata: ObjectMeta {
            name: crd.metadata.name.clone(),
            ..ObjectMeta::default()
        },
        spec: ManagedResourceDefinitionSpec {
            crd: crd.spec,
            connection_details: details
                .iter()
                .map(|d| ConnectionDetailDoc {
                    name: d.name.to_owned(),
                    description: d.description.to_owned(),
                })
                .collect(),
            state: MrdState::Inactive,
        },
    }
}

/// The Service the CRDs' conversion calls, as the package declares it.
/// Crossplane's package manager replaces the name, namespace and port with
/// the provider's own Service (named after the package, in Crossplane's
/// namespace, port 9443) and adds the CA bundle (the provider's serving
/// certificate); it keeps the path. Anywhere else (the e2e control plane,
/// compose), the test equipment writes a URL and a CA bundle of its own.
pub const WEBHOOK_SERVICE: (&str, &str, i32) = ("provider-fakecloud", "crossplane-system", 9443);

/// The path of the conversion webhook on the provider.
pub const WEBHOOK_PATH: &str = "/convert";

/// One CRD serving every version of `versions`: `older`'s versions
/// deprecated with a warning that names the newest, the newest stored,
/// conversion by the provider's webhook.
fn multi_version(
    versions: &KindVersions,
    mut crds: Vec<CustomResourceDefinition>,
) -> CustomResourceDefinition {
    let newest = versions.newest();
    crds.sort_by_key(|crd| {
        let name = crd.spec.versions.first().map(|v| v.name.clone());
        versions
            .versions()
            .iter()
            .position(|v| Some(*v) == name.as_deref())
    });
    let mut crd = merge_crds(crds, newest).expect("the versions of one kind merge");
    crd.spec
        .versions
        .sort_by_key(|v| versions.versions().iter().position(|name| *name == v.name));
    for version in &mut crd.spec.versions {
        if version.name != newest {
            version.deprecated = Some(true);
            version.deprecation_warning = Some(format!(
                "{group}/{old} {kind} is deprecated; use {group}/{newest}",
                group = versions.group,
                old = version.name,
                kind = versions.kind,
            ));
        }
    }
    let (name, namespace, port) = WEBHOOK_SERVICE;
    crd.spec.conversion = Some(CustomResourceConversion {
        strategy: "Webhook".to_owned(),
        webhook: Some(WebhookConversion {
            conversion_review_versions: vec!["v1".to_owned()],
            client_config: Some(WebhookClientConfig {
                service: Some(ServiceReference {
                    name: name.to_owned(),
                    namespace: namespace.to_owned(),
                    path: Some(WEBHOOK_PATH.to_owned()),
                    port: Some(port),
                }),
                ..WebhookClientConfig::default()
            }),
        }),
    });
    crd
}

/// The four namespaced managed kinds' CRDs, each at v1alpha1 and v1beta1.
fn namespaced_crds() -> Vec<CustomResourceDefinition> {
    vec![
        multi_version(
            &vpc::v1beta1::VERSIONS,
            vec![vpc::m::Vpc::crd(), vpc::v1beta1::Vpc::crd()],
        ),
        multi_version(
            &subnet::v1beta1::VERSIONS,
            vec![subnet::m::Subnet::crd(), subnet::v1beta1::Subnet::crd()],
        ),
        multi_version(
            &nodegroup::v1beta1::VERSIONS,
            vec![
                nodegroup::m::NodeGroup::crd(),
                nodegroup::v1beta1::NodeGroup::crd(),
            ],
        ),
        multi_version(
            &database_instance::v1beta1::VERSIONS,
            vec![
                database_instance::m::DatabaseInstance::crd(),
                database_instance::v1beta1::DatabaseInstance::crd(),
            ],
        ),
    ]
}

/// The CRDs of every kind: the four managed kinds in both scopes (the
/// namespaced ones at v1alpha1 and v1beta1), then
/// the ProviderConfig kinds and their usages, namespaced (v2) first, then
/// the four query kinds. A query kind is not a managed resource: it has a
/// plain CRD and no MRD, so Crossplane installs it with the package and
/// no activation policy gates it.
pub fn crds() -> Vec<CustomResourceDefinition> {
    let mut crds = namespaced_crds();
    crds.extend([
        Vpc::crd(),
        Subnet::crd(),
        NodeGroup::crd(),
        DatabaseInstance::crd(),
        NamespacedProviderConfig::crd(),
        ClusterProviderConfig::crd(),
        NamespacedProviderConfigUsage::crd(),
        ClusterProviderConfigUsage::crd(),
        ProviderConfig::crd(),
        ProviderConfigUsage::crd(),
        VpcQuery::crd(),
        SubnetQuery::crd(),
        NodeGroupQuery::crd(),
        DatabaseInstanceQuery::crd(),
    ]);
    crds
}

/// The MRDs of the four managed kinds in both scopes, namespaced (v2)
/// first.
pub fn mrds() -> Vec<ManagedResourceDefinition> {
    let details = [
        vpc::v1beta1::Vpc::CONNECTION_DETAILS,
        subnet::v1beta1::Subnet::CONNECTION_DETAILS,
        nodegroup::v1beta1::NodeGroup::CONNECTION_DETAILS,
        database_instance::v1beta1::DatabaseInstance::CONNECTION_DETAILS,
    ];
    let mut mrds: Vec<_> = namespaced_crds()
        .into_iter()
        .zip(details)
        .map(|(crd, details)| mrd_of(crd, details))
        .collect();
    mrds.extend([
        mrd::<Vpc>(),
        mrd::<Subnet>(),
        mrd::<NodeGroup>(),
        mrd::<DatabaseInstance>(),
    ]);
    mrds
}

/// A generated file: its path under the folder it is written to (the
/// package root, or the API reference's folder) and its text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GeneratedFile {
    /// Path relative to that folder, e.g.
    /// `crds/network.fakecloud.crossplane.io_vpcs.yaml` or
    /// `vpcs.network.fakecloud.crossplane.io.md`.
    pub path: PathBuf,
    /// The text, starting with a header that says how to regenerate it.
    pub contents: String,
}

/// The folder `package/` of this repository.
pub fn default_package_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("package")
}

/// The file name of a generated CRD or MRD: `<group>_<plural>.yaml`.
pub(crate) fn file_name(group: &str, plural: &str) -> String {
    format!("{group}_{plural}.yaml")
}

fn render(name: &str, manifest: &impl Serialize) -> Result<String, GenerateError> {
    let yaml = serde_yaml::to_string(manifest).map_err(|source| GenerateError::Render {
        name: name.to_owned(),
        source,
    })?;
    Ok(format!(
        "# Generated from the Rust types in apis/src by `{REGENERATE_COMMAND}`.\n\
         # Do not edit: change the types and run the command again.\n{yaml}"
    ))
}

/// Every generated file, rendered in memory.
pub fn generated_files() -> Result<Vec<GeneratedFile>, GenerateError> {
    let mut files = Vec::new();
    for crd in crds() {
        let name = crd.metadata.name.clone().unwrap_or_default();
        files.push(GeneratedFile {
            path: Path::new(CRDS_DIR).join(file_name(&crd.spec.group, &crd.spec.names.plural)),
            contents: render(&name, &crd)?,
        });
    }
    for mrd in mrds() {
        let name = mrd.metadata.name.clone().unwrap_or_default();
        files.push(GeneratedFile {
            path: Path::new(MRDS_DIR)
                .join(file_name(&mrd.spec.crd.group, &mrd.spec.crd.names.plural)),
            contents: render(&name, &mrd)?,
        });
    }
    Ok(files)
}

/// The files ending in `.{extension}` now in the folders `dirs` under
/// `root`, relative to `root` (`""` in `dirs` is `root` itself).
fn existing_files(
    root: &Path,
    dirs: &[&str],
    extension: &str,
) -> Result<BTreeSet<PathBuf>, GenerateError> {
    let mut found = BTreeSet::new();
    for dir in dirs {
        let path = root.join(dir);
        let entries = match fs::read_dir(&path) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(source) => {
                return Err(GenerateError::Io {
                    action: "list",
                    path,
                    source,
                });
            }
        };
        for entry in entries {
            let entry = entry.map_err(|source| GenerateError::Io {
                action: "list",
                path: path.clone(),
                source,
            })?;
            let name = entry.file_name();
            if Path::new(&name).extension().is_some_and(|e| e == extension) {
                found.insert(Path::new(dir).join(name));
            }
        }
    }
    Ok(found)
}

/// Writes `files` under `root` and removes the files ending in
/// `.{extension}` in `dirs` that are not among them. Shared by the package,
/// the API reference ([`crate::reference::write`]) and the e2e crate's
/// flags and metrics pages.
pub fn write_files(
    root: &Path,
    files: Vec<GeneratedFile>,
    dirs: &[&str],
    extension: &str,
) -> Result<Vec<PathBuf>, GenerateError> {
    let wanted: BTreeSet<PathBuf> = files.iter().map(|f| f.path.clone()).collect();
    for leftover in existing_files(root, dirs, extension)?.difference(&wanted) {
        let path = root.join(leftover);
        fs::remove_file(&path).map_err(|source| GenerateError::Io {
            action: "remove",
            path,
            source,
        })?;
    }
    let mut written = Vec::new();
    for file in files {
        let path = root.join(&file.path);
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir).map_err(|source| GenerateError::Io {
                action: "create",
                path: dir.to_owned(),
                source,
            })?;
        }
        fs::write(&path, &file.contents).map_err(|source| GenerateError::Io {
            action: "write",
            path: path.clone(),
            source,
        })?;
        written.push(path);
    }
    Ok(written)
}

/// The paths, relative to `root`, of `files` that differ from or are
/// missing under `root`, then of the files ending in `.{extension}` in
/// `dirs` that are not among `files`.
pub fn stale_among(
    root: &Path,
    files: Vec<GeneratedFile>,
    dirs: &[&str],
    extension: &str,
) -> Result<Vec<PathBuf>, GenerateError> {
    let mut stale = Vec::new();
    for file in &files {
        let path = root.join(&file.path);
        match fs::read_to_string(&path) {
            Ok(text) if text == file.contents => {}
            Ok(_) => stale.push(file.path.clone()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => stale.push(file.path.clone()),
            Err(source) => {
                return Err(GenerateError::Io {
                    action: "read",
                    path,
                    source,
                });
            }
        }
    }
    let wanted: BTreeSet<PathBuf> = files.into_iter().map(|f| f.path).collect();
    stale.extend(
        existing_files(root, dirs, extension)?
            .difference(&wanted)
            .cloned(),
    );
    Ok(stale)
}

/// Writes every generated file under `package_root` and removes YAML files
/// in the generated folders that generation no longer produces (a renamed
/// kind must not leave its old CRD behind). Returns the files written.
pub fn write(package_root: &Path) -> Result<Vec<PathBuf>, GenerateError> {
    write_files(
        package_root,
        generated_files()?,
        &[CRDS_DIR, MRDS_DIR],
        "yaml",
    )
}

/// The files under `package_root` that differ from what generation would
/// write now: changed, missing, or no longer generated. Empty when the
/// committed files are current.
pub fn stale_files(package_root: &Path) -> Result<Vec<PathBuf>, GenerateError> {
    stale_among(
        package_root,
        generated_files()?,
        &[CRDS_DIR, MRDS_DIR],
        "yaml",
    )
}
