//! Writes `docs/reference/flags.md` and `docs/reference/metrics.md` from
//! the code (`e2e::reference`). Run it with
//! `cargo run -p e2e --bin reference-docs`; pass a folder to write under it
//! instead of this repository.

use std::path::PathBuf;

fn main() -> anyhow::Result<()> {
    let root = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(e2e::reference::workspace_root);
    for path in e2e::reference::write(&root)? {
        println!("wrote {}", path.display());
    }
    Ok(())
}
