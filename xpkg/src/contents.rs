//! What the package holds: the `package/` folder turned into the two YAML
//! streams of its layers.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::Deserialize as _;
use serde_yaml::Value;

use crate::error::{Result, XpkgError};
use crate::object::{kind_of, name_of};

/// The package's two files, as YAML streams.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackageContents {
    /// `package.yaml`: the `crossplane.yaml` meta object, then every MRD,
    /// then every CRD that is not a managed resource's.
    pub package_yaml: String,
    /// `.up/examples.yaml`: every example, file by file.
    pub examples_yaml: String,
    /// What `package.yaml` holds, for the build's summary.
    pub objects: Vec<ObjectRef>,
}

/// An object of the package by kind and name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectRef {
    pub kind: String,
    pub name: String,
}

impl std::fmt::Display for ObjectRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.kind, self.name)
    }
}

/// Reads `dir` (the repository's `package/`): `crossplane.yaml`, `mrds/`,
/// `crds/` and `examples/`, files in name order.
///
/// A managed resource's CRD is left out because Crossplane makes it from
/// the MRD of the same name; every CRD without one (today ProviderConfig,
/// ProviderConfigUsage and the query kinds) goes in as is, so a new kind of either sort
/// needs no change here. The result passes Crossplane's provider lint, or
/// this is an error.
pub fn read_package_dir(dir: &Path) -> Result<PackageContents> {
    let meta_path = dir.join("crossplane.yaml");
    let meta = load_documents(&meta_path)?;
    if meta.len() != 1 {
        return Err(XpkgError::Package {
            path: meta_path,
            reason: format!(
                "holds {} objects; exactly one (the Provider) expected",
                meta.len()
            ),
        });
    }
    let mut objects = meta;

    let mut mrd_names = BTreeSet::new();
    for path in yaml_files(&dir.join("mrds"))? {
        for mrd in load_documents(&path)? {
            if kind_of(&mrd) != "ManagedResourceDefinition" {
                return Err(XpkgError::Package {
                    path,
                    reason: format!("{} is not a ManagedResourceDefinition", kind_of(&mrd)),
                });
            }
            mrd_names.insert(name_of(&mrd).to_owned());
            objects.push(mrd);
        }
    }
    for path in yaml_files(&dir.join("crds"))? {
        for crd in load_documents(&path)? {
            if !mrd_names.contains(name_of(&crd)) {
                objects.push(crd);
            }
        }
    }
    crate::lint::lint_provider(&objects)?;

    let mut examples = Vec::new();
    for path in yaml_files(&dir.join("examples"))? {
        examples.extend(load_documents(&path)?);
    }
    Ok(PackageContents {
        package_yaml: to_stream(&objects, &dir.display().to_string())?,
        examples_yaml: to_stream(&examples, &dir.join("examples").display().to_string())?,
        objects: objects
            .iter()
            .map(|o| ObjectRef {
                kind: kind_of(o).to_owned(),
                name: name_of(o).to_owned(),
            })
            .collect(),
    })
}

/// The non-empty documents of a YAML stream; `path` names it in errors.
pub fn parse_stream(text: &str, path: &Path) -> Result<Vec<Value>> {
    let mut documents = Vec::new();
    for (index, document) in serde_yaml::Deserializer::from_str(text).enumerate() {
        let value = Value::deserialize(document).map_err(|error| XpkgError::Yaml {
            path: path.to_path_buf(),
            index,
            error,
        })?;
        if !value.is_null() {
            documents.push(value);
        }
    }
    Ok(documents)
}

fn load_documents(path: &Path) -> Result<Vec<Value>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| XpkgError::io(format!("reading {}", path.display()), e))?;
    let documents = parse_stream(&text, path)?;
    for document in &documents {
        if kind_of(document).is_empty() || name_of(document).is_empty() {
            return Err(XpkgError::Package {
                path: path.to_path_buf(),
                reason: "a document without kind or metadata.name".to_owned(),
            });
        }
    }
    Ok(documents)
}

/// The `*.yaml` and `*.yml` files of `dir`, by name.
fn yaml_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| XpkgError::io(format!("listing {}", dir.display()), e))?;
    let mut files = Vec::new();
    for entry in entries {
        let path = entry
            .map_err(|e| XpkgError::io(format!("listing {}", dir.display()), e))?
            .path();
        if path.is_file()
            && path
                .extension()
                .is_some_and(|ext| ext == "yaml" || ext == "yml")
        {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

/// Documents as one `---`-separated stream. Emitted from the parsed form
/// (key order kept), so a stream always has one layout whatever the
/// files' comments and spacing.
fn to_stream(documents: &[Value], what: &str) -> Result<String> {
    let mut stream = String::new();
    for document in documents {
        stream.push_str("---\n");
        stream.push_str(
            &serde_yaml::to_string(document).map_err(|error| XpkgError::Yaml {
                path: PathBuf::from(what),
                index: 0,
                error,
            })?,
        );
    }
    Ok(stream)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repository_package() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../package")
    }

    #[test]
    fn the_repository_package_holds_meta_then_mrds_then_the_other_crds() {
        let contents = read_package_dir(&repository_package()).unwrap();
        let kinds: Vec<&str> = contents.objects.iter().map(|o| o.kind.as_str()).collect();
        assert_eq!(kinds[0], "Provider");
        let mrds: BTreeSet<&str> = contents
            .objects
            .iter()
            .filter(|o| o.kind == "ManagedResourceDefinition")
            .map(|o| o.name.as_str())
            .collect();
        let crds: BTreeSet<&str> = contents
            .objects
            .iter()
            .filter(|o| o.kind == "CustomResourceDefinition")
            .map(|o| o.name.as_str())
            .collect();
        // The four managed kinds, namespaced and legacy.
        assert_eq!(mrds.len(), 8, "{mrds:?}");
        assert!(
            mrds.is_disjoint(&crds),
            "a managed resource CRD is in twice"
        );
        assert_eq!(
            crds,
            BTreeSet::from([
                "clusterproviderconfigs.fakecloud.m.crossplane.io",
                "clusterproviderconfigusages.fakecloud.m.crossplane.io",
                "providerconfigs.fakecloud.crossplane.io",
                "providerconfigs.fakecloud.m.crossplane.io",
                "providerconfigusages.fakecloud.crossplane.io",
                "providerconfigusages.fakecloud.m.crossplane.io",
                "databaseinstancequeries.query.fakecloud.m.crossplane.io",
                "nodegroupqueries.query.fakecloud.m.crossplane.io",
                "subnetqueries.query.fakecloud.m.crossplane.io",
                "vpcqueries.query.fakecloud.m.crossplane.io",
            ])
        );
        // The stream parses back to the same objects, in the same order.
        let back = parse_stream(&contents.package_yaml, Path::new("package.yaml")).unwrap();
        assert_eq!(back.len(), contents.objects.len());
        assert!(
            contents
                .package_yaml
                .starts_with("---\napiVersion: meta.pkg.crossplane.io/v1\n")
        );
        let examples = parse_stream(&contents.examples_yaml, Path::new("examples.yaml")).unwrap();
        assert!(
            examples
                .iter()
                .any(|e| kind_of(e) == "ManagedResourceActivationPolicy")
        );
    }

    #[test]
    fn a_new_crd_without_an_mrd_goes_in_by_rule_and_a_bad_object_is_refused() {
        let dir = std::env::temp_dir().join(format!("xpkg-contents-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        copy_dir(&repository_package(), &dir);
        let extra = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n\
                     metadata:\n  name: clusterproviderconfigs.fakecloud.crossplane.io\nspec: {}\n";
        std::fs::write(dir.join("crds/zz_extra.yaml"), extra).unwrap();
        let contents = read_package_dir(&dir).unwrap();
        assert!(
            contents
                .objects
                .iter()
                .any(|o| o.name == "clusterproviderconfigs.fakecloud.crossplane.io")
        );

        std::fs::write(
            dir.join("crds/zz_extra.yaml"),
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: stray\n",
        )
        .unwrap();
        let err = read_package_dir(&dir).unwrap_err();
        assert!(matches!(err, XpkgError::Lint(_)), "{err}");
        assert!(err.to_string().contains("ConfigMap stray"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn copy_dir(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for entry in std::fs::read_dir(from).unwrap() {
            let entry = entry.unwrap();
            let target = to.join(entry.file_name());
            if entry.file_type().unwrap().is_dir() {
                copy_dir(&entry.path(), &target);
            } else {
                std::fs::copy(entry.path(), target).unwrap();
            }
        }
    }
}
