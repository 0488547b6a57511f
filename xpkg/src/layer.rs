//! Layers and blobs: gzip-compressed layer tarballs with both of their
//! digests, reproducible tarballs of the package's files, and the JSON
//! encoding that makes a config or manifest digest the same on every build.

use std::io::{Read, Write};

use flate2::{Compression, GzBuilder, read::GzDecoder};
use oci_spec::image::{Digest, Sha256Digest};
use serde_json::Value;
use sha2::{Digest as _, Sha256};

use crate::error::{Result, XpkgError};

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// `sha256:<hex>` as the OCI type.
pub fn sha256_digest(hex: &str) -> Result<Digest> {
    hex.parse::<Sha256Digest>()
        .map(Digest::from)
        .map_err(|e| XpkgError::oci(format!("sha256 digest {hex}"), e))
}

/// The two leading bytes of every gzip stream.
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// A layer as an image carries it: a gzip-compressed tarball.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layer {
    /// The compressed bytes: the blob a manifest and a registry name.
    pub gzip: Vec<u8>,
    /// Hex SHA-256 of `gzip`: the manifest's layer digest, and the digest
    /// Crossplane's `io.crossplane.xpkg:<digest>` config labels name.
    pub digest: String,
    /// Hex SHA-256 of the uncompressed tarball: the config's `rootfs.diff_ids`.
    pub diff_id: String,
}

impl Layer {
    /// A layer from a tarball, compressed or not. Compressed input is
    /// decompressed and compressed again, so the same files always give
    /// the same bytes whatever tool compressed them first.
    pub fn from_tarball(bytes: &[u8], what: &str) -> Result<Self> {
        if bytes.starts_with(&GZIP_MAGIC) {
            let mut tar = Vec::new();
            GzDecoder::new(bytes)
                .read_to_end(&mut tar)
                .map_err(|e| XpkgError::io(format!("decompressing {what}"), e))?;
            Self::from_tar(&tar, what)
        } else {
            Self::from_tar(bytes, what)
        }
    }

    /// A layer from an uncompressed tarball.
    ///
    /// The gzip header carries no file name and mtime 0, so equal input
    /// gives equal output.
    pub fn from_tar(tar: &[u8], what: &str) -> Result<Self> {
        let mut encoder = GzBuilder::new()
            .mtime(0)
            .write(Vec::with_capacity(tar.len() / 2), Compression::default());
        encoder
            .write_all(tar)
            .map_err(|e| XpkgError::io(format!("compressing {what}"), e))?;
        let gzip = encoder
            .finish()
            .map_err(|e| XpkgError::io(format!("compressing {what}"), e))?;
        Ok(Self {
            digest: sha256_hex(&gzip),
            diff_id: sha256_hex(tar),
            gzip,
        })
    }
}

/// One file of a package layer.
pub struct LayerFile<'a> {
    /// Relative path in the image's file system, `/`-separated.
    pub path: &'a str,
    pub contents: &'a [u8],
}

/// A reproducible tarball of `files`: entries sorted by path, a directory
/// entry before the files under it, mode 0644 for files and 0755 for
/// directories, owner 0:0 without names, mtime 0. Built twice from the same
/// files, it is the same bytes.
pub fn reproducible_tar(files: &[LayerFile<'_>]) -> Result<Vec<u8>> {
    let mut entries: Vec<(String, Option<&[u8]>)> = Vec::new();
    for file in files {
        let mut parent = String::new();
        let parts: Vec<&str> = file.path.split('/').collect();
        for dir in &parts[..parts.len().saturating_sub(1)] {
            parent.push_str(dir);
            parent.push('/');
            entries.push((parent.clone(), None));
        }
        entries.push((file.path.to_owned(), Some(file.contents)));
    }
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    entries.dedup_by(|a, b| a.0 == b.0 && a.1.is_none() && b.1.is_none());

    let mut builder = tar::Builder::new(Vec::new());
    for (path, contents) in entries {
        let mut header = tar::Header::new_ustar();
        header.set_uid(0);
        header.set_gid(0);
        header.set_mtime(0);
        let data: &[u8] = match contents {
            Some(contents) => {
                header.set_entry_type(tar::EntryType::Regular);
                header.set_mode(0o644);
                header.set_size(contents.len() as u64);
                contents
            }
            None => {
                header.set_entry_type(tar::EntryType::Directory);
                header.set_mode(0o755);
                header.set_size(0);
                &[]
            }
        };
        builder
            .append_data(&mut header, &path, data)
            .map_err(|e| XpkgError::io(format!("adding {path} to a layer"), e))?;
    }
    builder
        .into_inner()
        .map_err(|e| XpkgError::io("finishing a layer tarball", e))
}

/// `value` as compact JSON with every object's keys sorted.
///
/// The OCI types keep labels and annotations in `HashMap`s, which serialize
/// in a different order in every process; sorting makes the config and
/// manifest (and so their digests) depend only on their content. The map is
/// rebuilt key by key so the order holds whether or not another crate of
/// the build turned on `serde_json`'s `preserve_order`.
pub fn canonical_json<T: serde::Serialize>(value: &T, what: &str) -> Result<Vec<u8>> {
    fn sort(value: Value) -> Value {
        match value {
            Value::Object(map) => {
                let mut entries: Vec<(String, Value)> = map.into_iter().collect();
                entries.sort_by(|a, b| a.0.cmp(&b.0));
                Value::Object(entries.into_iter().map(|(k, v)| (k, sort(v))).collect())
            }
            Value::Array(items) => Value::Array(items.into_iter().map(sort).collect()),
            other => other,
        }
    }
    let json_error = |error| XpkgError::Json {
        what: what.to_owned(),
        error,
    };
    let value = serde_json::to_value(value).map_err(json_error)?;
    serde_json::to_vec(&sort(value)).map_err(json_error)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(tar: &[u8]) -> Vec<(String, u32, u64, u64, u64)> {
        let mut archive = tar::Archive::new(tar);
        archive
            .entries()
            .unwrap()
            .map(|entry| {
                let entry = entry.unwrap();
                let header = entry.header();
                (
                    entry.path().unwrap().to_string_lossy().into_owned(),
                    header.mode().unwrap(),
                    header.uid().unwrap(),
                    header.gid().unwrap(),
                    header.mtime().unwrap(),
                )
            })
            .collect()
    }

    #[test]
    fn a_package_tarball_is_sorted_owned_by_root_and_timeless() {
        let files = [
            LayerFile {
                path: ".up/examples.yaml",
                contents: b"b",
            },
            LayerFile {
                path: "package.yaml",
                contents: b"a",
            },
        ];
        let tar = reproducible_tar(&files).unwrap();
        assert_eq!(
            entries(&tar),
            vec![
                (".up/".to_owned(), 0o755, 0, 0, 0),
                (".up/examples.yaml".to_owned(), 0o644, 0, 0, 0),
                ("package.yaml".to_owned(), 0o644, 0, 0, 0),
            ]
        );
        // Input order does not matter; the bytes are the same every time.
        let reversed = [
            LayerFile {
                path: "package.yaml",
                contents: b"a",
            },
            LayerFile {
                path: ".up/examples.yaml",
                contents: b"b",
            },
        ];
        assert_eq!(reproducible_tar(&reversed).unwrap(), tar);
        let layer = Layer::from_tar(&tar, "test").unwrap();
        assert_eq!(layer, Layer::from_tar(&tar, "test").unwrap());
        assert_eq!(layer.diff_id, sha256_hex(&tar));
        assert_ne!(layer.digest, layer.diff_id);
    }

    #[test]
    fn a_compressed_tarball_becomes_the_same_layer_as_its_content() {
        let tar = reproducible_tar(&[LayerFile {
            path: "package.yaml",
            contents: b"x: 1\n",
        }])
        .unwrap();
        // Compressed by another tool's settings: level 1 and a timestamp.
        let mut other = GzBuilder::new()
            .mtime(1_700_000_000)
            .write(Vec::new(), Compression::fast());
        other.write_all(&tar).unwrap();
        let other = other.finish().unwrap();
        assert_eq!(
            Layer::from_tarball(&other, "test").unwrap(),
            Layer::from_tarball(&tar, "test").unwrap()
        );
    }

    #[test]
    fn canonical_json_sorts_keys_at_every_depth() {
        let value = serde_json::json!({"b": {"z": 1, "a": [{"y": 2, "x": 3}]}, "a": null});
        assert_eq!(
            canonical_json(&value, "test").unwrap(),
            br#"{"a":null,"b":{"a":[{"x":3,"y":2}],"z":1}}"#
        );
        let labels: std::collections::HashMap<String, String> =
            (0..50).map(|i| (format!("k{i}"), i.to_string())).collect();
        let first = canonical_json(&labels, "test").unwrap();
        let rebuilt: std::collections::HashMap<String, String> = labels.into_iter().collect();
        assert_eq!(canonical_json(&rebuilt, "test").unwrap(), first);
    }
}
