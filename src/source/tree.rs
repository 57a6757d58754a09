//! Trees on disk: unpacking, copying, cloning and hashing.
//!
//! Every origin first lands in a temp folder inside the sources root (same file system),
//! so the final step is one `rename` and a failed fetch never leaves half a tree at
//! `root/<lib>-<version>`.

use std::fs;
use std::io::{self, Read};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

use sha2::{Digest, Sha256};
use tracing::{debug, info, warn};
use walkdir::WalkDir;

use super::{io_err, run, run_ok, SourceError, Staged};
use crate::model::Origin;

/// A folder inside the sources root that is removed when dropped.
#[derive(Debug)]
pub(super) struct TempDir(PathBuf);

impl TempDir {
    /// Creates `root/.tmp-<label>-<pid>-<nanos>`.
    pub(super) fn new_in(root: &Path, label: &str) -> Result<TempDir, SourceError> {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let path = root.join(format!(".tmp-{label}-{}-{nanos}", std::process::id()));
        fs::create_dir(&path).map_err(io_err("create directory", &path))?;
        Ok(TempDir(path))
    }

    pub(super) fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if let Err(e) = fs::remove_dir_all(&self.0) {
            if e.kind() != io::ErrorKind::NotFound {
                warn!(path = %self.0.display(), error = %e, "Could not remove a temp folder.");
            }
        }
    }
}

/// Unpacks `archive` into a temp folder in `root`, skipping members matching `exclude`,
/// and returns the folder with its single top-level directory.
pub(super) fn unpack(
    archive: &Path,
    root: &Path,
    label: &str,
    exclude: &[String],
) -> Result<(TempDir, PathBuf), SourceError> {
    let tmp = TempDir::new_in(root, label)?;
    let mut cmd = Command::new("tar");
    cmd.arg("-x").arg("--no-same-owner");
    for glob in exclude {
        cmd.arg(format!("--exclude={glob}"));
    }
    cmd.arg("-f").arg(archive).arg("-C").arg(tmp.path());
    info!(archive = %archive.display(), excluded = exclude.len(), "Unpacking the tarball.");
    let hint = format!(
        "The archive may be damaged: delete {} and fetch again.",
        archive.display()
    );
    run_ok(&mut cmd, "tar", &hint)?;

    let mut entries = Vec::new();
    for entry in fs::read_dir(tmp.path()).map_err(io_err("read", tmp.path()))? {
        let entry = entry.map_err(io_err("read", tmp.path()))?;
        entries.push(entry);
    }
    match &entries[..] {
        [one] if one.file_type().is_ok_and(|t| t.is_dir()) => {
            let top = one.path();
            Ok((tmp, top))
        }
        _ => {
            let mut names: Vec<String> = entries
                .iter()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            names.sort();
            let found = if names.is_empty() {
                "nothing".to_string()
            } else {
                names.join(", ")
            };
            Err(SourceError::UnpackLayout {
                archive: archive.to_path_buf(),
                found,
            })
        }
    }
}

/// Copies a local tree (without `.git` and excluded paths) into a temp folder in `root`.
pub(super) fn stage_dir(
    src: &Path,
    root: &Path,
    label: &str,
    exclude: &[String],
) -> Result<Staged, SourceError> {
    let src = fs::canonicalize(src).map_err(io_err("read", src))?;
    if !src.is_dir() {
        return Err(SourceError::NotADirectory { path: src });
    }
    let tmp = TempDir::new_in(root, label)?;
    let top = tmp.path().join("tree");
    info!(from = %src.display(), "Copying the source tree.");
    let files = copy_tree(&src, &top, root, exclude)?;
    let sha256 = tree_sha256(&top)?;
    debug!(files, sha256 = %sha256, "Source tree copied.");
    Ok(Staged {
        _tmp: tmp,
        top,
        origin: Origin::Dir {
            path: src.to_string_lossy().into_owned(),
        },
        sha256,
    })
}

/// Clones `url` at `rev` into a temp folder in `root`, drops `.git` and excluded paths.
///
/// Tries a shallow `--branch` clone first (tags and branches); a commit id needs a full
/// clone and a checkout.
pub(super) fn stage_git(
    url: &str,
    rev: &str,
    root: &Path,
    label: &str,
    exclude: &[String],
) -> Result<Staged, SourceError> {
    if url.is_empty() || url.starts_with('-') {
        return Err(SourceError::InvalidName {
            what: "git url",
            value: url.to_string(),
        });
    }
    if rev.is_empty()
        || rev.starts_with('-')
        || rev.contains(|c: char| c.is_whitespace() || c.is_control())
    {
        return Err(SourceError::InvalidName {
            what: "git rev",
            value: rev.to_string(),
        });
    }
    let tmp = TempDir::new_in(root, label)?;
    let top = tmp.path().join("tree");
    info!(url, rev, "Cloning the source repository.");
    let shallow = run(
        git()
            .args(["clone", "-q", "--depth", "1", "--branch", rev, "--", url])
            .arg(&top),
        "git",
    )?;
    if !shallow.status.success() {
        debug!(stderr = %super::stderr_tail(&shallow.stderr), "Shallow clone failed.");
        warn!(
            url,
            rev, "Shallow clone of the rev failed; trying a full clone and checkout."
        );
        if top.exists() {
            fs::remove_dir_all(&top).map_err(io_err("remove", &top))?;
        }
        let hint = format!("Check that {url} is reachable and that you may read it.");
        run_ok(
            git()
                .args(["clone", "-q", "--no-checkout", "--", url])
                .arg(&top),
            "git",
            &hint,
        )?;
        let hint = format!("Check that {rev} is a tag, branch or commit of {url}.");
        run_ok(
            git()
                .arg("-C")
                .arg(&top)
                .args(["checkout", "-q", "--detach", rev]),
            "git",
            &hint,
        )?;
    }
    let out = run_ok(
        git().arg("-C").arg(&top).args(["rev-parse", "HEAD"]),
        "git",
        "The clone has no HEAD commit; check the rev.",
    )?;
    let commit = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let dot_git = top.join(".git");
    fs::remove_dir_all(&dot_git).map_err(io_err("remove", &dot_git))?;
    let pruned = prune(&top, exclude)?;
    let sha256 = tree_sha256(&top)?;
    debug!(commit = %commit, pruned, sha256 = %sha256, "Repository cloned.");
    Ok(Staged {
        _tmp: tmp,
        top,
        origin: Origin::Git {
            url: url.to_string(),
            rev: rev.to_string(),
            commit,
        },
        sha256,
    })
}

/// `git` that never prompts and ignores the user's advice settings.
fn git() -> Command {
    let mut cmd = Command::new("git");
    cmd.env("GIT_TERMINAL_PROMPT", "0")
        .env("LC_ALL", "C")
        .args(["-c", "advice.detachedHead=false"]);
    cmd
}

/// Walks `dir` in file-name order, skipping `.git`, `skip` and paths matching `exclude`.
fn walk<'a>(
    dir: &'a Path,
    skip: Option<&'a Path>,
    exclude: &'a [String],
) -> impl Iterator<Item = Result<walkdir::DirEntry, SourceError>> + 'a {
    WalkDir::new(dir)
        .follow_links(false)
        .sort_by(|a, b| a.file_name().as_bytes().cmp(b.file_name().as_bytes()))
        .into_iter()
        .filter_entry(move |e| {
            if e.depth() == 0 {
                return true;
            }
            if e.file_name() == ".git" || Some(e.path()) == skip {
                return false;
            }
            let rel = e.path().strip_prefix(dir).unwrap_or(e.path());
            !excluded(rel, exclude)
        })
        .map(move |r| {
            r.map_err(|e| {
                let path = e.path().unwrap_or(dir).to_path_buf();
                let source = e
                    .into_io_error()
                    .unwrap_or_else(|| io::Error::other("file system loop"));
                SourceError::Io {
                    action: "read",
                    path,
                    source,
                }
            })
        })
}

/// Copies `src` into the new folder `dst`; symlinks are copied as links. Returns the file count.
///
/// `root` is skipped so that copying a folder that contains the sources root terminates.
fn copy_tree(src: &Path, dst: &Path, root: &Path, exclude: &[String]) -> Result<u64, SourceError> {
    let mut files = 0;
    for entry in walk(src, Some(root), exclude) {
        let entry = entry?;
        let rel = entry.path().strip_prefix(src).unwrap_or(entry.path());
        let target = dst.join(rel);
        let kind = entry.file_type();
        if kind.is_dir() {
            fs::create_dir_all(&target).map_err(io_err("create directory", &target))?;
        } else if kind.is_file() {
            fs::copy(entry.path(), &target).map_err(io_err("copy to", &target))?;
            files += 1;
        } else if kind.is_symlink() {
            let link = fs::read_link(entry.path()).map_err(io_err("read", entry.path()))?;
            std::os::unix::fs::symlink(&link, &target).map_err(io_err("create link", &target))?;
            files += 1;
        } else {
            debug!(path = %entry.path().display(), "Skipping a special file.");
        }
    }
    Ok(files)
}

/// Removes the paths under `dir` that match `exclude`; returns how many were removed.
fn prune(dir: &Path, exclude: &[String]) -> Result<u64, SourceError> {
    if exclude.is_empty() {
        return Ok(0);
    }
    let mut doomed = Vec::new();
    for entry in WalkDir::new(dir).min_depth(1) {
        let entry = entry.map_err(|e| SourceError::Io {
            action: "read",
            path: e.path().unwrap_or(dir).to_path_buf(),
            source: e
                .into_io_error()
                .unwrap_or_else(|| io::Error::other("file system loop")),
        })?;
        let rel = entry.path().strip_prefix(dir).unwrap_or(entry.path());
        if excluded(rel, exclude) {
            doomed.push((entry.path().to_path_buf(), entry.file_type().is_dir()));
        }
    }
    let mut removed = 0;
    for (path, is_dir) in doomed {
        // A folder removed earlier may already have taken this path with it.
        let result = if is_dir {
            fs::remove_dir_all(&path)
        } else {
            fs::remove_file(&path)
        };
        match result {
            Ok(()) => removed += 1,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_err("remove", &path)(e)),
        }
    }
    Ok(removed)
}

/// True when `rel` (or any tail of it starting at a folder boundary) matches a glob.
///
/// Mirrors GNU tar's defaults for `--exclude`: unanchored, and `*` matches `/` too.
fn excluded(rel: &Path, exclude: &[String]) -> bool {
    if exclude.is_empty() {
        return false;
    }
    let rel = rel.as_os_str().as_bytes();
    let mut tails = vec![rel];
    tails.extend(
        rel.iter()
            .enumerate()
            .filter(|(_, b)| **b == b'/')
            .map(|(i, _)| &rel[i + 1..]),
    );
    exclude
        .iter()
        .any(|g| tails.iter().any(|t| glob_match(g.as_bytes(), t)))
}

/// Matches `*` (any run, `/` included), `?` (one byte) and literal bytes.
fn glob_match(pattern: &[u8], text: &[u8]) -> bool {
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() && (pattern[p] == b'?' || pattern[p] == text[t]) {
            p += 1;
            t += 1;
        } else if p < pattern.len() && pattern[p] == b'*' {
            star = Some((p, t));
            p += 1;
        } else if let Some((sp, st)) = star {
            p = sp + 1;
            t = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

/// SHA-256 (hex) and size of a file, streamed.
pub(super) fn file_sha256(path: &Path) -> Result<(String, u64), SourceError> {
    let mut file = fs::File::open(path).map_err(io_err("open", path))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut size = 0u64;
    loop {
        let n = file.read(&mut buf).map_err(io_err("read", path))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        size += n as u64;
    }
    Ok((hex(&hasher.finalize()), size))
}

/// Content hash of a tree: SHA-256 over one `relative/path NUL sha256-hex LF` record per
/// file, sorted by path bytes, `.git` skipped. A symlink counts as a file whose content
/// is its target. Empty folders and file modes do not count.
pub(super) fn tree_sha256(dir: &Path) -> Result<String, SourceError> {
    let mut records: Vec<(Vec<u8>, String)> = Vec::new();
    for entry in walk(dir, None, &[]) {
        let entry = entry?;
        let kind = entry.file_type();
        let digest = if kind.is_file() {
            file_sha256(entry.path())?.0
        } else if kind.is_symlink() {
            let link = fs::read_link(entry.path()).map_err(io_err("read", entry.path()))?;
            hex(&Sha256::digest(link.as_os_str().as_bytes()))
        } else {
            continue;
        };
        let rel = entry.path().strip_prefix(dir).unwrap_or(entry.path());
        records.push((rel.as_os_str().as_bytes().to_vec(), digest));
    }
    records.sort();
    let mut hasher = Sha256::new();
    for (path, digest) in &records {
        hasher.update(path);
        hasher.update([0]);
        hasher.update(digest.as_bytes());
        hasher.update(b"\n");
    }
    Ok(hex(&hasher.finalize()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_like_tar_exclude() {
        let ex = |g: &str, p: &str| excluded(Path::new(p), &[g.to_string()]);
        assert!(ex(
            "*/Tensile/Logic/*",
            "rocBLAS-rocm-6.4.4/library/src/blas3/Tensile/Logic/asm_full/a.yaml"
        ));
        assert!(ex("*/Tensile/Logic/*", "library/Tensile/Logic/x.yaml"));
        assert!(!ex("*/Tensile/Logic/*", "library/Tensile/Logic"));
        assert!(!ex("*/Tensile/Logic/*", "library/src/Logic/x.yaml"));
        // Unanchored: a bare name matches at any depth.
        assert!(ex("docs", "a/b/docs"));
        assert!(!ex("docs", "a/b/docs2"));
        assert!(ex("*.yaml", "a/b.yaml"));
        assert!(ex("?.cpp", "src/a.cpp"));
        assert!(!ex("?.cpp", "src/ab.cpp"));
        assert!(glob_match(b"a*b*c", b"aXXbYYc"));
        assert!(!glob_match(b"a*b*c", b"aXXbYY"));
        assert!(glob_match(b"**", b""));
    }

    #[test]
    fn tree_hash_covers_paths_and_contents() {
        let tmp = tempfile::tempdir().unwrap();
        let a = tmp.path().join("a");
        fs::create_dir_all(a.join("src")).unwrap();
        fs::write(a.join("src/x.cpp"), "x").unwrap();
        fs::write(a.join("y.h"), "y").unwrap();
        let h1 = tree_sha256(&a).unwrap();

        // Same content elsewhere, plus .git and an empty folder: same hash.
        let b = tmp.path().join("b");
        fs::create_dir_all(b.join("src")).unwrap();
        fs::create_dir_all(b.join(".git")).unwrap();
        fs::create_dir_all(b.join("empty")).unwrap();
        fs::write(b.join(".git/HEAD"), "ref").unwrap();
        fs::write(b.join("src/x.cpp"), "x").unwrap();
        fs::write(b.join("y.h"), "y").unwrap();
        assert_eq!(tree_sha256(&b).unwrap(), h1);

        // Renamed file or changed byte: different hash.
        fs::rename(b.join("y.h"), b.join("z.h")).unwrap();
        assert_ne!(tree_sha256(&b).unwrap(), h1);
        fs::rename(b.join("z.h"), b.join("y.h")).unwrap();
        fs::write(b.join("y.h"), "Y").unwrap();
        assert_ne!(tree_sha256(&b).unwrap(), h1);

        // The documented record format, computed by hand.
        let sha = |s: &str| hex(&Sha256::digest(s.as_bytes()));
        let listing = format!("src/x.cpp\0{}\ny.h\0{}\n", sha("x"), sha("y"));
        assert_eq!(h1, sha(&listing));
    }

    #[test]
    fn copy_keeps_links_and_skips_root() {
        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path().join("src");
        fs::create_dir_all(src.join("inc")).unwrap();
        fs::write(src.join("inc/a.h"), "a").unwrap();
        std::os::unix::fs::symlink("inc/a.h", src.join("link.h")).unwrap();
        // The sources root sits inside the folder being copied.
        let root = src.join("rocm_sources");
        fs::create_dir_all(&root).unwrap();
        fs::write(root.join("sources.toml"), "").unwrap();
        let dst = tmp.path().join("dst");
        let n = copy_tree(&src, &dst, &root, &[]).unwrap();
        assert_eq!(n, 2);
        assert_eq!(
            fs::read_link(dst.join("link.h")).unwrap(),
            Path::new("inc/a.h")
        );
        assert!(!dst.join("rocm_sources").exists());
        fs::remove_dir_all(&root).unwrap();
        assert_eq!(tree_sha256(&dst).unwrap(), tree_sha256(&src).unwrap());
    }
}
