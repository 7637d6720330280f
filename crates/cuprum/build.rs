//! Names the compiler that this build of cuprum carries, for the tile JIT cache's keys
//! (`tile::jit_cache`): its entries are kernel IR made by the tile lowering and the
//! optimizer, and the PTX written from it, so an entry made by another compiler must never
//! be read. In a workspace
//! checkout the name is a hash of those crates' sources (an edit changes it without a version
//! bump); a published crate cannot see its siblings' sources, and its version names it.

use std::hash::{DefaultHasher, Hasher};
use std::path::{Path, PathBuf};

/// The crates whose code makes what the tile JIT cache keeps.
const COMPILER_CRATES: [&str; 5] = [
    "cuprum-tile-ir",
    "cuprum-tile-lower",
    "cuprum-opt",
    "cuprum-ir",
    "cuprum-ptx",
];

/// Every `.rs` file under `dir`, in a fixed order.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for path in paths {
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn main() {
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from);
    let mut hasher = DefaultHasher::new();
    let mut files = 0usize;
    if let Some(crates) = manifest.as_deref().and_then(Path::parent) {
        for name in COMPILER_CRATES {
            let src = crates.join(name).join("src");
            println!("cargo:rerun-if-changed={}", src.display());
            let mut found = Vec::new();
            sources(&src, &mut found);
            for path in found {
                if let Ok(text) = std::fs::read(&path) {
                    hasher.write(
                        path.strip_prefix(crates)
                            .unwrap_or(&path)
                            .to_string_lossy()
                            .as_bytes(),
                    );
                    hasher.write(&text);
                    files += 1;
                }
            }
        }
    }
    let fingerprint = if files == 0 {
        format!(
            "version {}",
            std::env::var("CARGO_PKG_VERSION").unwrap_or_default()
        )
    } else {
        format!("sources {:016x} ({files} files)", hasher.finish())
    };
    println!("cargo:rustc-env=CUPRUM_COMPILER_FINGERPRINT={fingerprint}");
    println!("cargo:rerun-if-changed=build.rs");
}
