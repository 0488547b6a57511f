//! The docker-archive format: what `docker save` writes and `docker load`,
//! `kind load image-archive` and `skopeo docker-archive:` read.
//!
//! No crate reads or writes it (the OCI crates cover the OCI formats only),
//! so this module does, from its three parts: a tar holding a
//! `manifest.json` (a JSON array, one entry per image, naming its config
//! file, repo tags and layer files in order), the image config, and the
//! layer tarballs (plain, as `docker save` writes them, or gzip-compressed,
//! as Crossplane's and go-containerregistry's tools write them).

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};

use oci_spec::image::ImageConfiguration;
use serde::{Deserialize, Serialize};

use crate::error::{Result, XpkgError};
use crate::layer::{Layer, canonical_json, sha256_hex};

/// One entry of a docker archive's `manifest.json`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ArchiveManifest {
    /// Path of the image config inside the archive.
    pub config: String,
    /// `repository:tag` names `docker load` gives the image.
    #[serde(default)]
    pub repo_tags: Option<Vec<String>>,
    /// Paths of the layer tarballs inside the archive, base layer first.
    pub layers: Vec<String>,
}

/// An image read from a docker archive.
#[derive(Debug)]
pub struct ArchiveImage {
    /// The config exactly as the archive holds it (its digest is the
    /// image id).
    pub config_json: Vec<u8>,
    /// The same config as the OCI type.
    pub config: ImageConfiguration,
    /// The layers, base first, each checked against the config's diff id.
    pub layers: Vec<Layer>,
}

/// Saves a local Docker image with `docker save` and reads it.
pub fn docker_save(image: &str) -> Result<ArchiveImage> {
    let mut docker = Command::new("docker");
    docker.args(["save", image]);
    save_with(docker, image)
}

/// Runs `command`, which writes `image` as a docker archive to its standard
/// output, and reads that archive.
fn save_with(mut command: Command, image: &str) -> Result<ArchiveImage> {
    let save_error = |reason: String| XpkgError::DockerSave {
        image: image.to_owned(),
        reason,
    };
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            save_error(format!(
                "cannot run docker (is the Docker CLI installed?): {e}"
            ))
        })?;
    let mut stdout = child
        .stdout
        .take()
        .ok_or_else(|| save_error("no stdout from docker save".to_owned()))?;
    let read = read_archive(&mut stdout, &format!("docker save {image}"));
    // The tar reader stops at the archive's first end block, so docker may
    // still be writing the rest (the second end block, padding). Closing the
    // pipe now would kill it with SIGPIPE and fail a good save: drain it.
    std::io::copy(&mut stdout, &mut std::io::sink())
        .map_err(|e| save_error(format!("reading the end of docker's output: {e}")))?;
    drop(stdout);
    let output = child
        .wait_with_output()
        .map_err(|e| save_error(format!("waiting for docker: {e}")))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let hint = if stderr.contains("No such image")
            || stderr.contains("reference does not exist")
        {
            " (the provider image is made by scripts/images, then scripts/host-images or scripts/compose build)"
        } else {
            ""
        };
        return Err(save_error(format!(
            "{}: {}{hint}",
            output.status,
            stderr.trim()
        )));
    }
    read
}

/// Reads a docker archive file.
pub fn read_archive_file(path: &Path) -> Result<ArchiveImage> {
    let file = std::fs::File::open(path)
        .map_err(|e| XpkgError::io(format!("opening {}", path.display()), e))?;
    read_archive(file, &path.display().to_string())
}

/// Reads the only image of a docker archive. `name` says in errors which
/// archive it is.
pub fn read_archive(reader: impl Read, name: &str) -> Result<ArchiveImage> {
    let files = archive_files(reader, name)?;
    let manifest = only_manifest(&files, name)?;
    let file = |path: &str| archive_file(&files, path, name);
    let config_json = file(&manifest.config)?.clone();
    let config = ImageConfiguration::from_reader(config_json.as_slice())
        .map_err(|e| XpkgError::oci(format!("{name}: image config {}", manifest.config), e))?;
    let diff_ids = config.rootfs().diff_ids();
    if diff_ids.len() != manifest.layers.len() {
        return Err(XpkgError::archive(
            name,
            format!(
                "the config lists {} layers (rootfs.diff_ids), manifest.json {}",
                diff_ids.len(),
                manifest.layers.len()
            ),
        ));
    }
    let mut layers = Vec::with_capacity(manifest.layers.len());
    for (path, diff_id) in manifest.layers.iter().zip(diff_ids) {
        let layer = Layer::from_tarball(file(path)?, &format!("{name}: layer {path}"))?;
        if format!("sha256:{}", layer.diff_id) != *diff_id {
            return Err(XpkgError::archive(
                name,
                format!(
                    "layer {path} is sha256:{} uncompressed, but the config says {diff_id}",
                    layer.diff_id
                ),
            ));
        }
        layers.push(layer);
    }
    Ok(ArchiveImage {
        config_json,
        config,
        layers,
    })
}

/// The `manifest.json` entry of an archive that holds one image.
pub(crate) fn only_manifest(
    files: &BTreeMap<String, Vec<u8>>,
    name: &str,
) -> Result<ArchiveManifest> {
    let manifest_json = files
        .get("manifest.json")
        .ok_or_else(|| XpkgError::archive(name, "no manifest.json"))?;
    let mut manifests: Vec<ArchiveManifest> =
        serde_json::from_slice(manifest_json).map_err(|error| XpkgError::Json {
            what: format!("{name}: manifest.json"),
            error,
        })?;
    if manifests.len() != 1 {
        return Err(XpkgError::archive(
            name,
            format!("holds {} images; exactly one expected", manifests.len()),
        ));
    }
    Ok(manifests.remove(0))
}

/// The file at `path` (as `manifest.json` names it) of an archive.
pub(crate) fn archive_file<'a>(
    files: &'a BTreeMap<String, Vec<u8>>,
    path: &str,
    name: &str,
) -> Result<&'a Vec<u8>> {
    files.get(path.trim_start_matches("./")).ok_or_else(|| {
        XpkgError::archive(
            name,
            format!("manifest.json names {path}, which it does not hold"),
        )
    })
}

/// Every regular file of the archive by path, symbolic links resolved
/// (`docker save` links a layer that two images share).
pub(crate) fn archive_files(reader: impl Read, name: &str) -> Result<BTreeMap<String, Vec<u8>>> {
    let mut archive = tar::Archive::new(reader);
    let mut files = BTreeMap::new();
    let mut links = Vec::new();
    let entries = archive
        .entries()
        .map_err(|e| XpkgError::io(format!("reading {name}"), e))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| XpkgError::io(format!("reading {name}"), e))?;
        let path = entry
            .path()
            .map_err(|e| XpkgError::io(format!("reading an entry's path in {name}"), e))?
            .to_string_lossy()
            .trim_start_matches("./")
            .to_owned();
        match entry.header().entry_type() {
            tar::EntryType::Regular => {
                let mut contents = Vec::new();
                entry
                    .read_to_end(&mut contents)
                    .map_err(|e| XpkgError::io(format!("reading {path} in {name}"), e))?;
                files.insert(path, contents);
            }
            tar::EntryType::Symlink => {
                let target = entry
                    .link_name()
                    .map_err(|e| XpkgError::io(format!("reading link {path} in {name}"), e))?
                    .ok_or_else(|| {
                        XpkgError::archive(name, format!("link {path} without target"))
                    })?;
                links.push((path, target.to_string_lossy().into_owned()));
            }
            _ => {}
        }
    }
    for (path, target) in links {
        // Targets are relative to the link's folder.
        let folder = path.rsplit_once('/').map_or("", |(folder, _)| folder);
        let mut resolved: Vec<&str> = folder.split('/').filter(|p| !p.is_empty()).collect();
        for part in target.split('/') {
            match part {
                "" | "." => {}
                ".." => {
                    resolved.pop();
                }
                part => resolved.push(part),
            }
        }
        let resolved = resolved.join("/");
        let contents = files.get(&resolved).cloned().ok_or_else(|| {
            XpkgError::archive(
                name,
                format!("link {path} points at {target}, which it does not hold"),
            )
        })?;
        files.insert(path, contents);
    }
    Ok(files)
}

/// Writes `config_json` and `layers` as a docker archive tagged
/// `repo_tag`. Layers are stored gzip-compressed under their digest (as
/// Crossplane's own `crossplane xpkg build` stores them), so the digests
/// its `io.crossplane.xpkg:<digest>` labels name are the files' digests
/// here too. Entries are in a fixed order with fixed metadata: the same
/// image gives the same bytes.
pub fn write_archive(
    path: &Path,
    config_json: &[u8],
    layers: &[Layer],
    repo_tag: &str,
) -> Result<()> {
    let what = path.display().to_string();
    let config_path = format!("{}.json", sha256_hex(config_json));
    let layer_paths: Vec<String> = layers
        .iter()
        .map(|layer| format!("{}.tar.gz", layer.digest))
        .collect();
    let manifest = vec![ArchiveManifest {
        config: config_path.clone(),
        repo_tags: Some(vec![repo_tag.to_owned()]),
        layers: layer_paths.clone(),
    }];
    let manifest_json = canonical_json(&manifest, &format!("{what}: manifest.json"))?;

    let mut entries: Vec<(&str, &[u8])> = vec![(&config_path, config_json)];
    for (path, layer) in layer_paths.iter().zip(layers) {
        entries.push((path, &layer.gzip));
    }
    entries.sort_by(|a, b| a.0.cmp(b.0));
    entries.dedup_by(|a, b| a.0 == b.0);
    entries.push(("manifest.json", &manifest_json));

    let file =
        std::fs::File::create(path).map_err(|e| XpkgError::io(format!("creating {what}"), e))?;
    let mut builder = tar::Builder::new(std::io::BufWriter::new(file));
    for (name, contents) in entries {
        let mut header = tar::Header::new_ustar();
        header.set_entry_type(tar::EntryType::Regular);
        header.set_mode(0o644);
        header.set_uid(0);
        header.set_gid(0);
        header.set_mtime(0);
        header.set_size(contents.len() as u64);
        builder
            .append_data(&mut header, name, contents)
            .map_err(|e| XpkgError::io(format!("writing {name} to {what}"), e))?;
    }
    let mut writer = builder
        .into_inner()
        .map_err(|e| XpkgError::io(format!("finishing {what}"), e))?;
    std::io::Write::flush(&mut writer).map_err(|e| XpkgError::io(format!("writing {what}"), e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layer::{LayerFile, reproducible_tar};

    /// A one-layer image written as a docker archive at `path`.
    fn archive(path: &Path) -> Layer {
        let files = [LayerFile {
            path: "bin/provider",
            contents: b"#!",
        }];
        let layer = Layer::from_tar(&reproducible_tar(&files).unwrap(), "base").unwrap();
        let config = format!(
            r#"{{"architecture":"amd64","os":"linux","rootfs":{{"type":"layers","diff_ids":["sha256:{}"]}}}}"#,
            layer.diff_id
        );
        write_archive(path, config.as_bytes(), std::slice::from_ref(&layer), "x:1").unwrap();
        layer
    }

    /// `sh -c script` with the archive at `path` as `$1`.
    fn shell(script: &str, path: &Path) -> Command {
        let mut command = Command::new("sh");
        command.args(["-c", script, "sh"]).arg(path);
        command
    }

    #[test]
    fn a_save_still_writing_after_the_end_block_is_read_whole_and_succeeds() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("image.tar");
        let layer = archive(&path);
        // As docker can: the archive, then a pause, then more end blocks.
        // Closing the pipe before they are written kills the writer.
        let late_padding = "cat \"$1\"; sleep 0.3; head -c 10240 /dev/zero";
        let image = save_with(shell(late_padding, &path), "x:1").unwrap();
        assert_eq!(image.layers.len(), 1);
        assert_eq!(image.layers[0].diff_id, layer.diff_id);
    }

    #[test]
    fn a_failed_save_names_the_image_and_docker_s_message_and_bad_output_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("image.tar");
        archive(&path);
        let missing = "echo 'Error: No such image: x:1' >&2; exit 1";
        let message = save_with(shell(missing, &path), "x:1")
            .unwrap_err()
            .to_string();
        assert!(message.contains("x:1"), "{message}");
        assert!(message.contains("No such image"), "{message}");
        assert!(message.contains("scripts/images"), "{message}");

        let not_a_tar = save_with(shell("echo hello", &path), "x:1").unwrap_err();
        assert!(
            not_a_tar.to_string().contains("docker save x:1"),
            "{not_a_tar}"
        );
    }
}
