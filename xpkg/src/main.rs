//! `xpkg`: builds provider-fakecloud's Crossplane package from the
//! provider's runtime image (run through `scripts/xpkg`).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use xpkg::{BaseImage, BuildOptions, DEFAULT_IMAGE, DEFAULT_REPOSITORY};

/// Builds provider-fakecloud-<version>.xpkg (a docker archive) and the same
/// image as an OCI image layout, from the provider's runtime image and the
/// repository's package/ folder.
#[derive(Debug, Parser)]
#[command(version)]
struct Args {
    /// The provider's runtime image, read with `docker save`.
    #[arg(long, default_value = DEFAULT_IMAGE, conflicts_with = "docker_archive")]
    image: String,
    /// Read the provider image from this docker archive instead of Docker.
    #[arg(long)]
    docker_archive: Option<PathBuf>,
    /// The package folder: crossplane.yaml, mrds/, crds/, examples/.
    #[arg(long, default_value = "package")]
    package_dir: PathBuf,
    /// Where the outputs go.
    #[arg(long, default_value = "target/xpkg")]
    out_dir: PathBuf,
    /// The repository `docker load` gives the package image (tag: the version).
    #[arg(long, default_value = DEFAULT_REPOSITORY)]
    repository: String,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let options = BuildOptions {
        base: match args.docker_archive {
            Some(path) => BaseImage::Archive(path),
            None => BaseImage::Docker(args.image),
        },
        package_dir: args.package_dir,
        out_dir: args.out_dir,
        repository: args.repository,
    };
    match xpkg::build(&options) {
        Ok(built) => {
            println!("package.yaml:");
            for object in &built.objects {
                println!("  {object}");
            }
            println!("layers:");
            for (layer, mark) in built.image.layers.iter().zip(&built.image.annotations) {
                let mark = mark
                    .as_deref()
                    .map(|m| format!("  io.crossplane.xpkg: {m}"))
                    .unwrap_or_default();
                println!("  sha256:{} {:>10} B{mark}", layer.digest, layer.gzip.len());
            }
            println!("manifest: sha256:{}", built.image.manifest_digest());
            println!(
                "{} ({} B; docker load tags it {})",
                built.xpkg.display(),
                std::fs::metadata(&built.xpkg).map_or(0, |m| m.len()),
                built.repo_tag
            );
            println!("{} (tag {})", built.oci_layout.display(), built.tag);
            ExitCode::SUCCESS
        }
        Err(error) => {
            let mut message = format!("xpkg: {error}");
            let mut source = std::error::Error::source(&error);
            while let Some(cause) = source {
                message.push_str(&format!(": {cause}"));
                source = cause.source();
            }
            eprintln!("{message}");
            ExitCode::FAILURE
        }
    }
}
