//! The `source` stage: fetch the real rocBLAS / rocSOLVER source trees and pin them.
//!
//! In: a [`FetchRequest`] naming a library, its upstream version and where to take it
//! from: a Debian source package (the default, because Debian's archive is reachable
//! where GitHub may not be), a local directory, or a git tag or commit.
//!
//! Out: a [`FetchOutcome`] holding the tree at `rocm_sources/<lib>-<version>/` and the
//! [`SourcePin`] recorded for it in `rocm_sources/sources.toml`.
//!
//! Why: every later stage cites `file:line` positions inside these trees, so a tree must
//! be the same on every machine. `sources.toml` works like a lock file: it is committed,
//! it names the exact origin and a SHA-256, a fetch that finds the tree and its pin is a
//! no-op without network, and a re-fetch that would produce different content is refused.
//!
//! apt runs with a private state directory under `rocm_sources/.apt/` and never reads or
//! writes `/etc/apt`; downloaded tarballs stay in `rocm_sources/.downloads/` so deleting
//! a tree and fetching again needs no network.

mod debian;
mod tree;

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use tracing::{debug, info};

use crate::model::{Origin, SourcePin};

/// Name of the pin file inside the sources root.
const PINS_FILE: &str = "sources.toml";

/// Comment written at the top of `sources.toml`.
const PINS_HEADER: &str = "\
# Pinned ROCm source trees, one [[pin]] per library version.
#
# Written by `rocqa sources fetch`; commit it like a lock file. Each tree lives in
# rocm_sources/<dir>/ (git-ignored). `sha256` is the SHA-256 of the Debian orig tarball,
# or, for dir and git origins, of the sorted `path NUL file-sha256 LF` list of the tree.
# Fetching again is a no-op while the tree exists; a re-fetch that yields a different
# sha256 is refused until you delete the entry. Entries are sorted by lib, then version.
";

/// A Debian source package to take a tree from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DebianSpec {
    /// Source package name, e.g. `rocblas`.
    pub package: String,
    /// Full Debian version (e.g. `6.4.4-4`); `None` picks the highest one whose
    /// upstream part equals the requested version.
    pub debian_version: Option<String>,
    /// Archive URL, e.g. `http://deb.debian.org/debian`.
    pub mirror: String,
    /// Suites to look in, e.g. `["trixie", "sid"]`.
    pub suites: Vec<String>,
}

/// Where a tree comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FetchFrom {
    /// The upstream (orig) tarball of a Debian source package.
    Debian(DebianSpec),
    /// A local checkout or unpacked tree, copied without its `.git`.
    Dir(PathBuf),
    /// A git repository at a tag, branch or commit.
    Git {
        /// Repository URL (anything `git clone` accepts).
        url: String,
        /// Tag, branch or commit to check out.
        rev: String,
    },
}

/// One library version to fetch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchRequest {
    /// Library name, e.g. `rocblas`.
    pub lib: String,
    /// Upstream version, e.g. `6.4.4`.
    pub version: String,
    /// Where to take the tree from.
    pub from: FetchFrom,
    /// globs of archive members NOT to unpack (e.g. "*/Tensile/Logic/*"), passed to tar --exclude
    ///
    /// For dir and git origins the same globs (`*` and `?`, matching `/` too, tried at
    /// every folder boundary like tar does) drop matching files from the copied tree.
    pub exclude: Vec<String>,
}

/// rocm_sources/sources.toml
///
/// Serialized as an array of `[[pin]]` tables, sorted by lib, then version.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pins {
    /// The pins, one per library version.
    #[serde(rename = "pin", default)]
    pub pins: Vec<SourcePin>,
}

/// What [`fetch`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchOutcome {
    /// The pin recorded for the tree.
    pub pin: SourcePin,
    /// True when this call wrote the tree or its pin; false for a no-op.
    pub fetched: bool,
    /// Absolute path of the tree.
    pub tree: PathBuf,
}

/// Everything that can go wrong while fetching or locating a source tree.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// A required program is not installed.
    #[error("{tool} not found: {hint}")]
    ToolMissing {
        /// Program name.
        tool: &'static str,
        /// What to do instead.
        hint: &'static str,
    },
    /// A program ran and failed.
    #[error("`{command}` failed ({status}): {stderr}\n{hint}")]
    CommandFailed {
        /// The command line.
        command: String,
        /// Exit status.
        status: String,
        /// Last lines of its standard error.
        stderr: String,
        /// What to do about it.
        hint: String,
    },
    /// A file system operation failed.
    #[error("cannot {action} {}", path.display())]
    Io {
        /// What was being done, e.g. `create directory`.
        action: &'static str,
        /// The path it was done to.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// `sources.toml` does not parse.
    #[error("{} is not a valid pin file: {source}; fix the TOML by hand, or delete the file and fetch again", path.display())]
    PinsParse {
        /// The pin file.
        path: PathBuf,
        /// The parse error.
        #[source]
        source: toml::de::Error,
    },
    /// The pins could not be serialized (a bug).
    #[error("cannot serialize the pins: {0}")]
    PinsSerialize(#[from] toml::ser::Error),
    /// A library name, version or pinned folder would not make a safe folder name.
    #[error("invalid {what} {value:?}: use letters, digits, '.', '_', '+' or '-' only, not starting with '.' or '-'")]
    InvalidName {
        /// Which value: `library`, `version`, `git rev`, ...
        what: &'static str,
        /// The rejected value.
        value: String,
    },
    /// The Debian spec names no suite.
    #[error("no Debian suites given for {package}: list at least one suite, e.g. suites = [\"trixie\", \"sid\"]")]
    NoSuites {
        /// Source package.
        package: String,
    },
    /// Debian's archive keyring is not installed.
    #[error("{} not found: install the debian-archive-keyring package, or use --from-dir PATH", path.display())]
    KeyringMissing {
        /// Expected keyring path.
        path: PathBuf,
    },
    /// No such source package in the configured suites.
    #[error("no Debian source package {package} in {mirror} ({suites}): check the package name, or add a suite that has it")]
    PackageNotFound {
        /// Requested package.
        package: String,
        /// Mirror searched.
        mirror: String,
        /// Suites searched, space-separated.
        suites: String,
    },
    /// The name given is a binary package; apt answered with its source package.
    #[error("{requested} is not a Debian source package (its source package is {source_package}): set package = \"{source_package}\"")]
    NotSourcePackage {
        /// Name asked for.
        requested: String,
        /// Source package apt reported.
        source_package: String,
    },
    /// The source package has no matching version.
    #[error("Debian source package {package} has no version {wanted}; available: {available}. Pick one of those, or add the suite that has it")]
    VersionNotFound {
        /// Source package.
        package: String,
        /// What was asked for.
        wanted: String,
        /// Versions apt knows, comma-separated.
        available: String,
    },
    /// An explicit Debian version belongs to another upstream version.
    #[error("Debian version {debian_version} of {package} is upstream {upstream}, not {version}: fix the version or the debian_version")]
    VersionMismatch {
        /// Source package.
        package: String,
        /// Requested Debian version.
        debian_version: String,
        /// Its upstream part.
        upstream: String,
        /// Requested upstream version.
        version: String,
    },
    /// The chosen source package version lists no orig tarball.
    #[error("{package} {debian_version} lists no {package}_<upstream>.orig.tar.{{gz,xz,bz2}} in Checksums-Sha256: use --from-dir PATH or a git origin instead")]
    NoOrigTarball {
        /// Source package.
        package: String,
        /// Debian version.
        debian_version: String,
    },
    /// A tarball's content is not what Debian's index says.
    #[error("SHA-256 mismatch for {}: expected {expected} ({expected_size} bytes), got {actual} ({actual_size} bytes); delete the file and fetch again (the mirror may serve a changed or truncated file)", file.display())]
    ShaMismatch {
        /// The file checked.
        file: PathBuf,
        /// SHA-256 from the index.
        expected: String,
        /// Size from the index.
        expected_size: u64,
        /// SHA-256 of the file.
        actual: String,
        /// Size of the file.
        actual_size: u64,
    },
    /// `apt-get source` did not leave the tarball behind.
    #[error("apt-get did not download {}: {stderr}\nCheck the mirror and suites, or download {url} into {} yourself and fetch again", file.display(), file.parent().unwrap_or(Path::new(".")).display())]
    DownloadMissing {
        /// Where the tarball should be.
        file: PathBuf,
        /// Its URL on the mirror.
        url: String,
        /// Last lines of apt's standard error.
        stderr: String,
    },
    /// The archive does not hold exactly one top-level folder.
    #[error("{} should unpack into a single top-level folder, found: {found}; unpack it yourself and use --from-dir PATH", archive.display())]
    UnpackLayout {
        /// The archive.
        archive: PathBuf,
        /// What was found at the top level.
        found: String,
    },
    /// The tree is there, but nothing pins it.
    #[error("{} exists but {} has no pin for {lib} {version}: delete the folder and fetch again, or pin it as it is with --from-dir {}", tree.display(), pins.display(), tree.display())]
    TreeWithoutPin {
        /// Library.
        lib: String,
        /// Version.
        version: String,
        /// The unpinned tree.
        tree: PathBuf,
        /// The pin file.
        pins: PathBuf,
    },
    /// The tree is pinned to another origin than the one asked for.
    #[error("{} is pinned to {pinned} but the request asks for {requested}: keep the pinned tree, or delete the folder and its [[pin]] entry in {} to switch", tree.display(), pins.display())]
    OriginConflict {
        /// The pinned origin.
        pinned: String,
        /// The requested origin.
        requested: String,
        /// The tree (`root/<lib>-<version>`).
        tree: PathBuf,
        /// The pin file.
        pins: PathBuf,
    },
    /// A re-fetch produced other content than the pin records.
    #[error("fetched {lib} {version} has SHA-256 {actual} but {} pins {expected}: the source changed since it was pinned; remove its [[pin]] entry to accept the new content", pins.display())]
    PinChanged {
        /// Library.
        lib: String,
        /// Version.
        version: String,
        /// Pinned SHA-256.
        expected: String,
        /// SHA-256 of what was fetched now.
        actual: String,
        /// The pin file.
        pins: PathBuf,
    },
    /// Nothing is pinned for this library version.
    #[error("{lib} {version} is not fetched into {}: run `{command}`", root.display())]
    NotFetched {
        /// Library.
        lib: String,
        /// Version.
        version: String,
        /// The sources root.
        root: PathBuf,
        /// Command that fetches it.
        command: String,
    },
    /// The pin exists but its tree was deleted.
    #[error("{lib} {version} is pinned but {} is missing: run `{command}` to fetch it again", tree.display())]
    TreeMissing {
        /// Library.
        lib: String,
        /// Version.
        version: String,
        /// Expected tree.
        tree: PathBuf,
        /// Command that fetches it.
        command: String,
    },
    /// A `--from-dir` path is not a folder.
    #[error("{} is not a directory: pass the folder holding the library sources to --from-dir", path.display())]
    NotADirectory {
        /// The path given.
        path: PathBuf,
    },
    /// The target appeared while fetching.
    #[error("{} appeared while fetching (another fetch running?): delete it and fetch again", path.display())]
    TargetExists {
        /// The tree path.
        path: PathBuf,
    },
}

/// Shorthand for I/O errors with a path.
fn io_err<'a>(action: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> SourceError + 'a {
    move |source| SourceError::Io {
        action,
        path: path.to_path_buf(),
        source,
    }
}

/// The command that fetches one library version, for error messages.
fn fetch_command(lib: &str, version: &str) -> String {
    format!("rocqa sources fetch --lib {lib} --version {version}")
}

impl Pins {
    /// Reads a pin file; a missing file is an empty set of pins.
    pub fn load(path: &Path) -> Result<Pins, SourceError> {
        let text = match fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Pins::default()),
            Err(e) => return Err(io_err("read", path)(e)),
        };
        let mut pins: Pins = toml::from_str(&text).map_err(|source| SourceError::PinsParse {
            path: path.to_path_buf(),
            source,
        })?;
        pins.sort();
        Ok(pins)
    }

    /// Writes the pins, sorted, under an explanatory header (atomically: temp file + rename).
    pub fn save(&self, path: &Path) -> Result<(), SourceError> {
        let mut sorted = self.clone();
        sorted.sort();
        let body = toml::to_string(&sorted)?;
        let text = format!("{PINS_HEADER}\n{body}");
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            fs::create_dir_all(parent).map_err(io_err("create directory", parent))?;
        }
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(format!(".tmp-{}", std::process::id()));
        let tmp = PathBuf::from(tmp);
        fs::write(&tmp, text).map_err(io_err("write", &tmp))?;
        fs::rename(&tmp, path).map_err(|e| {
            let _ = fs::remove_file(&tmp);
            io_err("replace", path)(e)
        })
    }

    /// The pin of one library version, if any.
    pub fn get(&self, lib: &str, version: &str) -> Option<&SourcePin> {
        self.pins
            .iter()
            .find(|p| p.lib == lib && p.version == version)
    }

    /// Adds a pin, replacing any pin of the same library version; keeps the list sorted.
    pub fn upsert(&mut self, pin: SourcePin) {
        match self
            .pins
            .iter_mut()
            .find(|p| p.lib == pin.lib && p.version == pin.version)
        {
            Some(slot) => *slot = pin,
            None => self.pins.push(pin),
        }
        self.sort();
    }

    fn sort(&mut self) {
        self.pins.sort_by(|a, b| {
            a.lib
                .cmp(&b.lib)
                .then_with(|| debian::cmp_version(&a.version, &b.version))
                .then_with(|| a.version.cmp(&b.version))
        });
    }
}

/// Fetches into `root/<lib>-<version>/` (root is the rocm_sources folder) and records the pin in root/sources.toml.
/// Re-fetching is a no-op when the tree exists and the pin matches (returns the pin and `fetched=false`).
///
/// When the pin exists but the tree was deleted, the tree is fetched again and must hash
/// to the pinned SHA-256; a Debian tarball kept in `root/.downloads/` that matches the pin
/// is unpacked without running apt at all.
/// `FetchFrom::Dir` pointing at `root/<lib>-<version>` itself pins that tree in place.
pub fn fetch(req: &FetchRequest, root: &Path) -> Result<FetchOutcome, SourceError> {
    check_name("library", &req.lib)?;
    check_name("version", &req.version)?;
    fs::create_dir_all(root).map_err(io_err("create directory", root))?;
    // apt resolves relative Dir:: options against its own defaults, so only absolute
    // paths keep it away from /var/lib/apt.
    let root = fs::canonicalize(root).map_err(io_err("resolve", root))?;
    let dir = format!("{}-{}", req.lib, req.version);
    let tree = root.join(&dir);
    let pins_path = root.join(PINS_FILE);
    let mut pins = Pins::load(&pins_path)?;
    let existing = pins.get(&req.lib, &req.version).cloned();

    if let Some(pin) = &existing {
        check_origin(req, pin, &tree, &pins_path)?;
    }
    if tree.symlink_metadata().is_ok() {
        if let Some(pin) = existing {
            info!(lib = %req.lib, version = %req.version, tree = %tree.display(), "Source tree already pinned; nothing to fetch.");
            return Ok(FetchOutcome {
                pin,
                fetched: false,
                tree,
            });
        }
        if let FetchFrom::Dir(src) = &req.from {
            if fs::canonicalize(src).ok().as_deref() == Some(tree.as_path()) {
                return adopt(req, &tree, dir, &mut pins, &pins_path);
            }
        }
        return Err(SourceError::TreeWithoutPin {
            lib: req.lib.clone(),
            version: req.version.clone(),
            tree,
            pins: pins_path,
        });
    }

    let label = format!("{}-{}", req.lib, req.version);
    let staged = match &req.from {
        FetchFrom::Debian(spec) => debian::stage(spec, req, &root, &label, existing.as_ref())?,
        FetchFrom::Dir(src) => tree::stage_dir(src, &root, &label, &req.exclude)?,
        FetchFrom::Git { url, rev } => tree::stage_git(url, rev, &root, &label, &req.exclude)?,
    };

    if let Some(pin) = &existing {
        if pin.sha256 != staged.sha256 {
            return Err(SourceError::PinChanged {
                lib: req.lib.clone(),
                version: req.version.clone(),
                expected: pin.sha256.clone(),
                actual: staged.sha256,
                pins: pins_path,
            });
        }
    }
    if tree.symlink_metadata().is_ok() {
        return Err(SourceError::TargetExists { path: tree });
    }
    fs::rename(&staged.top, &tree).map_err(io_err("move the unpacked tree to", &tree))?;

    let pin = match existing {
        // Same content as pinned: keep the pin (and its date) so the lock file does not churn.
        Some(pin) => pin,
        None => {
            let pin = SourcePin {
                lib: req.lib.clone(),
                version: req.version.clone(),
                origin: staged.origin,
                sha256: staged.sha256,
                fetched_at: now_rfc3339(),
                dir,
            };
            pins.upsert(pin.clone());
            pins.save(&pins_path)?;
            pin
        }
    };
    info!(lib = %pin.lib, version = %pin.version, sha256 = %pin.sha256, tree = %tree.display(), "Source tree fetched and pinned.");
    Ok(FetchOutcome {
        pin,
        fetched: true,
        tree,
    })
}

/// Pins a tree that already sits at its final place (`--from-dir` pointing at it).
fn adopt(
    req: &FetchRequest,
    tree: &Path,
    dir: String,
    pins: &mut Pins,
    pins_path: &Path,
) -> Result<FetchOutcome, SourceError> {
    if !tree.is_dir() {
        return Err(SourceError::NotADirectory {
            path: tree.to_path_buf(),
        });
    }
    if !req.exclude.is_empty() {
        debug!(tree = %tree.display(), "Exclude globs are not applied to a tree pinned in place.");
    }
    let pin = SourcePin {
        lib: req.lib.clone(),
        version: req.version.clone(),
        origin: Origin::Dir {
            path: tree.to_string_lossy().into_owned(),
        },
        sha256: tree::tree_sha256(tree)?,
        fetched_at: now_rfc3339(),
        dir,
    };
    pins.upsert(pin.clone());
    pins.save(pins_path)?;
    info!(lib = %pin.lib, version = %pin.version, sha256 = %pin.sha256, tree = %tree.display(), "Existing source tree pinned in place.");
    Ok(FetchOutcome {
        pin,
        fetched: true,
        tree: tree.to_path_buf(),
    })
}

/// Path of a pinned tree, or an error saying which `rocqa sources fetch ...` command to run.
pub fn tree_path(root: &Path, lib: &str, version: &str) -> Result<PathBuf, SourceError> {
    let pins = Pins::load(&root.join(PINS_FILE))?;
    let command = fetch_command(lib, version);
    let Some(pin) = pins.get(lib, version) else {
        return Err(SourceError::NotFetched {
            lib: lib.to_string(),
            version: version.to_string(),
            root: root.to_path_buf(),
            command,
        });
    };
    check_name("pinned dir", &pin.dir)?;
    let tree = root.join(&pin.dir);
    if tree.is_dir() {
        Ok(tree)
    } else {
        Err(SourceError::TreeMissing {
            lib: lib.to_string(),
            version: version.to_string(),
            tree,
            command,
        })
    }
}

/// A fetched tree waiting in a temp folder inside root, not yet moved into place.
struct Staged {
    /// Keeps the temp folder alive; removed on drop.
    _tmp: tree::TempDir,
    /// The folder to rename to `root/<lib>-<version>`.
    top: PathBuf,
    origin: Origin,
    sha256: String,
}

/// Refuses names that could escape `root` or confuse a command line.
fn check_name(what: &'static str, value: &str) -> Result<(), SourceError> {
    let ok = !value.is_empty()
        && !value.starts_with('.')
        && !value.starts_with('-')
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '+' | '-'));
    if ok {
        Ok(())
    } else {
        Err(SourceError::InvalidName {
            what,
            value: value.to_string(),
        })
    }
}

/// Fails when the request names another origin than the pin records.
fn check_origin(
    req: &FetchRequest,
    pin: &SourcePin,
    tree: &Path,
    pins_path: &Path,
) -> Result<(), SourceError> {
    let same = match (&req.from, &pin.origin) {
        (
            FetchFrom::Debian(spec),
            Origin::Debian {
                package,
                debian_version,
                ..
            },
        ) => {
            spec.package == *package
                && spec
                    .debian_version
                    .as_ref()
                    .is_none_or(|v| v == debian_version)
        }
        (FetchFrom::Dir(src), Origin::Dir { path }) => {
            Path::new(path) == absolute(src) || Path::new(path) == tree
        }
        (FetchFrom::Git { url, rev }, Origin::Git { url: u, rev: r, .. }) => url == u && rev == r,
        _ => false,
    };
    if same {
        return Ok(());
    }
    Err(SourceError::OriginConflict {
        pinned: describe_origin(&pin.origin),
        requested: describe_request(&req.from),
        tree: tree.to_path_buf(),
        pins: pins_path.to_path_buf(),
    })
}

/// Canonical path when it exists, else the path made absolute.
fn absolute(p: &Path) -> PathBuf {
    fs::canonicalize(p).unwrap_or_else(|_| {
        std::env::current_dir()
            .map(|d| d.join(p))
            .unwrap_or_else(|_| p.to_path_buf())
    })
}

fn describe_origin(o: &Origin) -> String {
    match o {
        Origin::Debian {
            package,
            debian_version,
            ..
        } => format!("Debian {package} {debian_version}"),
        Origin::Dir { path } => format!("dir {path}"),
        Origin::Git { url, rev, commit } => format!("git {url} at {rev} ({commit})"),
    }
}

fn describe_request(f: &FetchFrom) -> String {
    match f {
        FetchFrom::Debian(spec) => format!(
            "Debian {} {}",
            spec.package,
            spec.debian_version.as_deref().unwrap_or("(any revision)")
        ),
        FetchFrom::Dir(p) => format!("dir {}", absolute(p).display()),
        FetchFrom::Git { url, rev } => format!("git {url} at {rev}"),
    }
}

/// Runs a command with no stdin and captured output; a missing program says what to install.
fn run(cmd: &mut Command, tool: &'static str) -> Result<Output, SourceError> {
    debug!(command = %command_line(cmd), "Running command.");
    cmd.stdin(Stdio::null()).output().map_err(|e| {
        if e.kind() == io::ErrorKind::NotFound {
            SourceError::ToolMissing {
                tool,
                hint: tool_hint(tool),
            }
        } else {
            SourceError::Io {
                action: "run",
                path: PathBuf::from(tool),
                source: e,
            }
        }
    })
}

/// Like [`run`], but a non-zero exit is an error carrying `hint`.
fn run_ok(cmd: &mut Command, tool: &'static str, hint: &str) -> Result<Output, SourceError> {
    let out = run(cmd, tool)?;
    if out.status.success() {
        Ok(out)
    } else {
        Err(SourceError::CommandFailed {
            command: command_line(cmd),
            status: out.status.to_string(),
            stderr: stderr_tail(&out.stderr),
            hint: hint.to_string(),
        })
    }
}

fn tool_hint(tool: &str) -> &'static str {
    match tool {
        "apt-get" | "apt-cache" => "install apt, or use --from-dir PATH",
        "tar" => "install GNU tar (with gzip and xz-utils), or use --from-dir PATH",
        "git" => "install git, or use --from-dir PATH",
        _ => "install it, or use --from-dir PATH",
    }
}

fn command_line(cmd: &Command) -> String {
    let mut s = cmd.get_program().to_string_lossy().into_owned();
    for a in cmd.get_args() {
        s.push(' ');
        s.push_str(&a.to_string_lossy());
    }
    s
}

/// The last lines of a command's standard error, for messages.
fn stderr_tail(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let tail = lines[lines.len().saturating_sub(12)..].join("\n");
    if tail.is_empty() {
        "(no output)".to_string()
    } else {
        tail
    }
}

/// Current UTC time as RFC 3339, to the second.
fn now_rfc3339() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    rfc3339(secs)
}

/// Formats seconds since the Unix epoch as `YYYY-MM-DDTHH:MM:SSZ`.
fn rfc3339(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Howard Hinnant's days-to-civil algorithm (proleptic Gregorian calendar).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pin(lib: &str, version: &str, origin: Origin) -> SourcePin {
        SourcePin {
            lib: lib.into(),
            version: version.into(),
            origin,
            sha256: format!("{:0>64}", lib.len()),
            fetched_at: "2025-01-02T03:04:05Z".into(),
            dir: format!("{lib}-{version}"),
        }
    }

    fn write(path: &Path, text: &str) {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }

    fn dir_request(lib: &str, version: &str, src: &Path) -> FetchRequest {
        FetchRequest {
            lib: lib.into(),
            version: version.into(),
            from: FetchFrom::Dir(src.to_path_buf()),
            exclude: vec![],
        }
    }

    fn git(dir: &Path, args: &[&str]) -> String {
        let out = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args([
                "-c",
                "init.defaultBranch=main",
                "-c",
                "commit.gpgsign=false",
            ])
            .args(["-c", "tag.gpgsign=false"])
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    }

    #[test]
    fn pins_roundtrip_sorted() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("rocm_sources").join(PINS_FILE);
        assert_eq!(Pins::load(&path).unwrap(), Pins::default());

        let mut pins = Pins::default();
        pins.upsert(pin(
            "rocsolver",
            "6.4.3",
            Origin::Debian {
                package: "rocsolver".into(),
                debian_version: "6.4.3-2".into(),
                tarball: "rocsolver_6.4.3.orig.tar.gz".into(),
            },
        ));
        pins.upsert(pin(
            "rocblas",
            "10.0.0",
            Origin::Git {
                url: "https://github.com/ROCm/rocm-libraries".into(),
                rev: "rocm-10.0.0".into(),
                commit: "0123456789abcdef0123456789abcdef01234567".into(),
            },
        ));
        pins.upsert(pin(
            "rocblas",
            "6.4.4",
            Origin::Dir {
                path: "/src/rocBLAS".into(),
            },
        ));
        // Replacing keeps one entry per lib+version.
        let mut replaced = pin(
            "rocblas",
            "6.4.4",
            Origin::Dir {
                path: "/src/rocBLAS-2".into(),
            },
        );
        replaced.sha256 = "f".repeat(64);
        pins.upsert(replaced.clone());
        pins.save(&path).unwrap();

        let loaded = Pins::load(&path).unwrap();
        assert_eq!(loaded, pins);
        let order: Vec<_> = loaded
            .pins
            .iter()
            .map(|p| format!("{} {}", p.lib, p.version))
            .collect();
        assert_eq!(
            order,
            ["rocblas 6.4.4", "rocblas 10.0.0", "rocsolver 6.4.3"]
        );
        assert_eq!(loaded.get("rocblas", "6.4.4"), Some(&replaced));
        assert_eq!(loaded.get("rocblas", "5.5.1"), None);

        let text = fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("# Pinned ROCm source trees"));
        assert_eq!(text.lines().filter(|l| *l == "[[pin]]").count(), 3);
        assert!(text.contains("kind = \"debian\""), "{text}");
        // Saving again gives the same bytes: the file is stable in git.
        loaded.save(&path).unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), text);
    }

    #[test]
    fn pins_parse_error_names_the_file() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join(PINS_FILE);
        fs::write(&path, "[[pin]]\nlib = 3\n").unwrap();
        let err = Pins::load(&path).unwrap_err();
        assert!(matches!(err, SourceError::PinsParse { .. }));
        assert!(err.to_string().contains(PINS_FILE), "{err}");
    }

    #[test]
    fn rfc3339_dates() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_700_000_000), "2023-11-14T22:13:20Z");
        assert_eq!(rfc3339(4_107_542_399), "2100-02-28T23:59:59Z");
        assert_eq!(now_rfc3339().len(), 20);
    }

    #[test]
    fn names_are_checked() {
        assert!(check_name("version", "5.5.1+dfsg").is_ok());
        for bad in ["", "..", "../x", "a/b", "-rf", ".hidden", "a b"] {
            assert!(check_name("version", bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn dir_fetch_then_noop() {
        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path().join("rocBLAS");
        write(&src.join("library/src/blas1/scal.cpp"), "void f() {}\n");
        write(&src.join("library/include/rocblas.h"), "#pragma once\n");
        write(&src.join("library/Tensile/Logic/big.yaml"), "x: 1\n");
        write(&src.join(".git/HEAD"), "ref: refs/heads/main\n");
        let root = tmp.path().join("rocm_sources");

        let mut req = dir_request("rocblas", "6.4.4", &src);
        req.exclude = vec!["*/Tensile/Logic/*".into()];
        let first = fetch(&req, &root).unwrap();
        assert!(first.fetched);
        let tree = fs::canonicalize(&root).unwrap().join("rocblas-6.4.4");
        assert_eq!(first.tree, tree);
        assert_eq!(
            fs::read_to_string(tree.join("library/src/blas1/scal.cpp")).unwrap(),
            "void f() {}\n"
        );
        assert!(!tree.join(".git").exists());
        assert!(!tree.join("library/Tensile/Logic/big.yaml").exists());
        assert_eq!(first.pin.dir, "rocblas-6.4.4");
        assert_eq!(first.pin.sha256.len(), 64);
        assert_eq!(
            first.pin.origin,
            Origin::Dir {
                path: fs::canonicalize(&src).unwrap().to_string_lossy().into()
            }
        );
        assert_eq!(first.pin.sha256, tree::tree_sha256(&tree).unwrap());
        let pins = Pins::load(&root.join(PINS_FILE)).unwrap();
        assert_eq!(pins.get("rocblas", "6.4.4"), Some(&first.pin));
        // No temp folders left behind.
        let leftovers: Vec<_> = fs::read_dir(&root)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");

        // Second fetch: no-op, even if the source changed meanwhile.
        write(&src.join("library/src/blas1/scal.cpp"), "changed\n");
        let second = fetch(&req, &root).unwrap();
        assert!(!second.fetched);
        assert_eq!(second.pin, first.pin);
        assert_eq!(
            tree_path(&root, "rocblas", "6.4.4").unwrap(),
            root.join("rocblas-6.4.4")
        );

        // Tree deleted and the source changed: the pin refuses the new content.
        fs::remove_dir_all(&tree).unwrap();
        let err = fetch(&req, &root).unwrap_err();
        assert!(matches!(err, SourceError::PinChanged { .. }), "{err}");
        assert!(!tree.exists());
        assert!(matches!(
            tree_path(&root, "rocblas", "6.4.4"),
            Err(SourceError::TreeMissing { .. })
        ));

        // Source restored: the tree comes back with the same pin.
        write(&src.join("library/src/blas1/scal.cpp"), "void f() {}\n");
        let third = fetch(&req, &root).unwrap();
        assert!(third.fetched);
        assert_eq!(third.pin, first.pin);
    }

    #[test]
    fn unpinned_tree_is_refused_then_adopted() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("rocm_sources");
        let tree = root.join("rocsolver-6.4.3");
        write(&tree.join("library/src/lapack/getrf.cpp"), "int x;\n");
        let other = tmp.path().join("other");
        write(&other.join("a.txt"), "a");

        let err = fetch(&dir_request("rocsolver", "6.4.3", &other), &root).unwrap_err();
        assert!(matches!(err, SourceError::TreeWithoutPin { .. }), "{err}");
        assert!(err.to_string().contains("--from-dir"), "{err}");

        let adopted = fetch(&dir_request("rocsolver", "6.4.3", &tree), &root).unwrap();
        assert!(adopted.fetched);
        assert!(tree.join("library/src/lapack/getrf.cpp").exists());
        let again = fetch(&dir_request("rocsolver", "6.4.3", &tree), &root).unwrap();
        assert!(!again.fetched);
        assert_eq!(again.pin.sha256, adopted.pin.sha256);
    }

    #[test]
    fn other_origin_is_a_conflict() {
        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path().join("src");
        write(&src.join("f.cpp"), "x");
        let root = tmp.path().join("rocm_sources");
        fetch(&dir_request("rocblas", "6.4.4", &src), &root).unwrap();
        let req = FetchRequest {
            from: FetchFrom::Debian(DebianSpec {
                package: "rocblas".into(),
                debian_version: None,
                mirror: "http://deb.debian.org/debian".into(),
                suites: vec!["sid".into()],
            }),
            ..dir_request("rocblas", "6.4.4", &src)
        };
        let err = fetch(&req, &root).unwrap_err();
        assert!(matches!(err, SourceError::OriginConflict { .. }), "{err}");
    }

    #[test]
    fn pinned_debian_tarball_refetches_without_apt() {
        let tmp = tempfile::tempdir().unwrap();
        let work = tmp.path().join("work");
        write(
            &work.join("rocSOLVER-rocm-6.4.3/library/src/a.cpp"),
            "int a;\n",
        );
        let root = tmp.path().join("rocm_sources");
        let tarball = "rocsolver_6.4.3.orig.tar.gz";
        fs::create_dir_all(root.join(".downloads")).unwrap();
        let status = Command::new("tar")
            .arg("-czf")
            .arg(root.join(".downloads").join(tarball))
            .arg("-C")
            .arg(&work)
            .arg("rocSOLVER-rocm-6.4.3")
            .status()
            .unwrap();
        assert!(status.success());
        let (sha256, _) = tree::file_sha256(&root.join(".downloads").join(tarball)).unwrap();
        let mut pinned = pin(
            "rocsolver",
            "6.4.3",
            Origin::Debian {
                package: "rocsolver".into(),
                debian_version: "6.4.3-2".into(),
                tarball: tarball.into(),
            },
        );
        pinned.sha256 = sha256;
        let mut pins = Pins::default();
        pins.upsert(pinned.clone());
        pins.save(&root.join(PINS_FILE)).unwrap();

        // An unreachable mirror and no suites: apt would fail if it were asked.
        let req = FetchRequest {
            lib: "rocsolver".into(),
            version: "6.4.3".into(),
            from: FetchFrom::Debian(DebianSpec {
                package: "rocsolver".into(),
                debian_version: None,
                mirror: "http://mirror.invalid/debian".into(),
                suites: vec![],
            }),
            exclude: vec![],
        };
        let out = fetch(&req, &root).unwrap();
        assert!(out.fetched);
        assert_eq!(out.pin, pinned);
        assert_eq!(
            fs::read_to_string(out.tree.join("library/src/a.cpp")).unwrap(),
            "int a;\n"
        );
        assert!(!root.join(".apt").exists());
    }

    #[test]
    fn tree_path_says_what_to_run() {
        let tmp = tempfile::tempdir().unwrap();
        let err = tree_path(tmp.path(), "rocblas", "6.4.4").unwrap_err();
        assert!(matches!(err, SourceError::NotFetched { .. }));
        assert!(
            err.to_string()
                .contains("rocqa sources fetch --lib rocblas --version 6.4.4"),
            "{err}"
        );
    }

    #[test]
    fn git_fetch_from_local_tag() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("upstream");
        fs::create_dir_all(&repo).unwrap();
        git(&repo, &["init", "-q"]);
        write(&repo.join("library/src/a.cpp"), "tagged\n");
        write(&repo.join("library/Tensile/Logic/x.yaml"), "big\n");
        git(&repo, &["add", "-A"]);
        git(&repo, &["commit", "-q", "-m", "first"]);
        git(&repo, &["tag", "-a", "-m", "release", "rocm-6.4.4"]);
        let tagged = git(&repo, &["rev-parse", "rocm-6.4.4^{commit}"]);
        write(&repo.join("library/src/a.cpp"), "after the tag\n");
        git(&repo, &["commit", "-q", "-am", "second"]);
        let head = git(&repo, &["rev-parse", "HEAD"]);
        assert_ne!(tagged, head);
        let url = format!("file://{}", repo.display());
        let root = tmp.path().join("rocm_sources");

        // A tag: shallow clone with --branch.
        let req = FetchRequest {
            lib: "rocblas".into(),
            version: "6.4.4".into(),
            from: FetchFrom::Git {
                url: url.clone(),
                rev: "rocm-6.4.4".into(),
            },
            exclude: vec!["*/Tensile/Logic/*".into()],
        };
        let out = fetch(&req, &root).unwrap();
        assert!(out.fetched);
        assert_eq!(
            out.pin.origin,
            Origin::Git {
                url: url.clone(),
                rev: "rocm-6.4.4".into(),
                commit: tagged.clone()
            }
        );
        assert_eq!(
            fs::read_to_string(out.tree.join("library/src/a.cpp")).unwrap(),
            "tagged\n"
        );
        assert!(!out.tree.join(".git").exists());
        assert!(!out.tree.join("library/Tensile/Logic/x.yaml").exists());
        assert_eq!(out.pin.sha256, tree::tree_sha256(&out.tree).unwrap());
        assert!(!fetch(&req, &root).unwrap().fetched);

        // A commit id: --branch fails, the full clone + checkout fallback works.
        let req = FetchRequest {
            version: "6.4.4.1".into(),
            from: FetchFrom::Git {
                url: url.clone(),
                rev: tagged.clone(),
            },
            ..req
        };
        let out = fetch(&req, &root).unwrap();
        assert!(matches!(&out.pin.origin, Origin::Git { commit, .. } if *commit == tagged));
        assert_eq!(
            fs::read_to_string(out.tree.join("library/src/a.cpp")).unwrap(),
            "tagged\n"
        );

        // A rev that does not exist fails and leaves nothing behind.
        let req = FetchRequest {
            version: "9.9.9".into(),
            from: FetchFrom::Git {
                url,
                rev: "no-such-tag".into(),
            },
            ..req
        };
        let err = fetch(&req, &root).unwrap_err();
        assert!(matches!(err, SourceError::CommandFailed { .. }), "{err}");
        assert!(!root.join("rocblas-9.9.9").exists());
        let names: Vec<_> = fs::read_dir(&root)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(names.iter().all(|n| !n.starts_with(".tmp")), "{names:?}");
    }
}
