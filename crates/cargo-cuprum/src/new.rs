//! `cargo cuprum new NAME`: writes a project that depends on cuprum and works at once:
//! `cargo run` prints `PASSED` (on the GPU, or on the emulator where there is none) and
//! `cargo test` compares the kernel with a CPU reference on random data.
//!
//! The files come from `templates/` (compiled into the binary) with the name and the cuprum
//! dependency filled in; [`render`] makes them without touching the disk, [`scaffold`] writes
//! them. The dependency is a path to the cuprum repository this binary was built from, another
//! path (`--cuprum-path`) or a registry version (`--cuprum-version`). With a path, the
//! repository's `Cargo.lock` is copied too, so the project builds with the dependency versions
//! cuprum is tested with (cargo drops what the project does not use).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::cli::NewArgs;

const CARGO_TOML: &str = include_str!("../templates/Cargo.toml.in");
const LIB_RS: &str = include_str!("../templates/lib.rs.in");
const MAIN_RS: &str = include_str!("../templates/main.rs.in");
const TEST_RS: &str = include_str!("../templates/test.rs.in");
const README_MD: &str = include_str!("../templates/README.md.in");

/// The `crates/cuprum` folder of the repository this binary was built from.
pub fn default_cuprum_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("cuprum")
}

/// Where the scaffolded project gets cuprum from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CuprumSource {
    /// A path to the `crates/cuprum` folder of a cuprum checkout (absolute).
    Path(PathBuf),
    /// A version requirement on the registry.
    Version(String),
}

impl CuprumSource {
    /// The dependency's value in `Cargo.toml`: `{ path = "..." }` or `"1.2"`.
    pub fn dependency(&self) -> String {
        match self {
            // Debug-quoting escapes backslashes and quotes as TOML basic strings expect.
            Self::Path(p) => format!("{{ path = {:?} }}", p.to_string_lossy()),
            Self::Version(v) => format!("{v:?}"),
        }
    }
}

/// What to scaffold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewProject {
    /// The package name.
    pub name: String,
    /// Where cuprum comes from.
    pub cuprum: CuprumSource,
    /// Whether to add an empty `[workspace]` table (needed when the project is created inside
    /// another workspace's folder, which would otherwise claim it).
    pub own_workspace: bool,
}

/// Checks that `name` is usable as a package name (ASCII letters, digits, `-` and `_`, not
/// starting with a digit) and as a crate name (not a Rust keyword, not a standard crate).
pub fn validate_name(name: &str) -> Result<(), String> {
    let first_ok = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    if !first_ok
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(format!(
            "`{name}` is not a valid package name: use ASCII letters, digits, `-` and `_`, \
             starting with a letter"
        ));
    }
    const RESERVED: &[&str] = &[
        "as",
        "async",
        "await",
        "break",
        "const",
        "continue",
        "crate",
        "dyn",
        "else",
        "enum",
        "extern",
        "false",
        "fn",
        "for",
        "gen",
        "if",
        "impl",
        "in",
        "let",
        "loop",
        "match",
        "mod",
        "move",
        "mut",
        "pub",
        "ref",
        "return",
        "self",
        "static",
        "struct",
        "super",
        "trait",
        "true",
        "type",
        "unsafe",
        "use",
        "where",
        "while",
        "abstract",
        "become",
        "box",
        "do",
        "final",
        "macro",
        "override",
        "priv",
        "try",
        "typeof",
        "unsized",
        "virtual",
        "yield",
        "std",
        "core",
        "alloc",
        "proc_macro",
        "test",
        "cuprum",
    ];
    let crate_name = name.replace('-', "_");
    if RESERVED.contains(&crate_name.as_str()) {
        return Err(format!(
            "`{name}` cannot be a package name here (a Rust keyword or a crate the project \
             uses); choose another"
        ));
    }
    Ok(())
}

/// The project's files: (path relative to the project folder, contents).
pub fn render(project: &NewProject) -> Vec<(PathBuf, String)> {
    let crate_name = project.name.replace('-', "_");
    let workspace = if project.own_workspace {
        "\n# Its own workspace: it was created inside another workspace's folder.\n[workspace]\n"
    } else {
        ""
    };
    let fill = |template: &str| {
        template
            .replace("{{name}}", &project.name)
            .replace("{{crate}}", &crate_name)
            .replace("{{cuprum_dependency}}", &project.cuprum.dependency())
            .replace("{{workspace}}", workspace)
    };
    vec![
        (PathBuf::from("Cargo.toml"), fill(CARGO_TOML)),
        (PathBuf::from("src/lib.rs"), fill(LIB_RS)),
        (PathBuf::from("src/main.rs"), fill(MAIN_RS)),
        (PathBuf::from("tests/vecadd.rs"), fill(TEST_RS)),
        (PathBuf::from("README.md"), fill(README_MD)),
        (PathBuf::from(".gitignore"), "/target\n".to_owned()),
    ]
}

/// Whether `dir` (which may not exist yet) lies inside a cargo workspace other than its own:
/// an ancestor's `Cargo.toml` with a `[workspace]` table.
pub fn inside_a_workspace(dir: &Path) -> bool {
    dir.ancestors().skip(1).any(|a| {
        fs::read_to_string(a.join("Cargo.toml"))
            .is_ok_and(|text| text.lines().any(|l| l.trim() == "[workspace]"))
    })
}

/// Writes `project` into `dir`, which must not exist or be empty; `lock` is a `Cargo.lock` to
/// start from. Returns the files written.
pub fn scaffold(
    project: &NewProject,
    dir: &Path,
    lock: Option<&Path>,
) -> Result<Vec<PathBuf>, String> {
    if let Ok(mut entries) = fs::read_dir(dir)
        && entries.next().is_some()
    {
        return Err(format!(
            "{} already exists and is not empty; choose another name or --dir",
            dir.display()
        ));
    }
    let mut written = Vec::new();
    for (relative, contents) in render(project) {
        let path = dir.join(relative);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent)
                .map_err(|e| format!("creating {}: {e}", parent.display()))?;
        }
        fs::write(&path, contents).map_err(|e| format!("writing {}: {e}", path.display()))?;
        written.push(path);
    }
    if let Some(lock) = lock {
        let path = dir.join("Cargo.lock");
        // Only an optimization: without it cargo resolves the versions afresh.
        if fs::copy(lock, &path).is_ok() {
            written.push(path);
        }
    }
    Ok(written)
}

/// `cargo cuprum new`: validates, scaffolds and says what to do next.
pub fn run(args: &NewArgs) -> Result<ExitCode, String> {
    validate_name(&args.name)?;
    let cwd = std::env::current_dir().map_err(|e| format!("reading the current folder: {e}"))?;
    let dir = cwd.join(
        args.dir
            .clone()
            .unwrap_or_else(|| PathBuf::from(&args.name)),
    );
    let (cuprum, lock) = match (&args.cuprum_version, &args.cuprum_path) {
        (Some(version), _) => (CuprumSource::Version(version.clone()), None),
        (None, path) => {
            let given = path.is_some();
            let path = cwd.join(path.clone().unwrap_or_else(default_cuprum_path));
            let path = path.canonicalize().map_err(|e| {
                format!(
                    "cuprum is not at {} ({e}); pass --cuprum-path to a cuprum checkout's \
                     crates/cuprum folder, or --cuprum-version{}",
                    path.display(),
                    if given {
                        ""
                    } else {
                        " (the default is the repository this cargo-cuprum was built from)"
                    }
                )
            })?;
            if !path.join("Cargo.toml").is_file() {
                return Err(format!(
                    "{} has no Cargo.toml: --cuprum-path must name the crates/cuprum folder \
                     of a cuprum checkout",
                    path.display()
                ));
            }
            let lock = path
                .ancestors()
                .map(|a| a.join("Cargo.lock"))
                .find(|l| l.is_file());
            (CuprumSource::Path(path), lock)
        }
    };
    let project = NewProject {
        name: args.name.clone(),
        cuprum,
        own_workspace: inside_a_workspace(&dir),
    };
    scaffold(&project, &dir, lock.as_deref())?;
    let shown = dir.strip_prefix(&cwd).unwrap_or(&dir);
    println!(
        "Created `{}` in {} (cuprum {}).\n\nNext:\n    cd {}\n    cargo run      # prints \
         PASSED, on the GPU or the CPU emulator\n    cargo test     # the kernel against a CPU \
         reference",
        args.name,
        shown.display(),
        match &project.cuprum {
            CuprumSource::Path(p) => format!("from {}", p.display()),
            CuprumSource::Version(v) => format!("{v} from the registry"),
        },
        shown.display()
    );
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        for ok in ["demo", "my-kernels", "a_b", "x1", "_x"] {
            assert_eq!(validate_name(ok), Ok(()), "{ok}");
        }
        for bad in ["", "1abc", "a b", "a/b", "fn", "cuprum", "test", "é"] {
            assert!(validate_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn rendering_fills_every_placeholder() {
        let project = NewProject {
            name: "my-demo".into(),
            cuprum: CuprumSource::Path(PathBuf::from("/x/crates/cuprum")),
            own_workspace: true,
        };
        let files = render(&project);
        for (path, text) in &files {
            assert!(
                !text.contains("{{"),
                "{} keeps a placeholder",
                path.display()
            );
        }
        let toml = &files[0].1;
        assert!(toml.contains("name = \"my-demo\""), "{toml}");
        assert!(
            toml.contains("cuprum = { path = \"/x/crates/cuprum\" }"),
            "{toml}"
        );
        assert!(toml.contains("\n[workspace]\n"), "{toml}");
        assert!(files[2].1.contains("my_demo::add_vectors"));
        assert!(files[3].1.contains("my_demo::add_vectors"));
        let by_version = NewProject {
            cuprum: CuprumSource::Version("0.1".into()),
            own_workspace: false,
            ..project
        };
        let toml = &render(&by_version)[0].1;
        assert!(toml.contains("cuprum = \"0.1\""), "{toml}");
        assert!(!toml.contains("[workspace]"), "{toml}");
    }

    #[test]
    fn the_default_cuprum_is_this_repository() {
        assert!(default_cuprum_path().join("Cargo.toml").is_file());
        assert!(inside_a_workspace(&default_cuprum_path().join("sub")));
    }
}
