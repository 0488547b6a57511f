//! Where the control-plane binaries come from.
//!
//! `KUBEBUILDER_ASSETS` is controller-runtime's convention for "the folder
//! with etcd and kube-apiserver", so CI systems that already provision
//! envtest binaries work unchanged. When it is unset or incomplete, the cache
//! that `e2e/control-plane/install.sh` fills is used, so a developer who ran
//! the script once needs no environment at all.

use std::path::{Path, PathBuf};

use crate::error::ClusterError;

/// Names of the three binaries, as they appear in an assets folder.
pub const ETCD: &str = "etcd";
pub const KUBE_APISERVER: &str = "kube-apiserver";
pub const KUBE_CONTROLLER_MANAGER: &str = "kube-controller-manager";

/// Set to `off` to ignore the install script's cache (used to prove that a
/// missing control plane fails loudly on a machine that has the cache).
pub const CACHE_SWITCH_ENV: &str = "E2E_ASSET_CACHE";

/// The binaries one local control plane runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assets {
    pub dir: PathBuf,
    pub etcd: PathBuf,
    pub kube_apiserver: PathBuf,
    /// Absent only when the caller said it needs no garbage collector.
    pub kube_controller_manager: Option<PathBuf>,
}

/// Where to look, made explicit so the lookup is testable without touching
/// the process environment.
#[derive(Debug, Clone, Default)]
pub struct AssetSearch {
    /// The `KUBEBUILDER_ASSETS` folder, looked at first.
    pub kubebuilder_assets: Option<PathBuf>,
    /// The install script's cache root (holding `control-plane/kubernetes-*`);
    /// `None` disables the fallback.
    pub cache_root: Option<PathBuf>,
}

impl AssetSearch {
    /// Reads `KUBEBUILDER_ASSETS`, `E2E_ASSET_CACHE` and the cache root the
    /// install script uses (`FCP_CACHE_DIR`, else `$XDG_CACHE_HOME` or
    /// `~/.cache`, plus `fakecloud-provider`).
    pub fn from_env() -> Self {
        let kubebuilder_assets = std::env::var_os("KUBEBUILDER_ASSETS")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from);
        let cache_disabled = std::env::var(CACHE_SWITCH_ENV).is_ok_and(|v| v == "off");
        let cache_root = if cache_disabled {
            None
        } else {
            std::env::var_os("FCP_CACHE_DIR")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
                .or_else(|| dirs::cache_dir().map(|d| d.join("fakecloud-provider")))
        };
        Self {
            kubebuilder_assets,
            cache_root,
        }
    }

    /// Finds a folder holding every binary needed; `KUBEBUILDER_ASSETS`
    /// first, then the newest complete cache folder.
    pub fn locate(&self, need_controller_manager: bool) -> Result<Assets, ClusterError> {
        let mut searched = Vec::new();
        let mut candidates = Vec::new();
        match &self.kubebuilder_assets {
            Some(dir) => candidates.push(dir.clone()),
            None => searched.push("KUBEBUILDER_ASSETS is unset".to_owned()),
        }
        match &self.cache_root {
            Some(root) => {
                let parent = root.join("control-plane");
                let cached = cache_folders(&parent);
                if cached.is_empty() {
                    searched.push(format!("no cache folder under {}", parent.display()));
                }
                candidates.extend(cached);
            }
            None => searched.push(format!(
                "the cache fallback is off ({CACHE_SWITCH_ENV}=off)"
            )),
        }
        for dir in candidates {
            match assets_in(&dir, need_controller_manager) {
                Ok(assets) => return Ok(assets),
                Err(missing) => {
                    tracing::warn!(dir = %dir.display(), ?missing, "incomplete control-plane assets folder");
                    searched.push(format!("{} lacks {}", dir.display(), missing.join(", ")));
                }
            }
        }
        Err(ClusterError::AssetsNotFound {
            searched: searched.join("; "),
        })
    }
}

/// The install script's folders, newest version first (names sort by
/// Debian version well enough for the few versions a cache ever holds).
fn cache_folders(parent: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.is_dir()
                && p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("kubernetes-") && !n.contains(".tmp."))
        })
        .collect();
    dirs.sort();
    dirs.reverse();
    dirs
}

/// The binaries in `dir`, or the names of those missing.
fn assets_in(dir: &Path, need_controller_manager: bool) -> Result<Assets, Vec<&'static str>> {
    let find = |name: &'static str| {
        let path = dir.join(name);
        is_executable(&path).then_some(path)
    };
    let etcd = find(ETCD);
    let kube_apiserver = find(KUBE_APISERVER);
    let kube_controller_manager = find(KUBE_CONTROLLER_MANAGER);
    let mut missing = Vec::new();
    if etcd.is_none() {
        missing.push(ETCD);
    }
    if kube_apiserver.is_none() {
        missing.push(KUBE_APISERVER);
    }
    if need_controller_manager && kube_controller_manager.is_none() {
        missing.push(KUBE_CONTROLLER_MANAGER);
    }
    match (etcd, kube_apiserver) {
        (Some(etcd), Some(kube_apiserver)) if missing.is_empty() => Ok(Assets {
            dir: dir.to_path_buf(),
            etcd,
            kube_apiserver,
            kube_controller_manager: kube_controller_manager.filter(|_| need_controller_manager),
        }),
        _ => Err(missing),
    }
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    // metadata() follows symlinks: the cache links etcd to /usr/bin/etcd.
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn fake_binary(dir: &Path, name: &str) {
        let path = dir.join(name);
        std::fs::write(&path, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    fn complete(dir: &Path) {
        for name in [ETCD, KUBE_APISERVER, KUBE_CONTROLLER_MANAGER] {
            fake_binary(dir, name);
        }
    }

    #[test]
    fn kubebuilder_assets_wins_over_the_cache() {
        let kb = tempfile::tempdir().unwrap();
        let cache = tempfile::tempdir().unwrap();
        let cached = cache.path().join("control-plane/kubernetes-1.20");
        std::fs::create_dir_all(&cached).unwrap();
        complete(kb.path());
        complete(&cached);
        let search = AssetSearch {
            kubebuilder_assets: Some(kb.path().into()),
            cache_root: Some(cache.path().into()),
        };
        let assets = search.locate(true).unwrap();
        assert_eq!(assets.dir, kb.path());
        assert_eq!(
            assets.kube_controller_manager,
            Some(kb.path().join(KUBE_CONTROLLER_MANAGER))
        );
    }

    #[test]
    fn incomplete_kubebuilder_assets_falls_back_to_the_newest_cache_folder() {
        let kb = tempfile::tempdir().unwrap();
        fake_binary(kb.path(), ETCD);
        let cache = tempfile::tempdir().unwrap();
        for version in [
            "kubernetes-1.19.0",
            "kubernetes-1.20.2",
            "kubernetes-1.21.0.tmp.42",
        ] {
            let dir = cache.path().join("control-plane").join(version);
            std::fs::create_dir_all(&dir).unwrap();
            complete(&dir);
        }
        let search = AssetSearch {
            kubebuilder_assets: Some(kb.path().into()),
            cache_root: Some(cache.path().into()),
        };
        let assets = search.locate(true).unwrap();
        assert_eq!(
            assets.dir,
            cache.path().join("control-plane/kubernetes-1.20.2")
        );
    }

    #[test]
    fn controller_manager_is_only_required_when_asked_for() {
        let kb = tempfile::tempdir().unwrap();
        fake_binary(kb.path(), ETCD);
        fake_binary(kb.path(), KUBE_APISERVER);
        let search = AssetSearch {
            kubebuilder_assets: Some(kb.path().into()),
            cache_root: None,
        };
        let assets = search.locate(false).unwrap();
        assert_eq!(assets.kube_controller_manager, None);
        let err = search.locate(true).unwrap_err().to_string();
        assert!(err.contains("lacks kube-controller-manager"), "{err}");
    }

    #[test]
    fn nothing_found_names_every_place_searched_and_how_to_provision() {
        let kb = tempfile::tempdir().unwrap();
        let search = AssetSearch {
            kubebuilder_assets: Some(kb.path().into()),
            cache_root: None,
        };
        let err = search.locate(true).unwrap_err();
        assert!(matches!(err, ClusterError::AssetsNotFound { .. }));
        let msg = err.to_string();
        assert!(
            msg.contains(&format!(
                "{} lacks etcd, kube-apiserver, kube-controller-manager",
                kb.path().display()
            )),
            "{msg}"
        );
        assert!(msg.contains("E2E_ASSET_CACHE=off"), "{msg}");
        assert!(msg.contains("e2e/control-plane/install.sh"), "{msg}");
    }

    #[test]
    fn a_non_executable_file_is_not_a_binary() {
        let kb = tempfile::tempdir().unwrap();
        complete(kb.path());
        std::fs::set_permissions(
            kb.path().join(KUBE_APISERVER),
            std::fs::Permissions::from_mode(0o644),
        )
        .unwrap();
        let search = AssetSearch {
            kubebuilder_assets: Some(kb.path().into()),
            cache_root: None,
        };
        let msg = search.locate(true).unwrap_err().to_string();
        assert!(msg.contains("lacks kube-apiserver"), "{msg}");
    }
}
