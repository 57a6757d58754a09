//! Debian source packages, fetched through a private apt configuration.
//!
//! apt gets its own sources list, package lists and cache under `root/.apt/`, so the
//! system's `/etc/apt` is never written and its suites never change. `apt-cache showsrc`
//! gives the orig tarball's name and SHA-256; `apt-get source --download-only` fetches
//! it. That command exits non-zero when the `.dsc` is missing from the mirror (common for
//! the ROCm packages) even though the tarball arrived, so the tarball's SHA-256 decides,
//! not the exit code.

use std::cmp::Ordering;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

use tracing::{debug, info, warn};

use super::{
    io_err, run, run_ok, stderr_tail, tree, DebianSpec, FetchRequest, SourceError, Staged,
};
use crate::model::{Origin, SourcePin};

/// Keyring that signs Debian's archive (package `debian-archive-keyring`).
const KEYRING: &str = "/usr/share/keyrings/debian-archive-keyring.gpg";

/// Package lists older than this are refreshed before use.
const LISTS_MAX_AGE: Duration = Duration::from_secs(24 * 60 * 60);

/// Downloads, verifies and unpacks the orig tarball of `spec` into a temp folder in `root`.
///
/// `pinned` is the existing pin of this library version, if any. When its tarball is still
/// in `root/.downloads/` with the pinned SHA-256, it is unpacked without asking apt (so a
/// re-fetch works offline). Otherwise its Debian revision is preferred when `spec` names
/// none; if the archive dropped that revision, the newest one for the same upstream
/// version is taken and the caller's SHA-256 check against the pin decides.
pub(super) fn stage(
    spec: &DebianSpec,
    req: &FetchRequest,
    root: &Path,
    label: &str,
    pinned: Option<&SourcePin>,
) -> Result<Staged, SourceError> {
    let downloads = root.join(".downloads");
    let pinned = pinned.and_then(|p| match &p.origin {
        Origin::Debian {
            package,
            debian_version,
            tarball,
        } if *package == spec.package
            && spec
                .debian_version
                .as_ref()
                .is_none_or(|v| v == debian_version) =>
        {
            Some((p, debian_version.as_str(), tarball.as_str()))
        }
        _ => None,
    });
    if let Some((pin, _, tarball)) = pinned {
        let file = downloads.join(tarball);
        if super::check_name("tarball", tarball).is_ok()
            && file.is_file()
            && tree::file_sha256(&file)?.0 == pin.sha256
        {
            info!(file = %file.display(), "Reusing the pinned tarball; apt is not needed.");
            let (tmp, top) = tree::unpack(&file, root, label, &req.exclude)?;
            return Ok(Staged {
                _tmp: tmp,
                top,
                origin: pin.origin.clone(),
                sha256: pin.sha256.clone(),
            });
        }
    }

    let apt = Apt::prepare(root, spec)?;
    let mut updated = false;
    if apt.needs_update()? {
        apt.update()?;
        updated = true;
    }
    let pinned_version = pinned.map(|(_, v, _)| v);
    let wanted = spec.debian_version.as_deref().or(pinned_version);
    let pick = |text: &str| {
        let stanzas = parse_showsrc(text);
        match select(&stanzas, spec, &req.version, wanted) {
            Err(SourceError::VersionNotFound { .. }) if spec.debian_version.is_none() => {
                select(&stanzas, spec, &req.version, None)
            }
            other => other,
        }
    };
    let mut chosen = pick(&apt.showsrc()?);
    if !updated
        && matches!(
            chosen,
            Err(SourceError::PackageNotFound { .. } | SourceError::VersionNotFound { .. })
        )
    {
        info!(package = %spec.package, "Version not in the package lists; refreshing them.");
        apt.update()?;
        chosen = pick(&apt.showsrc()?);
    }
    let src = chosen?;
    if let Some(pinned_version) = pinned_version.filter(|v| *v != src.version) {
        warn!(pinned = pinned_version, chosen = %src.version, "Pinned Debian revision is gone from the archive; trying the newest one for the same upstream version.");
    }
    let orig = orig_tarball(&src).ok_or_else(|| SourceError::NoOrigTarball {
        package: src.package.clone(),
        debian_version: src.version.clone(),
    })?;
    let url = format!(
        "{}/{}/{}",
        spec.mirror.trim_end_matches('/'),
        src.directory,
        orig.name
    );
    info!(package = %src.package, debian_version = %src.version, tarball = %orig.name, size = orig.size, "Debian source package chosen.");

    fs::create_dir_all(&downloads).map_err(io_err("create directory", &downloads))?;
    let file = downloads.join(&orig.name);
    let mut have = false;
    if file.is_file() {
        match verify(&file, &orig.sha256, orig.size) {
            Ok(()) => {
                info!(file = %file.display(), "Reusing the downloaded tarball.");
                have = true;
            }
            Err(e @ SourceError::ShaMismatch { .. }) => {
                warn!(file = %file.display(), error = %e, "Downloaded tarball is stale; downloading it again.");
                fs::remove_file(&file).map_err(io_err("remove", &file))?;
            }
            Err(e) => return Err(e),
        }
    }
    if !have {
        info!(url = %url, "Downloading the orig tarball.");
        let stderr = apt.download(&downloads, &src)?;
        if !file.is_file() {
            return Err(SourceError::DownloadMissing { file, url, stderr });
        }
        verify(&file, &orig.sha256, orig.size)?;
    }

    let (tmp, top) = tree::unpack(&file, root, label, &req.exclude)?;
    Ok(Staged {
        _tmp: tmp,
        top,
        origin: Origin::Debian {
            package: src.package,
            debian_version: src.version,
            tarball: orig.name,
        },
        sha256: orig.sha256,
    })
}

/// Checks a file against the SHA-256 and size from the package index.
pub(super) fn verify(file: &Path, sha256: &str, size: u64) -> Result<(), SourceError> {
    let (actual, actual_size) = tree::file_sha256(file)?;
    if actual.eq_ignore_ascii_case(sha256) && actual_size == size {
        debug!(file = %file.display(), sha256 = %actual, "Tarball checksum verified.");
        Ok(())
    } else {
        Err(SourceError::ShaMismatch {
            file: file.to_path_buf(),
            expected: sha256.to_ascii_lowercase(),
            expected_size: size,
            actual,
            actual_size,
        })
    }
}

/// apt pointed at a private state folder.
struct Apt {
    /// `-o Dir::...` options shared by every apt call.
    opts: Vec<String>,
    lists: PathBuf,
    /// True when the sources entry was just (re)written.
    sources_changed: bool,
    package: String,
    mirror: String,
    suites: String,
}

impl Apt {
    /// Creates `root/.apt/` with a deb-src entry for the spec's mirror and suites.
    fn prepare(root: &Path, spec: &DebianSpec) -> Result<Apt, SourceError> {
        if spec.suites.is_empty() {
            return Err(SourceError::NoSuites {
                package: spec.package.clone(),
            });
        }
        for (what, value) in std::iter::once(("Debian package", &spec.package))
            .chain(std::iter::once(("mirror", &spec.mirror)))
            .chain(spec.suites.iter().map(|s| ("suite", s)))
        {
            if value.is_empty() || value.contains(char::is_whitespace) || value.starts_with('-') {
                return Err(SourceError::InvalidName {
                    what,
                    value: value.clone(),
                });
            }
        }
        if !Path::new(KEYRING).is_file() {
            return Err(SourceError::KeyringMissing {
                path: PathBuf::from(KEYRING),
            });
        }
        let base = root.join(".apt");
        let parts = base.join("sources.d");
        let lists = base.join("lists");
        let cache = base.join("cache");
        for d in [
            parts.clone(),
            lists.join("partial"),
            cache.join("archives").join("partial"),
        ] {
            fs::create_dir_all(&d).map_err(io_err("create directory", &d))?;
        }
        let suites = spec.suites.join(" ");
        let entry = format!(
            "# Written by rocqa: a private apt configuration, used only with -o Dir::... options.\n\
             Types: deb-src\nURIs: {}\nSuites: {suites}\nComponents: main\nSigned-By: {KEYRING}\n",
            spec.mirror
        );
        let file = parts.join("rocqa.sources");
        let sources_changed = fs::read_to_string(&file).ok().as_deref() != Some(entry.as_str());
        if sources_changed {
            fs::write(&file, &entry).map_err(io_err("write", &file))?;
        }
        let opts = vec![
            "-o".to_string(),
            "Dir::Etc::SourceList=/dev/null".to_string(),
            "-o".to_string(),
            format!("Dir::Etc::SourceParts={}", parts.display()),
            "-o".to_string(),
            format!("Dir::State::Lists={}", lists.display()),
            "-o".to_string(),
            format!("Dir::Cache={}", cache.display()),
        ];
        Ok(Apt {
            opts,
            lists,
            sources_changed,
            package: spec.package.clone(),
            mirror: spec.mirror.clone(),
            suites,
        })
    }

    /// True when the sources entry changed, or the Sources lists are missing or a day old.
    fn needs_update(&self) -> Result<bool, SourceError> {
        if self.sources_changed {
            return Ok(true);
        }
        Ok(match newest_sources_list(&self.lists)? {
            None => true,
            Some(modified) => SystemTime::now()
                .duration_since(modified)
                .is_ok_and(|age| age > LISTS_MAX_AGE),
        })
    }

    fn command(&self, tool: &str) -> Command {
        let mut cmd = Command::new(tool);
        cmd.args(&self.opts).env("LC_ALL", "C");
        cmd
    }

    fn update(&self) -> Result<(), SourceError> {
        info!(mirror = %self.mirror, suites = %self.suites, "Updating the private apt source lists.");
        let hint = format!(
            "Check that {} is reachable and has the suites {}.",
            self.mirror, self.suites
        );
        run_ok(
            self.command("apt-get").args(["-q", "update"]),
            "apt-get",
            &hint,
        )?;
        Ok(())
    }

    /// `apt-cache showsrc <package>`; empty when apt knows no such package.
    fn showsrc(&self) -> Result<String, SourceError> {
        let mut cmd = self.command("apt-cache");
        cmd.args(["showsrc", &self.package]);
        let out = run(&mut cmd, "apt-cache")?;
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr);
        if !out.status.success() && stdout.trim().is_empty() && !stderr.contains("Unable to locate")
        {
            return Err(SourceError::CommandFailed {
                command: super::command_line(&cmd),
                status: out.status.to_string(),
                stderr: stderr_tail(&out.stderr),
                hint: "Delete the .apt folder of the sources root and fetch again.".to_string(),
            });
        }
        Ok(stdout)
    }

    /// `apt-get source --download-only <pkg>=<ver>` in `dir`; returns apt's stderr tail.
    ///
    /// The exit code is ignored on purpose (see the module docs); the caller checks the file.
    fn download(&self, dir: &Path, src: &SrcStanza) -> Result<String, SourceError> {
        let mut cmd = self.command("apt-get");
        cmd.args(["-q", "-o", "APT::Get::Only-Source=true"])
            .args(["source", "--download-only"])
            .arg(format!("{}={}", src.package, src.version))
            .current_dir(dir);
        let out = run(&mut cmd, "apt-get")?;
        let tail = stderr_tail(&out.stderr);
        if !out.status.success() {
            debug!(status = %out.status, stderr = %tail, "apt-get source exited non-zero; checking the tarball anyway.");
        }
        Ok(tail)
    }
}

/// Modification time of the newest `*_Sources*` list in apt's lists folder.
fn newest_sources_list(lists: &Path) -> Result<Option<SystemTime>, SourceError> {
    let mut newest = None;
    for entry in fs::read_dir(lists).map_err(io_err("read", lists))? {
        let entry = entry.map_err(io_err("read", lists))?;
        if !entry.file_name().to_string_lossy().contains("_Sources") {
            continue;
        }
        let modified = entry
            .metadata()
            .and_then(|m| m.modified())
            .map_err(io_err("read", &entry.path()))?;
        newest = newest.max(Some(modified));
    }
    Ok(newest)
}

/// One stanza of `apt-cache showsrc` output, reduced to what the fetch needs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(super) struct SrcStanza {
    pub(super) package: String,
    pub(super) version: String,
    /// Pool folder on the mirror, e.g. `pool/main/r/rocblas`.
    pub(super) directory: String,
    /// The `Checksums-Sha256:` entries.
    pub(super) checksums: Vec<FileSum>,
}

/// One `Checksums-Sha256:` line: hash, size, file name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct FileSum {
    pub(super) sha256: String,
    pub(super) size: u64,
    pub(super) name: String,
}

/// Splits `apt-cache showsrc` output (deb822 stanzas) into source stanzas.
pub(super) fn parse_showsrc(text: &str) -> Vec<SrcStanza> {
    let mut out = Vec::new();
    let mut cur = SrcStanza::default();
    let mut field = String::new();
    for line in text.lines().chain(std::iter::once("")) {
        if line.trim().is_empty() {
            let done = std::mem::take(&mut cur);
            if !done.package.is_empty() && !done.version.is_empty() {
                out.push(done);
            }
            field.clear();
            continue;
        }
        if line.starts_with([' ', '\t']) {
            if field == "Checksums-Sha256" {
                let parts: Vec<&str> = line.split_whitespace().collect();
                if let [sha256, size, name] = parts[..] {
                    if let Ok(size) = size.parse() {
                        cur.checksums.push(FileSum {
                            sha256: sha256.to_ascii_lowercase(),
                            size,
                            name: name.to_string(),
                        });
                    }
                }
            }
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        field = key.trim().to_string();
        let value = value.trim().to_string();
        match field.as_str() {
            "Package" => cur.package = value,
            "Version" => cur.version = value,
            "Directory" => cur.directory = value,
            _ => {}
        }
    }
    out
}

/// Picks the stanza for `version`: the named Debian version, or the highest Debian
/// version whose upstream part is `version`.
pub(super) fn select(
    stanzas: &[SrcStanza],
    spec: &DebianSpec,
    version: &str,
    debian_version: Option<&str>,
) -> Result<SrcStanza, SourceError> {
    let own: Vec<&SrcStanza> = stanzas
        .iter()
        .filter(|s| s.package == spec.package)
        .collect();
    if own.is_empty() {
        return Err(match stanzas.first() {
            Some(other) => SourceError::NotSourcePackage {
                requested: spec.package.clone(),
                source_package: other.package.clone(),
            },
            None => SourceError::PackageNotFound {
                package: spec.package.clone(),
                mirror: spec.mirror.clone(),
                suites: spec.suites.join(" "),
            },
        });
    }
    let found = match debian_version {
        Some(wanted) => {
            let upstream = upstream_of(wanted);
            if upstream != version {
                return Err(SourceError::VersionMismatch {
                    package: spec.package.clone(),
                    debian_version: wanted.to_string(),
                    upstream: upstream.to_string(),
                    version: version.to_string(),
                });
            }
            own.iter().find(|s| s.version == wanted)
        }
        None => own
            .iter()
            .filter(|s| upstream_of(&s.version) == version)
            .max_by(|a, b| cmp_version(&a.version, &b.version)),
    };
    if let Some(s) = found {
        return Ok((*s).clone());
    }
    let mut available: Vec<&str> = own.iter().map(|s| s.version.as_str()).collect();
    available.sort_by(|a, b| cmp_version(a, b));
    available.dedup();
    Err(SourceError::VersionNotFound {
        package: spec.package.clone(),
        wanted: debian_version.map_or_else(|| format!("for upstream {version}"), str::to_string),
        available: available.join(", "),
    })
}

/// The upstream tarball entry: `<pkg>_<upstream>.orig.tar.{gz,xz,bz2}` (not `orig-<component>`).
pub(super) fn orig_tarball(src: &SrcStanza) -> Option<FileSum> {
    let (upstream, _revision) = without_epoch(&src.version).rsplit_once('-')?;
    ["gz", "xz", "bz2"].iter().find_map(|ext| {
        let name = format!("{}_{upstream}.orig.tar.{ext}", src.package);
        src.checksums.iter().find(|f| f.name == name).cloned()
    })
}

/// Upstream part of a Debian version: no epoch, no revision, no `+dfsg`-style suffix.
pub(super) fn upstream_of(debian_version: &str) -> &str {
    let v = without_epoch(debian_version);
    let v = v.rsplit_once('-').map_or(v, |(upstream, _)| upstream);
    v.split_once('+').map_or(v, |(upstream, _)| upstream)
}

fn without_epoch(v: &str) -> &str {
    match v.split_once(':') {
        Some((epoch, rest)) if epoch.bytes().all(|b| b.is_ascii_digit()) => rest,
        _ => v,
    }
}

/// Compares two version strings like dpkg (epoch, then upstream, then revision).
pub(super) fn cmp_version(a: &str, b: &str) -> Ordering {
    fn split(v: &str) -> (u64, &str, &str) {
        let (epoch, rest) = match v.split_once(':') {
            Some((e, rest)) if e.bytes().all(|b| b.is_ascii_digit()) => {
                (e.parse().unwrap_or(0), rest)
            }
            _ => (0, v),
        };
        let (upstream, revision) = rest.rsplit_once('-').unwrap_or((rest, ""));
        (epoch, upstream, revision)
    }
    let (ea, ua, ra) = split(a);
    let (eb, ub, rb) = split(b);
    ea.cmp(&eb)
        .then_with(|| verrevcmp(ua.as_bytes(), ub.as_bytes()))
        .then_with(|| verrevcmp(ra.as_bytes(), rb.as_bytes()))
}

/// dpkg's `verrevcmp`: alternating non-digit runs (`~` before everything, letters before
/// other symbols) and numeric runs.
fn verrevcmp(a: &[u8], b: &[u8]) -> Ordering {
    fn order(c: Option<&u8>) -> i32 {
        match c {
            None => 0,
            Some(c) if c.is_ascii_digit() => 0,
            Some(c) if c.is_ascii_alphabetic() => i32::from(*c),
            Some(b'~') => -1,
            Some(c) => i32::from(*c) + 256,
        }
    }
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        while (i < a.len() && !a[i].is_ascii_digit()) || (j < b.len() && !b[j].is_ascii_digit()) {
            let (ac, bc) = (order(a.get(i)), order(b.get(j)));
            if ac != bc {
                return ac.cmp(&bc);
            }
            i += 1;
            j += 1;
        }
        while i < a.len() && a[i] == b'0' {
            i += 1;
        }
        while j < b.len() && b[j] == b'0' {
            j += 1;
        }
        let mut first_diff = Ordering::Equal;
        while i < a.len() && a[i].is_ascii_digit() && j < b.len() && b[j].is_ascii_digit() {
            if first_diff == Ordering::Equal {
                first_diff = a[i].cmp(&b[j]);
            }
            i += 1;
            j += 1;
        }
        if i < a.len() && a[i].is_ascii_digit() {
            return Ordering::Greater;
        }
        if j < b.len() && b[j].is_ascii_digit() {
            return Ordering::Less;
        }
        if first_diff != Ordering::Equal {
            return first_diff;
        }
    }
    Ordering::Equal
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Modelled on real `apt-cache showsrc rocblas` output (trixie + sid lists).
    const SHOWSRC_ROCBLAS: &str = "\
Package: rocblas
Binary: librocblas0, librocblas-dev, librocblas0-bench, librocblas0-tests, librocblas0-tests-data, librocblas-doc
Version: 5.5.1+dfsg-7
Maintainer: Debian ROCm Team <debian-ai@lists.debian.org>
Uploaders: Maxime Chambonnet <maxzor@maxzor.eu>, Cordell Bloor <cgmb@slerp.xyz>, Christian Kastner <ckk@debian.org>,
Build-Depends: debhelper-compat (= 13), cmake, gfortran, python3-venv, python3-yaml, python3-msgpack, hipcc (>= 5.6.1~), libamd-comgr-dev (>= 6.0~), libhsa-runtime-dev (>= 5.7.1~), llvm-17, rocm-cmake (>= 5.3.0), libmsgpack-cxx-dev, libblas-dev, libgtest-dev <!nocheck>
Architecture: amd64 arm64 ppc64el all
Standards-Version: 4.7.0
Format: 3.0 (quilt)
Files:
 71e571866a5eb566e8dfc19a7e0eb8c7 3346 rocblas_5.5.1+dfsg-7.dsc
 1b7dfa320e5691413f97049831d2f6f7 9575108 rocblas_5.5.1+dfsg.orig-tensile.tar.xz
 f4d914d9051a85c5cd97a4865a47773c 9605772 rocblas_5.5.1+dfsg.orig.tar.xz
 e536dd2b473048aa7fb00543afdd3a3a 372284 rocblas_5.5.1+dfsg-7.debian.tar.xz
Vcs-Browser: https://salsa.debian.org/rocm-team/rocblas
Vcs-Git: https://salsa.debian.org/rocm-team/rocblas.git
Checksums-Sha256:
 efe87c910a76b6e0f050ff0560418705f9e3ac13b554870b39edff82ddd4060b 3346 rocblas_5.5.1+dfsg-7.dsc
 f93fb057f96deba0c6e145221e34f5b95ae3d0575bf7a929391dcce972c5892b 9575108 rocblas_5.5.1+dfsg.orig-tensile.tar.xz
 613bc543ea732cbb2d1a63db3a9e884f79a9c25b5dabd07ce99c6885014709f8 9605772 rocblas_5.5.1+dfsg.orig.tar.xz
 64356b8820e96e6369c97c3f5b93f7c895954ae870892ae3f2bfae170b9eb7d7 372284 rocblas_5.5.1+dfsg-7.debian.tar.xz
Homepage: https://github.com/ROCm/rocBLAS
Package-List: 
 librocblas-dev deb libdevel optional arch=amd64,arm64,ppc64el
 librocblas0 deb libs optional arch=amd64,arm64,ppc64el
Testsuite: autopkgtest
Directory: pool/main/r/rocblas
Priority: optional
Section: misc

Package: rocblas
Binary: librocblas4, librocblas-dev, librocblas4-bench, librocblas4-tests, librocblas4-tests-data, librocblas-doc
Version: 6.4.4-4
Maintainer: Debian ROCm Team <debian-ai@lists.debian.org>
Architecture: amd64 arm64 all
Standards-Version: 4.7.2
Format: 3.0 (quilt)
Files:
 bfe562d71dd820d3969af9f62c408c4b 3373 rocblas_6.4.4-4.dsc
 60d910bb73867d99f486486e6cfb2836 12731812 rocblas_6.4.4.orig-tensile.tar.gz
 ae7699706dfbca18c697fc2c605e5657 58793110 rocblas_6.4.4.orig.tar.gz
 aa8a78a4eb152177b420a865dcfb6524 132732 rocblas_6.4.4-4.debian.tar.xz
Vcs-Git: https://salsa.debian.org/rocm-team/rocblas.git
Checksums-Sha256:
 f81f0cb2a22f14546c8a87f17cb9abeab9df06bd34d56ada62a1afe0304325b6 3373 rocblas_6.4.4-4.dsc
 48ee6a9b33631625c7613e1fb8872290cb7c70977506c4f8b7ed102f293fdf38 12731812 rocblas_6.4.4.orig-tensile.tar.gz
 bc374b57579fa8458132f73d9a152517af63b9f411a2176b72829f4a1d6021c1 58793110 rocblas_6.4.4.orig.tar.gz
 b68bd406cf11771e47dcac25ee3dea1e36c10c10fca71bb27a1840a1d90c5eb7 132732 rocblas_6.4.4-4.debian.tar.xz
Homepage: https://github.com/ROCm/rocBLAS
Package-List: 
 librocblas-dev deb libdevel optional arch=amd64,arm64
 librocblas4 deb libs optional arch=amd64,arm64
Testsuite: autopkgtest
Directory: pool/main/r/rocblas
Priority: optional
Section: misc

";

    fn spec(package: &str) -> DebianSpec {
        DebianSpec {
            package: package.into(),
            debian_version: None,
            mirror: "http://deb.debian.org/debian".into(),
            suites: vec!["trixie".into(), "sid".into()],
        }
    }

    #[test]
    fn showsrc_parses_both_stanzas() {
        let stanzas = parse_showsrc(SHOWSRC_ROCBLAS);
        assert_eq!(stanzas.len(), 2);
        assert_eq!(stanzas[0].version, "5.5.1+dfsg-7");
        assert_eq!(stanzas[1].version, "6.4.4-4");
        assert_eq!(stanzas[1].directory, "pool/main/r/rocblas");
        assert_eq!(stanzas[1].checksums.len(), 4);
    }

    #[test]
    fn showsrc_picks_the_orig_tarball() {
        let stanzas = parse_showsrc(SHOWSRC_ROCBLAS);
        let s = spec("rocblas");

        let new = select(&stanzas, &s, "6.4.4", None).unwrap();
        assert_eq!(new.version, "6.4.4-4");
        let orig = orig_tarball(&new).unwrap();
        assert_eq!(orig.name, "rocblas_6.4.4.orig.tar.gz");
        assert_eq!(
            orig.sha256,
            "bc374b57579fa8458132f73d9a152517af63b9f411a2176b72829f4a1d6021c1"
        );
        assert_eq!(orig.size, 58_793_110);

        let old = select(&stanzas, &s, "5.5.1", None).unwrap();
        assert_eq!(old.version, "5.5.1+dfsg-7");
        let orig = orig_tarball(&old).unwrap();
        assert_eq!(orig.name, "rocblas_5.5.1+dfsg.orig.tar.xz");
        assert_eq!(
            orig.sha256,
            "613bc543ea732cbb2d1a63db3a9e884f79a9c25b5dabd07ce99c6885014709f8"
        );
        assert_eq!(orig.size, 9_605_772);

        let exact = select(&stanzas, &s, "6.4.4", Some("6.4.4-4")).unwrap();
        assert_eq!(exact, new);
    }

    #[test]
    fn showsrc_picks_the_highest_revision() {
        let mut stanzas = parse_showsrc(SHOWSRC_ROCBLAS);
        let mut newer = stanzas[1].clone();
        newer.version = "6.4.4-10".into();
        let mut older = stanzas[1].clone();
        older.version = "6.4.4-3".into();
        stanzas.insert(0, newer);
        stanzas.push(older);
        let chosen = select(&stanzas, &spec("rocblas"), "6.4.4", None).unwrap();
        assert_eq!(chosen.version, "6.4.4-10");
    }

    #[test]
    fn showsrc_errors_say_what_exists() {
        let stanzas = parse_showsrc(SHOWSRC_ROCBLAS);
        let s = spec("rocblas");
        let err = select(&stanzas, &s, "7.2.4", None).unwrap_err();
        assert!(matches!(err, SourceError::VersionNotFound { .. }));
        assert!(err.to_string().contains("5.5.1+dfsg-7, 6.4.4-4"), "{err}");

        let err = select(&stanzas, &s, "6.4.4", Some("6.4.4-9")).unwrap_err();
        assert!(matches!(err, SourceError::VersionNotFound { .. }), "{err}");

        let err = select(&stanzas, &s, "5.5.1", Some("6.4.4-4")).unwrap_err();
        assert!(matches!(err, SourceError::VersionMismatch { .. }), "{err}");

        // `apt-cache showsrc librocblas0` answers with the source package's stanzas.
        let err = select(&stanzas, &spec("librocblas0"), "6.4.4", None).unwrap_err();
        assert!(err.to_string().contains("package = \"rocblas\""), "{err}");

        let err = select(&[], &s, "6.4.4", None).unwrap_err();
        assert!(matches!(err, SourceError::PackageNotFound { .. }));
    }

    #[test]
    fn native_or_tensile_only_has_no_orig() {
        let mut s = parse_showsrc(SHOWSRC_ROCBLAS).remove(1);
        s.checksums.retain(|f| !f.name.ends_with(".orig.tar.gz"));
        assert_eq!(orig_tarball(&s), None);
        s.version = "6.4.4".into();
        assert_eq!(orig_tarball(&s), None);
    }

    #[test]
    fn upstream_parts() {
        assert_eq!(upstream_of("6.4.4-4"), "6.4.4");
        assert_eq!(upstream_of("5.5.1+dfsg-7"), "5.5.1");
        assert_eq!(upstream_of("1:2.0-1-2"), "2.0-1");
        assert_eq!(upstream_of("6.4.3"), "6.4.3");
    }

    #[test]
    fn dpkg_version_order() {
        use Ordering::*;
        for (a, b, want) in [
            ("1.0~rc1-1", "1.0-1", Less),
            ("1.0-1", "1.0-2", Less),
            ("6.4.4-4", "6.4.4-10", Less),
            ("5.5.1+dfsg-7", "6.4.4-4", Less),
            ("6.4.4+dfsg-1", "6.4.4-1", Greater),
            ("1:0.1-1", "9.9-1", Greater),
            ("1.0a", "1.0+", Less),
            ("1.01", "1.1", Equal),
            ("10.0", "9.9", Greater),
            ("2.0", "2.0", Equal),
        ] {
            assert_eq!(cmp_version(a, b), want, "{a} vs {b}");
            assert_eq!(cmp_version(b, a), want.reverse(), "{b} vs {a}");
        }
    }

    #[test]
    fn verify_and_unpack_a_tarball() {
        let tmp = tempfile::tempdir().unwrap();
        let work = tmp.path().join("work");
        let pkg = work.join("pkg-1.0");
        fs::create_dir_all(pkg.join("library/src")).unwrap();
        fs::create_dir_all(pkg.join("Tensile/Logic")).unwrap();
        fs::write(pkg.join("library/src/a.cpp"), "int a;\n").unwrap();
        fs::write(pkg.join("Tensile/Logic/big.yaml"), "x\n").unwrap();
        let tarball = tmp.path().join("pkg_1.0.orig.tar.gz");
        let status = Command::new("tar")
            .arg("-czf")
            .arg(&tarball)
            .arg("-C")
            .arg(&work)
            .arg("pkg-1.0")
            .status()
            .unwrap();
        assert!(status.success());
        let (sha, size) = tree::file_sha256(&tarball).unwrap();
        assert_eq!(size, fs::metadata(&tarball).unwrap().len());
        let sha256sum = Command::new("sha256sum").arg(&tarball).output().unwrap();
        assert!(String::from_utf8_lossy(&sha256sum.stdout).starts_with(&sha));

        verify(&tarball, &sha, size).unwrap();
        verify(&tarball, &sha.to_ascii_uppercase(), size).unwrap();
        let wrong = "0".repeat(64);
        let err = verify(&tarball, &wrong, size).unwrap_err();
        assert!(matches!(err, SourceError::ShaMismatch { .. }));
        let msg = err.to_string();
        assert!(msg.contains(&wrong) && msg.contains(&sha), "{msg}");
        assert!(msg.contains("pkg_1.0.orig.tar.gz"), "{msg}");
        let err = verify(&tarball, &sha, size + 1).unwrap_err();
        assert!(matches!(err, SourceError::ShaMismatch { .. }));

        let root = tmp.path().join("root");
        fs::create_dir_all(&root).unwrap();
        let (guard, top) = tree::unpack(
            &tarball,
            &root,
            "pkg-1.0",
            &["*/Tensile/Logic/*".to_string()],
        )
        .unwrap();
        assert_eq!(top.file_name().unwrap(), "pkg-1.0");
        assert_eq!(
            fs::read_to_string(top.join("library/src/a.cpp")).unwrap(),
            "int a;\n"
        );
        assert!(!top.join("Tensile/Logic/big.yaml").exists());
        let tmp_dir = guard.path().to_path_buf();
        drop(guard);
        assert!(!tmp_dir.exists());

        // Two top-level entries: refused.
        fs::write(work.join("stray.txt"), "x").unwrap();
        let flat = tmp.path().join("flat.tar.xz");
        let status = Command::new("tar")
            .arg("-cJf")
            .arg(&flat)
            .arg("-C")
            .arg(&work)
            .args(["pkg-1.0", "stray.txt"])
            .status()
            .unwrap();
        assert!(status.success());
        let err = tree::unpack(&flat, &root, "flat", &[]).unwrap_err();
        assert!(matches!(err, SourceError::UnpackLayout { .. }), "{err}");

        // Not an archive at all.
        let junk = tmp.path().join("junk.tar.gz");
        fs::write(&junk, "not a tarball").unwrap();
        let err = tree::unpack(&junk, &root, "junk", &[]).unwrap_err();
        assert!(matches!(err, SourceError::CommandFailed { .. }), "{err}");
        assert_eq!(fs::read_dir(&root).unwrap().count(), 0);
    }

    #[test]
    fn lists_freshness() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        let apt = Apt::prepare(root, &spec("rocblas"));
        let Ok(mut apt) = apt else {
            // No Debian keyring on this machine: nothing else to check here.
            return;
        };
        assert!(apt.sources_changed);
        apt.sources_changed = false;
        assert!(apt.needs_update().unwrap());
        let list = apt
            .lists
            .join("deb.debian.org_debian_dists_sid_main_source_Sources.lz4");
        fs::write(&list, "x").unwrap();
        assert!(!apt.needs_update().unwrap());
        let old = SystemTime::now() - Duration::from_secs(2 * 24 * 60 * 60);
        fs::File::options()
            .write(true)
            .open(&list)
            .unwrap()
            .set_modified(old)
            .unwrap();
        assert!(apt.needs_update().unwrap());
        // Same spec again: the sources entry is unchanged.
        assert!(
            !Apt::prepare(root, &spec("rocblas"))
                .unwrap()
                .sources_changed
        );
        let mut other = spec("rocblas");
        other.suites = vec!["sid".into()];
        assert!(Apt::prepare(root, &other).unwrap().sources_changed);
        assert!(apt
            .opts
            .iter()
            .any(|o| o == "Dir::Etc::SourceList=/dev/null"));
    }
}
