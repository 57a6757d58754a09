//! The compile cache: one verdict per snippet key in a SQLite table.
//!
//! The key is the SHA-256 of the snippet's code, the toolchain description and the
//! flags (see `Compiler::key`), so a new compiler, target list or include folder starts
//! afresh. Verdicts that depend on the machine's load rather than the code (`limit`) are
//! never stored. One connection behind a `Mutex`; WAL mode and a busy timeout let
//! several processes share the file.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use rusqlite::{params, Connection, OptionalExtension};

use super::{CompileError, Verdict};

/// Layout version, kept in `PRAGMA user_version`. Bump it when the table changes.
const LAYOUT_VERSION: i64 = 1;

pub(crate) struct Cache {
    conn: Mutex<Connection>,
    path: PathBuf,
}

impl std::fmt::Debug for Cache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cache")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl Cache {
    /// Opens (or creates) the cache file at `path`.
    pub fn open(path: &Path) -> Result<Cache, CompileError> {
        let fail = |what: &str, e: &dyn std::fmt::Display| CompileError::Cache {
            path: path.to_path_buf(),
            what: what.to_string(),
            detail: e.to_string(),
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| fail("cannot create its folder", &e))?;
        }
        let conn = Connection::open(path).map_err(|e| fail("cannot open", &e))?;
        conn.busy_timeout(std::time::Duration::from_secs(10))
            .map_err(|e| fail("cannot set busy timeout", &e))?;
        let _mode: String = conn
            .query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))
            .map_err(|e| fail("cannot switch to WAL mode", &e))?;
        conn.execute_batch("PRAGMA synchronous=NORMAL;")
            .map_err(|e| fail("cannot set synchronous mode", &e))?;
        let version: i64 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(|e| fail("cannot read", &e))?;
        match version {
            0 => conn
                .execute_batch(&format!(
                    "CREATE TABLE IF NOT EXISTS compile_outcomes (
                        key TEXT PRIMARY KEY NOT NULL,
                        ok INTEGER NOT NULL,
                        stage TEXT NOT NULL,
                        diagnostics TEXT NOT NULL,
                        created_unix INTEGER NOT NULL
                    );
                    PRAGMA user_version = {LAYOUT_VERSION};"
                ))
                .map_err(|e| fail("cannot create the table", &e))?,
            LAYOUT_VERSION => {}
            other => {
                return Err(fail(
                    "was written by another rocqa version",
                    &format!("layout {other}, this build reads {LAYOUT_VERSION}"),
                ))
            }
        }
        Ok(Cache {
            conn: Mutex::new(conn),
            path: path.to_path_buf(),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Connection> {
        // Statements are atomic, so a poisoned lock still guards a consistent file.
        self.conn.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The stored verdict for `key`; a read error is logged and counts as a miss.
    pub fn get(&self, key: &str) -> Option<Verdict> {
        let conn = self.lock();
        let r = conn
            .prepare_cached("SELECT ok, stage, diagnostics FROM compile_outcomes WHERE key = ?1")
            .and_then(|mut s| {
                s.query_row([key], |r| {
                    Ok(Verdict {
                        ok: r.get::<_, i64>(0)? != 0,
                        stage: r.get(1)?,
                        diagnostics: r.get(2)?,
                    })
                })
                .optional()
            });
        match r {
            Ok(v) => v,
            Err(e) => {
                tracing::warn!(path = %self.path.display(), error = %e, "Compile cache read failed.");
                None
            }
        }
    }

    /// Stores `v` under `key`; a write error is logged, not fatal.
    pub fn put(&self, key: &str, v: &Verdict) {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        let conn = self.lock();
        let r = conn
            .prepare_cached(
                "INSERT OR REPLACE INTO compile_outcomes (key, ok, stage, diagnostics, created_unix) \
                 VALUES (?1, ?2, ?3, ?4, ?5)",
            )
            .and_then(|mut s| s.execute(params![key, v.ok as i64, v.stage, v.diagnostics, now]));
        if let Err(e) = r {
            tracing::warn!(path = %self.path.display(), error = %e, "Compile cache write failed.");
        }
    }
}
