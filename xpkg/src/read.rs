//! Reading a package back the way Crossplane's package manager does: the
//! layer annotated `io.crossplane.xpkg: base` if there is one (more than
//! one is an error), else the image's flattened file system; in either, the
//! first file named `package.yaml`.
//!
//! A docker archive carries no annotations; Crossplane's tools recover them
//! from the config's `io.crossplane.xpkg:<layer digest>` labels, and so
//! does this reader.

use std::collections::BTreeSet;
use std::io::Read;
use std::path::Path;

use flate2::read::GzDecoder;
use oci_spec::image::{ImageConfiguration, ImageIndex, ImageManifest, MediaType};

use crate::docker_archive::{archive_file, archive_files, only_manifest};
use crate::error::{Result, XpkgError};
use crate::image::{ANNOTATION_KEY, BASE_LAYER, PACKAGE_FILE, REF_NAME};
use crate::layer::sha256_hex;

/// How the reader found `package.yaml`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FoundIn {
    /// In the layer the manifest annotates `io.crossplane.xpkg: base`.
    AnnotatedLayer { digest: String },
    /// In the layer the config labels `io.crossplane.xpkg:<digest>: base`.
    LabelledLayer { digest: String },
    /// In the image's file system, all layers applied.
    FlattenedFileSystem,
}

/// `package.yaml` as read from a package image.
#[derive(Debug, Clone)]
pub struct ReadPackage {
    pub package_yaml: String,
    pub found_in: FoundIn,
}

/// A layer: the digest it is stored under, its uncompressed tarball, and
/// its `io.crossplane.xpkg` mark if it has one.
struct StoredLayer {
    digest: String,
    bytes: Vec<u8>,
    mark: Option<String>,
}

/// Reads the image tagged `tag` of the OCI image layout `dir`. Every blob
/// read is checked against its digest.
pub fn read_oci_layout(dir: &Path, tag: &str) -> Result<ReadPackage> {
    let index_path = dir.join("index.json");
    let index = ImageIndex::from_file(&index_path)
        .map_err(|e| XpkgError::oci(format!("reading {}", index_path.display()), e))?;
    let descriptor = index
        .manifests()
        .iter()
        .find(|m| {
            m.annotations()
                .as_ref()
                .and_then(|a| a.get(REF_NAME))
                .is_some_and(|name| name == tag)
        })
        .ok_or_else(|| XpkgError::layout(dir, format!("no manifest tagged {tag}")))?;
    let manifest_json = blob(dir, descriptor.digest().digest())?;
    let manifest = ImageManifest::from_reader(manifest_json.as_slice())
        .map_err(|e| XpkgError::oci(format!("{}: image manifest", dir.display()), e))?;
    let mut layers = Vec::new();
    for layer in manifest.layers() {
        let digest = layer.digest().digest().to_owned();
        let stored = blob(dir, &digest)?;
        let bytes = match layer.media_type() {
            MediaType::ImageLayerGzip => gunzip(&stored, &digest)?,
            MediaType::ImageLayer => stored,
            other => {
                return Err(XpkgError::layout(
                    dir,
                    format!(
                        "layer sha256:{digest} has media type {other}, which this reader does not unpack"
                    ),
                ));
            }
        };
        let mark = layer
            .annotations()
            .as_ref()
            .and_then(|a| a.get(ANNOTATION_KEY))
            .cloned();
        layers.push(StoredLayer {
            digest,
            bytes,
            mark,
        });
    }
    find_package(&layers, &dir.display().to_string(), |digest| {
        FoundIn::AnnotatedLayer { digest }
    })
}

/// Reads the only image of a docker archive, such as the `.xpkg` file.
pub fn read_docker_archive(path: &Path) -> Result<ReadPackage> {
    let name = path.display().to_string();
    let file =
        std::fs::File::open(path).map_err(|e| XpkgError::io(format!("opening {name}"), e))?;
    let files = archive_files(file, &name)?;
    let manifest = only_manifest(&files, &name)?;
    let config =
        ImageConfiguration::from_reader(archive_file(&files, &manifest.config, &name)?.as_slice())
            .map_err(|e| XpkgError::oci(format!("{name}: image config {}", manifest.config), e))?;
    let labels = config
        .config()
        .as_ref()
        .and_then(|c| c.labels().clone())
        .unwrap_or_default();
    let mut layers = Vec::new();
    for layer_path in &manifest.layers {
        let stored = archive_file(&files, layer_path, &name)?;
        let digest = sha256_hex(stored);
        let bytes = if stored.starts_with(&[0x1f, 0x8b]) {
            gunzip(stored, &digest)?
        } else {
            stored.clone()
        };
        let mark = labels
            .get(&format!("{ANNOTATION_KEY}:sha256:{digest}"))
            .cloned();
        layers.push(StoredLayer {
            digest,
            bytes,
            mark,
        });
    }
    find_package(&layers, &name, |digest| FoundIn::LabelledLayer { digest })
}

/// Crossplane's search: the one base layer, else the flattened file system.
fn find_package(
    layers: &[StoredLayer],
    image: &str,
    found: impl Fn(String) -> FoundIn,
) -> Result<ReadPackage> {
    let marked: Vec<&StoredLayer> = layers
        .iter()
        .filter(|l| l.mark.as_deref() == Some(BASE_LAYER))
        .collect();
    match marked.as_slice() {
        [] => flattened_package(layers, image),
        [layer] => {
            let package_yaml = file_in_layer(&layer.bytes, &layer.digest)?.ok_or_else(|| {
                XpkgError::archive(
                    image,
                    format!(
                        "the base layer sha256:{} holds no {PACKAGE_FILE}",
                        layer.digest
                    ),
                )
            })?;
            Ok(ReadPackage {
                package_yaml,
                found_in: found(layer.digest.clone()),
            })
        }
        _ => Err(XpkgError::archive(
            image,
            format!(
                "{} layers are annotated {ANNOTATION_KEY}: {BASE_LAYER}; Crossplane accepts one",
                marked.len()
            ),
        )),
    }
}

/// The first `package.yaml` of the flattened file system: layers from the
/// top down, a file hidden by a whiteout (`.wh.<name>`, or `.wh..wh..opq`
/// for a whole folder) in a layer above is skipped.
fn flattened_package(layers: &[StoredLayer], image: &str) -> Result<ReadPackage> {
    let mut removed: BTreeSet<String> = BTreeSet::new();
    let mut opaque: BTreeSet<String> = BTreeSet::new();
    for layer in layers.iter().rev() {
        let mut layer_removed = Vec::new();
        let mut layer_opaque = Vec::new();
        let mut archive = tar::Archive::new(layer.bytes.as_slice());
        let entries = archive
            .entries()
            .map_err(|e| XpkgError::io(format!("reading layer sha256:{}", layer.digest), e))?;
        for entry in entries {
            let mut entry = entry
                .map_err(|e| XpkgError::io(format!("reading layer sha256:{}", layer.digest), e))?;
            let path = entry_path(&entry, &layer.digest)?;
            let (folder, base) = path.rsplit_once('/').unwrap_or(("", path.as_str()));
            let hidden = removed.contains(&path)
                || opaque
                    .iter()
                    .any(|dir| folder == dir || folder.starts_with(&format!("{dir}/")));
            if base == ".wh..wh..opq" {
                layer_opaque.push(folder.to_owned());
            } else if let Some(name) = base.strip_prefix(".wh.") {
                layer_removed.push(if folder.is_empty() {
                    name.to_owned()
                } else {
                    format!("{folder}/{name}")
                });
            } else if base == PACKAGE_FILE && !hidden && entry.header().entry_type().is_file() {
                return Ok(ReadPackage {
                    package_yaml: read_text(&mut entry, &layer.digest)?,
                    found_in: FoundIn::FlattenedFileSystem,
                });
            }
        }
        removed.extend(layer_removed);
        opaque.extend(layer_opaque);
    }
    Err(XpkgError::archive(
        image,
        format!(
            "no layer is annotated {ANNOTATION_KEY}: {BASE_LAYER} and its file system holds no {PACKAGE_FILE}"
        ),
    ))
}

/// The first regular file named `package.yaml` in a layer tarball.
fn file_in_layer(tar: &[u8], digest: &str) -> Result<Option<String>> {
    let mut archive = tar::Archive::new(tar);
    let entries = archive
        .entries()
        .map_err(|e| XpkgError::io(format!("reading layer sha256:{digest}"), e))?;
    for entry in entries {
        let mut entry =
            entry.map_err(|e| XpkgError::io(format!("reading layer sha256:{digest}"), e))?;
        let path = entry_path(&entry, digest)?;
        if path.rsplit('/').next() == Some(PACKAGE_FILE) && entry.header().entry_type().is_file() {
            return read_text(&mut entry, digest).map(Some);
        }
    }
    Ok(None)
}

fn entry_path(entry: &tar::Entry<'_, &[u8]>, digest: &str) -> Result<String> {
    Ok(entry
        .path()
        .map_err(|e| {
            XpkgError::io(
                format!("reading an entry's path in layer sha256:{digest}"),
                e,
            )
        })?
        .to_string_lossy()
        .trim_start_matches("./")
        .trim_end_matches('/')
        .to_owned())
}

fn read_text(entry: &mut tar::Entry<'_, &[u8]>, digest: &str) -> Result<String> {
    let mut text = String::new();
    entry.read_to_string(&mut text).map_err(|e| {
        XpkgError::io(
            format!("reading {PACKAGE_FILE} in layer sha256:{digest}"),
            e,
        )
    })?;
    Ok(text)
}

fn gunzip(bytes: &[u8], digest: &str) -> Result<Vec<u8>> {
    let mut tar = Vec::new();
    GzDecoder::new(bytes)
        .read_to_end(&mut tar)
        .map_err(|e| XpkgError::io(format!("decompressing layer sha256:{digest}"), e))?;
    Ok(tar)
}

/// The blob `sha256:<hex>` of an OCI image layout, checked against its
/// digest.
fn blob(dir: &Path, hex: &str) -> Result<Vec<u8>> {
    let path = dir.join("blobs").join("sha256").join(hex);
    let bytes = std::fs::read(&path)
        .map_err(|e| XpkgError::io(format!("reading {}", path.display()), e))?;
    let actual = sha256_hex(&bytes);
    if actual != hex {
        return Err(XpkgError::layout(
            dir,
            format!("blob sha256:{hex} holds content of digest sha256:{actual}"),
        ));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::contents::read_package_dir;
    use crate::docker_archive::{read_archive_file, write_archive};
    use crate::image::{package_image, write_docker_archive, write_oci_layout};
    use crate::layer::{Layer, LayerFile, reproducible_tar};

    /// A folder under the system's temporary one, empty, removed on drop.
    struct Scratch(PathBuf);

    impl Scratch {
        fn new(name: &str) -> Self {
            let dir = std::env::temp_dir().join(format!("xpkg-read-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            Self(dir)
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// A one-layer base image as a docker archive, its layer holding `files`.
    fn base_archive(dir: &Path, files: &[LayerFile<'_>]) -> PathBuf {
        let layer = Layer::from_tar(&reproducible_tar(files).unwrap(), "base").unwrap();
        let config = format!(
            r#"{{"architecture":"amd64","os":"linux","config":{{"Entrypoint":["/bin/provider"]}},"rootfs":{{"type":"layers","diff_ids":["sha256:{}"]}},"history":[{{"created_by":"base"}}]}}"#,
            layer.diff_id
        );
        let path = dir.join("base.tar");
        write_archive(&path, config.as_bytes(), &[layer], "base:test").unwrap();
        path
    }

    fn package_dir() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../package")
    }

    #[test]
    fn both_outputs_are_read_through_their_marks_and_an_unmarked_image_by_its_file_system() {
        let scratch = Scratch::new("marks");
        let base = read_archive_file(&base_archive(
            &scratch.0,
            &[LayerFile {
                path: "bin/provider",
                contents: b"#!",
            }],
        ))
        .unwrap();
        let contents = read_package_dir(&package_dir()).unwrap();
        let image = package_image(&base, &contents).unwrap();
        let base_digest = image.layers[1].digest.clone();
        let layout = scratch.0.join("layout");
        write_oci_layout(&layout, &image, "v1").unwrap();
        let archive = scratch.0.join("package.xpkg");
        write_docker_archive(&archive, &image, "repo:v1").unwrap();

        let read = read_oci_layout(&layout, "v1").unwrap();
        assert_eq!(
            read.found_in,
            FoundIn::AnnotatedLayer {
                digest: base_digest.clone()
            }
        );
        assert_eq!(read.package_yaml, contents.package_yaml);
        let read = read_docker_archive(&archive).unwrap();
        assert_eq!(
            read.found_in,
            FoundIn::LabelledLayer {
                digest: base_digest
            }
        );
        assert_eq!(read.package_yaml, contents.package_yaml);
        assert!(read_oci_layout(&layout, "v2").is_err(), "no such tag");

        // The same image without its labels: the flattened file system.
        let config: serde_json::Value = serde_json::from_slice(&image.config_json).unwrap();
        let mut unlabelled = config.clone();
        unlabelled["config"]
            .as_object_mut()
            .unwrap()
            .remove("Labels");
        let unlabelled = serde_json::to_vec(&unlabelled).unwrap();
        let plain = scratch.0.join("plain.tar");
        write_archive(&plain, &unlabelled, &image.layers, "repo:plain").unwrap();
        let read = read_docker_archive(&plain).unwrap();
        assert_eq!(read.found_in, FoundIn::FlattenedFileSystem);
        assert_eq!(read.package_yaml, contents.package_yaml);

        // A blob that does not match its digest is refused.
        let blob = layout.join("blobs/sha256").join(&image.layers[1].digest);
        std::fs::write(&blob, b"tampered").unwrap();
        let err = read_oci_layout(&layout, "v1").unwrap_err().to_string();
        assert!(err.contains("holds content of digest"), "{err}");
    }

    #[test]
    fn the_flattened_file_system_honours_whiteouts_and_two_base_layers_are_refused() {
        let stored = |files: &[LayerFile<'_>], mark: Option<&str>| {
            let tar = reproducible_tar(files).unwrap();
            StoredLayer {
                digest: crate::layer::sha256_hex(&tar),
                bytes: tar,
                mark: mark.map(str::to_owned),
            }
        };
        let lower = stored(
            &[LayerFile {
                path: "pkg/package.yaml",
                contents: b"old",
            }],
            None,
        );
        let removed = stored(
            &[LayerFile {
                path: "pkg/.wh.package.yaml",
                contents: b"",
            }],
            None,
        );
        let upper = stored(
            &[LayerFile {
                path: "other/package.yaml",
                contents: b"new",
            }],
            None,
        );
        let read = find_package(&[lower, removed], "test", |_| unreachable!());
        let err = read.unwrap_err().to_string();
        assert!(err.contains("holds no package.yaml"), "{err}");

        let lower = stored(
            &[LayerFile {
                path: "pkg/package.yaml",
                contents: b"old",
            }],
            None,
        );
        let read = find_package(&[lower, upper], "test", |_| unreachable!()).unwrap();
        assert_eq!(
            (read.package_yaml.as_str(), read.found_in),
            ("new", FoundIn::FlattenedFileSystem)
        );

        let one = stored(
            &[LayerFile {
                path: "package.yaml",
                contents: b"a",
            }],
            Some(BASE_LAYER),
        );
        let two = stored(
            &[LayerFile {
                path: "package.yaml",
                contents: b"b",
            }],
            Some(BASE_LAYER),
        );
        let err = find_package(&[one, two], "test", |digest| FoundIn::AnnotatedLayer {
            digest,
        })
        .unwrap_err()
        .to_string();
        assert!(err.contains("2 layers are annotated"), "{err}");
    }
}
