//! The cited source lines of an entry, read from the pinned trees as they are now.
//!
//! Files are read through [`crate::slice::Trees`] (the one reader that refuses paths
//! out of a tree) and highlighted once each. A citation whose lines no longer hash to
//! the entry's `sha256` marks the entry's validation as out of date: its cited code
//! changed, so a decision about it would judge code that is no longer there.

use std::collections::HashMap;

use crate::config::{Layout, ProjectFile};
use crate::review::highlight::{highlight, Highlighted};
use crate::slice::{lines_hash, Trees};

/// Trees per entry library version, and the files highlighted so far.
pub struct Cited {
    layout: Layout,
    project: Option<ProjectFile>,
    trees: HashMap<(String, String), Result<Trees, String>>,
    shown: HashMap<(String, String, String, String), Result<Highlighted, String>>,
}

fn field<'a>(v: &'a serde_json::Value, k: &str) -> &'a str {
    v[k].as_str().unwrap_or("")
}

impl Cited {
    /// Reads `rocqa.toml` under `layout` (for the pair of each library version).
    pub fn new(layout: &Layout) -> Cited {
        Cited {
            project: ProjectFile::load(&layout.project_file()).ok(),
            layout: layout.clone(),
            trees: HashMap::new(),
            shown: HashMap::new(),
        }
    }

    fn trees(&mut self, lib: &str, version: &str) -> &Result<Trees, String> {
        let key = (lib.to_string(), version.to_string());
        if !self.trees.contains_key(&key) {
            let built = (|| -> anyhow::Result<Trees> {
                let sources = self.layout.sources();
                let mut t = Trees::default();
                t.add(lib, &crate::source::tree_path(&sources, lib, version)?);
                if let Some(p) = &self.project {
                    if let Ok(Some((l, v))) = p.pair(lib, version) {
                        if let Ok(path) = crate::source::tree_path(&sources, &l, &v) {
                            t.add(&l, &path);
                        }
                    }
                }
                Ok(t)
            })()
            .map_err(|e| format!("{e:#}"));
            self.trees.insert(key.clone(), built);
        }
        &self.trees[&key]
    }

    /// Whether every citation of `entry` still hashes to its `sha256` in the pinned
    /// tree: `Err` names the first that does not (or cannot be read).
    pub fn check(&mut self, entry: &serde_json::Value) -> Result<(), String> {
        let (lib, version) = (field(entry, "lib"), field(entry, "version"));
        let trees = match self.trees(lib, version) {
            Ok(t) => t,
            Err(e) => return Err(e.clone()),
        };
        for c in entry["citations"].as_array().into_iter().flatten() {
            let (clib, file) = (field(c, "lib"), field(c, "file"));
            let clib = if clib.is_empty() { lib } else { clib };
            let lines = trees.lines(clib, file).map_err(|e| e.to_string())?;
            let (a, b) = (
                c["start"].as_u64().unwrap_or(0),
                c["end"].as_u64().unwrap_or(0),
            );
            if lines_hash(&lines, a as u32, b as u32) != field(c, "sha256") {
                return Err(format!(
                    "{file}:{a}-{b} changed since the entry was written"
                ));
            }
        }
        Ok(())
    }

    fn key(entry: &serde_json::Value, c: &serde_json::Value) -> (String, String, String, String) {
        let lib = field(entry, "lib");
        let clib = Some(field(c, "lib"))
            .filter(|l| !l.is_empty())
            .unwrap_or(lib);
        (
            lib.to_string(),
            field(entry, "version").to_string(),
            clib.to_string(),
            field(c, "file").to_string(),
        )
    }

    /// Reads and highlights the files `entry` cites (each once).
    pub fn load(&mut self, entry: &serde_json::Value) {
        for c in entry["citations"].as_array().into_iter().flatten() {
            let key = Cited::key(entry, c);
            if self.shown.contains_key(&key) {
                continue;
            }
            let text = match self.trees(&key.0, &key.1) {
                Ok(t) => t
                    .lines(&key.2, &key.3)
                    .map(|l| l.join("\n"))
                    .map_err(|e| e.to_string()),
                Err(e) => Err(e.clone()),
            };
            self.shown.insert(key, text.map(|t| highlight(&t)));
        }
    }

    /// The highlighted file a citation of `entry` points into, once [`Cited::load`]ed.
    pub fn file(
        &self,
        entry: &serde_json::Value,
        citation: &serde_json::Value,
    ) -> Option<&Result<Highlighted, String>> {
        self.shown.get(&Cited::key(entry, citation))
    }
}
