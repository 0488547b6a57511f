//! One error type for building and reading a package, each variant naming
//! the file or image it is about.

use std::path::PathBuf;

/// What went wrong, and in which file or image.
#[derive(Debug, thiserror::Error)]
pub enum XpkgError {
    /// Reading or writing a file failed.
    #[error("{context}")]
    Io {
        context: String,
        #[source]
        error: std::io::Error,
    },
    /// `docker save` could not be run or did not succeed.
    #[error("docker save {image}: {reason}")]
    DockerSave { image: String, reason: String },
    /// A docker-archive tarball is not what `docker save` writes.
    #[error("docker archive {archive}: {reason}")]
    DockerArchive { archive: String, reason: String },
    /// An OCI image layout is missing a part or holds a wrong one.
    #[error("OCI image layout {}: {reason}", layout.display())]
    Layout { layout: PathBuf, reason: String },
    /// A JSON document (image config, manifest, index) does not parse.
    #[error("{what}: invalid JSON")]
    Json {
        what: String,
        #[source]
        error: serde_json::Error,
    },
    /// The OCI types refused a value (a digest, a builder's input).
    #[error("{what}")]
    Oci {
        what: String,
        #[source]
        error: oci_spec::OciSpecError,
    },
    /// A YAML document of the package does not parse.
    #[error("{}: document {index}", path.display())]
    Yaml {
        path: PathBuf,
        index: usize,
        #[source]
        error: serde_yaml::Error,
    },
    /// The package folder holds something the package cannot carry.
    #[error("{}: {reason}", path.display())]
    Package { path: PathBuf, reason: String },
    /// The package's objects break Crossplane's rules for a provider.
    #[error("the package fails Crossplane's provider lint: {0}")]
    Lint(String),
}

impl XpkgError {
    pub(crate) fn io(context: impl Into<String>, error: std::io::Error) -> Self {
        Self::Io {
            context: context.into(),
            error,
        }
    }

    pub(crate) fn archive(archive: impl Into<String>, reason: impl Into<String>) -> Self {
        Self::DockerArchive {
            archive: archive.into(),
            reason: reason.into(),
        }
    }

    pub(crate) fn layout(layout: impl Into<PathBuf>, reason: impl Into<String>) -> Self {
        Self::Layout {
            layout: layout.into(),
            reason: reason.into(),
        }
    }

    pub(crate) fn oci(what: impl Into<String>, error: oci_spec::OciSpecError) -> Self {
        Self::Oci {
            what: what.into(),
            error,
        }
    }
}

pub type Result<T, E = XpkgError> = std::result::Result<T, E>;
