//! Writes `docs/reference/flags.md` and `docs/reference/metrics.md` from
//! the code (`e2e::reference`). Run it with
//! `cargo run -p e2e --bin reference-docs`; pass a folder to write under it
//! instead of this repository.

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let root = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(e2e::reference::workspace_root);
    match e2e::reference::write(&root) {
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
            eprintln!("reference-docs: {message}");
            ExitCode::FAILURE
        }
    }
}
