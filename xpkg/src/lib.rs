//! Builds the Crossplane package (xpkg) of provider-fakecloud: the
//! provider's runtime image with one layer holding `package.yaml` (the
//! package's meta object, MRDs and other CRDs) and one holding
//! `.up/examples.yaml`, marked the way Crossplane's package manager finds
//! them. Written as a docker archive (`provider-fakecloud-<version>.xpkg`,
//! the format `crossplane xpkg build` writes and `docker load` reads) and
//! as an OCI image layout; [`read`] reads either back as Crossplane does.

pub mod contents;
pub mod docker_archive;
pub mod error;
pub mod image;
pub mod layer;
pub mod lint;
pub mod object;
pub mod read;

use std::path::{Path, PathBuf};

pub use error::XpkgError;

use crate::error::Result;
use crate::image::PackageImage;

/// The package's version: the provider crate's, which this crate shares
/// through `[workspace.package]` (the package's `crossplane.yaml` has no
/// version field; Crossplane takes a package's version from its tag).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The package's name (the Provider's `metadata.name`).
pub const PACKAGE_NAME: &str = "provider-fakecloud";

/// The provider's runtime image, as docker-compose.yml builds it.
pub const DEFAULT_IMAGE: &str = "fakecloud-provider/provider:dev";

/// The repository `docker load` puts the package image in.
pub const DEFAULT_REPOSITORY: &str = "fakecloud-provider/provider-fakecloud-xpkg";

/// Where the provider image comes from.
#[derive(Debug, Clone)]
pub enum BaseImage {
    /// A local Docker image, read with `docker save`.
    Docker(String),
    /// A docker archive file (what `docker save -o` wrote).
    Archive(PathBuf),
}

/// What to build from, and where to.
#[derive(Debug, Clone)]
pub struct BuildOptions {
    pub base: BaseImage,
    /// The repository's `package/` folder.
    pub package_dir: PathBuf,
    /// Where the `.xpkg` file and the OCI layout folder go (created).
    pub out_dir: PathBuf,
    /// The `docker load` repository; the tag is [`VERSION`].
    pub repository: String,
}

/// What a build wrote.
#[derive(Debug)]
pub struct Built {
    /// The docker archive, `provider-fakecloud-<version>.xpkg`.
    pub xpkg: PathBuf,
    /// The OCI image layout folder, `provider-fakecloud-<version>.oci`.
    pub oci_layout: PathBuf,
    /// The tag of the image in the OCI layout (`oci:<layout>:<tag>`).
    pub tag: String,
    /// `repository:version`, the name `docker load` gives the image.
    pub repo_tag: String,
    pub image: PackageImage,
    /// The objects of `package.yaml`, in order.
    pub objects: Vec<contents::ObjectRef>,
}

/// Builds the package: reads the provider image and `package/`, and
/// writes both outputs, replacing earlier ones.
pub fn build(options: &BuildOptions) -> Result<Built> {
    let contents = contents::read_package_dir(&options.package_dir)?;
    let base = match &options.base {
        BaseImage::Docker(image) => docker_archive::docker_save(image)?,
        BaseImage::Archive(path) => docker_archive::read_archive_file(path)?,
    };
    let image = image::package_image(&base, &contents)?;

    let out = &options.out_dir;
    std::fs::create_dir_all(out)
        .map_err(|e| XpkgError::io(format!("creating {}", out.display()), e))?;
    let stem = format!("{PACKAGE_NAME}-{VERSION}");
    let xpkg = out.join(format!("{stem}.xpkg"));
    let oci_layout = out.join(format!("{stem}.oci"));
    remove_if_present(&oci_layout)?;
    let repo_tag = format!("{}:{VERSION}", options.repository);
    image::write_docker_archive(&xpkg, &image, &repo_tag)?;
    image::write_oci_layout(&oci_layout, &image, VERSION)?;
    Ok(Built {
        xpkg,
        oci_layout,
        tag: VERSION.to_owned(),
        repo_tag,
        image,
        objects: contents.objects,
    })
}

fn remove_if_present(dir: &Path) -> Result<()> {
    match std::fs::remove_dir_all(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(XpkgError::io(
            format!("removing the earlier {}", dir.display()),
            e,
        )),
        _ => Ok(()),
    }
}
