//! The package image: the provider's runtime image plus the two package
//! layers, marked where Crossplane looks for them, written as an OCI image
//! layout and as a docker archive.

use std::collections::HashMap;
use std::path::Path;

use oci_spec::image::{
    Descriptor, DescriptorBuilder, HistoryBuilder, ImageConfiguration, ImageIndexBuilder,
    ImageManifestBuilder, MediaType, OciLayoutBuilder, SCHEMA_VERSION,
};

use crate::contents::PackageContents;
use crate::docker_archive::{ArchiveImage, write_archive};
use crate::error::{Result, XpkgError};
use crate::layer::{Layer, LayerFile, canonical_json, reproducible_tar, sha256_digest, sha256_hex};

/// The layer annotation (and, with `:<layer digest>` appended, the config
/// label) by which Crossplane finds a package's layers.
pub const ANNOTATION_KEY: &str = "io.crossplane.xpkg";
/// The annotation value of the layer holding `package.yaml`.
pub const BASE_LAYER: &str = "base";
/// The annotation value of the layer holding `.up/examples.yaml`.
pub const EXAMPLES_LAYER: &str = "upbound";
/// The package file Crossplane's package manager reads.
pub const PACKAGE_FILE: &str = "package.yaml";
/// Where the examples go (Upbound's convention, which Crossplane keeps).
pub const EXAMPLES_FILE: &str = ".up/examples.yaml";
/// The index annotation that names a manifest in an OCI image layout (the
/// `<tag>` of `oci:<layout>:<tag>`).
pub const REF_NAME: &str = "org.opencontainers.image.ref.name";

/// A built package image, ready to write.
#[derive(Debug)]
pub struct PackageImage {
    /// The image config, as stored (its digest is the image id).
    pub config_json: Vec<u8>,
    /// The OCI image manifest, as stored.
    pub manifest_json: Vec<u8>,
    /// Every layer, the provider image's first, then `base`, then `upbound`.
    pub layers: Vec<Layer>,
    /// The layer annotations, by layer index, as the manifest carries them.
    pub annotations: Vec<Option<String>>,
}

impl PackageImage {
    /// Hex SHA-256 of the manifest: the digest a registry serves it by.
    pub fn manifest_digest(&self) -> String {
        sha256_hex(&self.manifest_json)
    }
}

/// The provider image with the package's layers on top.
///
/// The config keeps the provider image's (as the OCI type, so Docker-only
/// fields such as `container_config` go), gains a diff id and a history
/// entry per new layer, and a label `io.crossplane.xpkg:sha256:<digest>`
/// per package layer (what Crossplane's tools read from a docker archive,
/// which has no annotations). Nothing depends on the clock: the same inputs
/// give the same digests.
pub fn package_image(base: &ArchiveImage, contents: &PackageContents) -> Result<PackageImage> {
    let base_layer = Layer::from_tar(
        &reproducible_tar(&[LayerFile {
            path: PACKAGE_FILE,
            contents: contents.package_yaml.as_bytes(),
        }])?,
        PACKAGE_FILE,
    )?;
    let examples_layer = Layer::from_tar(
        &reproducible_tar(&[LayerFile {
            path: EXAMPLES_FILE,
            contents: contents.examples_yaml.as_bytes(),
        }])?,
        EXAMPLES_FILE,
    )?;

    let mut config: ImageConfiguration = base.config.clone();
    let mut runtime = config.config().clone().unwrap_or_default();
    let mut labels = runtime.labels().clone().unwrap_or_default();
    let mut history = config.history().clone().unwrap_or_default();
    for (layer, mark, file) in [
        (&base_layer, BASE_LAYER, PACKAGE_FILE),
        (&examples_layer, EXAMPLES_LAYER, EXAMPLES_FILE),
    ] {
        labels.insert(
            format!("{ANNOTATION_KEY}:sha256:{}", layer.digest),
            mark.to_owned(),
        );
        config
            .rootfs_mut()
            .diff_ids_mut()
            .push(format!("sha256:{}", layer.diff_id));
        history.push(
            HistoryBuilder::default()
                .created_by(format!("xpkg: {file} ({ANNOTATION_KEY}: {mark})"))
                .comment("Crossplane package layer")
                .build()
                .map_err(|e| XpkgError::oci("history entry", e))?,
        );
    }
    runtime.set_labels(Some(labels));
    config.set_config(Some(runtime));
    config.set_history(Some(history));
    let config_json = canonical_json(&config, "package image config")?;

    let mut layers = base.layers.clone();
    let mut annotations = vec![None; layers.len()];
    layers.push(base_layer);
    annotations.push(Some(BASE_LAYER.to_owned()));
    layers.push(examples_layer);
    annotations.push(Some(EXAMPLES_LAYER.to_owned()));

    let mut layer_descriptors = Vec::with_capacity(layers.len());
    for (layer, annotation) in layers.iter().zip(&annotations) {
        let mut descriptor =
            descriptor(MediaType::ImageLayerGzip, &layer.digest, layer.gzip.len())?;
        if let Some(mark) = annotation {
            descriptor.set_annotations(Some(HashMap::from([(
                ANNOTATION_KEY.to_owned(),
                mark.clone(),
            )])));
        }
        layer_descriptors.push(descriptor);
    }
    let manifest = ImageManifestBuilder::default()
        .schema_version(SCHEMA_VERSION)
        .media_type(MediaType::ImageManifest)
        .config(descriptor(
            MediaType::ImageConfig,
            &sha256_hex(&config_json),
            config_json.len(),
        )?)
        .layers(layer_descriptors)
        .build()
        .map_err(|e| XpkgError::oci("image manifest", e))?;
    Ok(PackageImage {
        manifest_json: canonical_json(&manifest, "image manifest")?,
        config_json,
        layers,
        annotations,
    })
}

fn descriptor(media_type: MediaType, hex: &str, size: usize) -> Result<Descriptor> {
    DescriptorBuilder::default()
        .media_type(media_type)
        .digest(sha256_digest(hex)?)
        .size(size as u64)
        .build()
        .map_err(|e| XpkgError::oci(format!("descriptor of sha256:{hex}"), e))
}

/// Writes `image` as an OCI image layout in `dir` (created; must not exist
/// or be empty): `oci-layout`, `index.json` naming the manifest `tag`, and
/// every blob under `blobs/sha256/`.
pub fn write_oci_layout(dir: &Path, image: &PackageImage, tag: &str) -> Result<()> {
    let blobs = dir.join("blobs").join("sha256");
    std::fs::create_dir_all(&blobs)
        .map_err(|e| XpkgError::io(format!("creating {}", blobs.display()), e))?;
    let write = |path: &Path, bytes: &[u8]| {
        std::fs::write(path, bytes)
            .map_err(|e| XpkgError::io(format!("writing {}", path.display()), e))
    };
    write(
        &blobs.join(sha256_hex(&image.config_json)),
        &image.config_json,
    )?;
    write(&blobs.join(image.manifest_digest()), &image.manifest_json)?;
    for layer in &image.layers {
        write(&blobs.join(&layer.digest), &layer.gzip)?;
    }

    let mut manifest = descriptor(
        MediaType::ImageManifest,
        &image.manifest_digest(),
        image.manifest_json.len(),
    )?;
    manifest.set_annotations(Some(HashMap::from([(REF_NAME.to_owned(), tag.to_owned())])));
    let index = ImageIndexBuilder::default()
        .schema_version(SCHEMA_VERSION)
        .media_type(MediaType::ImageIndex)
        .manifests(vec![manifest])
        .build()
        .map_err(|e| XpkgError::oci("image index", e))?;
    write(
        &dir.join("index.json"),
        &canonical_json(&index, "index.json")?,
    )?;
    let layout = OciLayoutBuilder::default()
        .image_layout_version("1.0.0")
        .build()
        .map_err(|e| XpkgError::oci("oci-layout", e))?;
    write(
        &dir.join("oci-layout"),
        &canonical_json(&layout, "oci-layout")?,
    )
}

/// Writes `image` as a docker archive that `docker load` tags `repo_tag`.
pub fn write_docker_archive(path: &Path, image: &PackageImage, repo_tag: &str) -> Result<()> {
    write_archive(path, &image.config_json, &image.layers, repo_tag)
}
