//! Writes `package/crds/*.yaml`, `package/mrds/*.yaml` and the API
//! reference `docs/reference/api/*.md` from the Rust types, and removes
//! files there that generation no longer produces.
//!
//! ```sh
//! cargo run -p apis --bin generate [-- [PACKAGE_ROOT] [--docs DOCS_DIR]]
//! ```
//!
//! `PACKAGE_ROOT` (default: this repository's `package/`) is where the CRDs
//! and MRDs go; `--docs DOCS_DIR` (default: this repository's
//! `docs/reference/api/`) is where the reference pages go. The pages link to
//! the CRDs as `../../../package/crds/`, which resolves from the default
//! folders only.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "usage: generate [PACKAGE_ROOT] [--docs DOCS_DIR]";

/// The package root and the docs folder the arguments name.
fn folders(args: impl IntoIterator<Item = OsString>) -> Result<(PathBuf, PathBuf), String> {
    let mut package_root = None;
    let mut docs_root = None;
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        if arg == "--docs" {
            let dir = args.next().ok_or("--docs needs a folder")?;
            docs_root = Some(PathBuf::from(dir));
        } else if arg.to_string_lossy().starts_with('-') || package_root.is_some() {
            return Err(format!("unexpected argument {}", arg.to_string_lossy()));
        } else {
            package_root = Some(PathBuf::from(arg));
        }
    }
    Ok((
        package_root.unwrap_or_else(apis::generate::default_package_root),
        docs_root.unwrap_or_else(apis::reference::default_docs_root),
    ))
}

fn main() -> ExitCode {
    let (package_root, docs_root) = match folders(std::env::args_os().skip(1)) {
        Ok(folders) => folders,
        Err(message) => {
            eprintln!("generate: {message}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let written = apis::generate::write(&package_root).and_then(|mut written| {
        written.extend(apis::reference::write(&docs_root)?);
        Ok(written)
    });
    match written {
        Ok(written) => {
            for path in written {
                println!("wrote {}", path.display());
            }
            ExitCode::SUCCESS
        }
        Err(error) => {
            let mut message = error.to_string();
            let mut source = std::error::Error::source(&error);
            while let Some(cause) = source {
                message.push_str(&format!(": {cause}"));
                source = cause.source();
            }
            eprintln!("generate: {message}");
            ExitCode::FAILURE
        }
    }
}
