//! Writes `package/crds/*.yaml` and `package/mrds/*.yaml` from the Rust
//! types. Run it with `cargo run -p apis --bin generate`; pass a folder to
//! write somewhere other than this repository's `package/`.

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let root = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(apis::generate::default_package_root);
    match apis::generate::write(&root) {
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
