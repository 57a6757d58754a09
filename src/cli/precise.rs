//! `rocqa index --precise`, `rocqa graph --precise` and `rocqa graph --compare`: the
//! libclang index, built over all units or the ones an API's fast graph touches.

use anyhow::{bail, Context, Result};

use super::{effective_config, load_index, pair_of, write_out, GraphFormat, Loaded};
use crate::config::{Layout, ProjectFile};
use crate::graph::{compare, render, CodeGraph};
use crate::index::precise::{index_precise, units, PreciseSetup, PreciseStats};
use crate::model::{ApiFunction, LibraryIndex};
use crate::source;

/// Units parsed for each header an API's fast graph reaches (its first includers).
const PER_HEADER: usize = 2;

/// The precise index of `lib`, over `select`ed units (all when `None`).
fn precise_index(
    layout: &Layout,
    project: &ProjectFile,
    lib: &str,
    version: &str,
    fast: &Loaded,
    select: Option<&[String]>,
) -> Result<(LibraryIndex, PreciseStats)> {
    let tree = source::tree_path(&layout.sources(), lib, version)?;
    let cfg = effective_config(layout, project, lib, version, &tree)?;
    let pair = pair_of(project, lib, version)?;
    let pair_headers = crate::index::precise::pair_headers(
        &layout.sources(),
        pair.as_ref().map(|(l, v)| (l.as_str(), v.as_str())),
    );
    let cache = layout.index_cache(lib, version);
    let setup = PreciseSetup {
        lib,
        version,
        tree: &tree,
        cfg: &cfg,
        pair_headers,
        cache_dir: &cache,
    };
    index_precise(&setup, &fast.scope, &fast.index, select)
        .with_context(|| format!("precise index of {lib} {version}"))
}

fn describe(s: &PreciseStats) -> Vec<String> {
    let mut out = vec![
        format!(
            "  units: {} of {} ({} parsed, {} from cache): {} clean, {} with errors (kept), {} failed ({} files from the fast index)",
            s.selected, s.units, s.parsed, s.cached, s.clean, s.with_errors, s.failed, s.degraded_files
        ),
        format!(
            "  {} definitions ({} kernels), {} call sites ({} resolved to one declaration), {} launch sites",
            s.symbols, s.kernels, s.calls, s.resolved_calls, s.launches
        ),
    ];
    for (u, why) in s.problems.iter().take(10) {
        out.push(format!("  {u}: {}", why.lines().next().unwrap_or("")));
    }
    if s.problems.len() > 10 {
        out.push(format!("  ... {} more", s.problems.len() - 10));
    }
    out.push(format!("  {} ms", s.millis));
    out
}

/// `rocqa index --precise [--unit U ...]`.
pub(super) fn run_index(
    layout: &Layout,
    project: &ProjectFile,
    lib: &str,
    version: &str,
    use_cache: bool,
    select: &[String],
    json: bool,
) -> Result<i32> {
    let fast = load_index(layout, project, lib, version, use_cache)?;
    let select = (!select.is_empty()).then_some(select);
    let (_, s) = precise_index(layout, project, lib, version, &fast, select)?;
    if json {
        say!("{}", serde_json::to_string_pretty(&s)?);
    } else {
        say!("{lib} {version} (precise, libclang):");
        for l in describe(&s) {
            say!("{l}");
        }
    }
    Ok(if s.selected == 0 { 1 } else { 0 })
}

fn pair_index(
    layout: &Layout,
    project: &ProjectFile,
    lib: &str,
    version: &str,
) -> Result<Option<Loaded>> {
    match pair_of(project, lib, version)? {
        Some((pl, pv)) => Ok(Some(load_index(layout, project, &pl, &pv, true)?)),
        None => Ok(None),
    }
}

/// `rocqa graph --precise --api A`: the graph over the precise index of the units
/// the fast graph of `A` touches.
pub(super) fn run_graph(
    layout: &Layout,
    project: &ProjectFile,
    lib: &str,
    version: &str,
    api: &str,
    format: GraphFormat,
    full: bool,
) -> Result<i32> {
    let main = load_index(layout, project, lib, version, true)?;
    let pair = pair_index(layout, project, lib, version)?;
    let fast = CodeGraph::new(&main.index, pair.as_ref().map(|p| &p.index), &main.scope);
    let Some(a) = fast.api().iter().find(|f| f.name == api) else {
        bail!("{api}: not a public API function of {lib} {version}; `rocqa api --lib {lib}` lists them");
    };
    let tree = source::tree_path(&layout.sources(), lib, version)?;
    let all = units(&tree, &main.scope);
    let sel = compare::units_touched(&fast, &[a], &main.index, &all, PER_HEADER);
    let (pidx, stats) = precise_index(layout, project, lib, version, &main, Some(&sel))?;
    tracing::info!(
        units = stats.selected,
        failed = stats.failed,
        "Precise index built."
    );
    let precise = CodeGraph::new(&pidx, pair.as_ref().map(|p| &p.index), &main.scope);
    let g = precise.interface(a);
    let text = match format {
        GraphFormat::Tree => render::tree(&g),
        GraphFormat::Dot | GraphFormat::Svg => {
            let d = if full {
                render::dot_full(&g)
            } else {
                render::dot(&g)
            };
            if format == GraphFormat::Svg {
                render::svg(&d).map_err(|e| anyhow::anyhow!(e))?
            } else {
                d
            }
        }
        GraphFormat::Json => render::json(&g),
    };
    say!("{}", text.trim_end_matches('\n'));
    Ok(if g.nodes.len() > 1 { 0 } else { 1 })
}

/// `rocqa graph --compare [--family F]`.
pub(super) fn run_compare(
    layout: &Layout,
    project: &ProjectFile,
    lib: &str,
    version: &str,
    family: Option<&str>,
    json: bool,
) -> Result<i32> {
    let t0 = std::time::Instant::now();
    let main = load_index(layout, project, lib, version, true)?;
    let fast_ms = t0.elapsed().as_millis();
    let pair = pair_index(layout, project, lib, version)?;
    let fast = CodeGraph::new(&main.index, pair.as_ref().map(|p| &p.index), &main.scope);
    let apis: Vec<&ApiFunction> = fast
        .api()
        .iter()
        .filter(|f| main.scope.family_in(&f.family))
        .filter(|f| family.is_none_or(|x| x == f.family))
        .collect();
    if apis.is_empty() {
        bail!(
            "no in-scope API family{} in {lib} {version}; `rocqa api --lib {lib}` lists them",
            family.map(|f| format!(" named {f}")).unwrap_or_default()
        );
    }
    let sel = match family {
        Some(_) => {
            let tree = source::tree_path(&layout.sources(), lib, version)?;
            let all = units(&tree, &main.scope);
            Some(compare::units_touched(
                &fast,
                &apis,
                &main.index,
                &all,
                PER_HEADER,
            ))
        }
        None => None,
    };
    let (pidx, stats) = precise_index(layout, project, lib, version, &main, sel.as_deref())?;
    let precise = CodeGraph::new(&pidx, pair.as_ref().map(|p| &p.index), &main.scope);
    let c = compare::compare(&fast, &precise, &apis);
    if json {
        say!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "comparison": c,
                "precise": stats,
                "fast_index_ms": fast_ms,
            }))?
        );
        return Ok(0);
    }
    say!(
        "{lib} {version}: fast index ({fast_ms} ms, from cache if warm) against precise (libclang):"
    );
    for l in describe(&stats) {
        say!("{l}");
    }
    say!(
        "{:<28} {:>6} {:>10} {:>13} {:>10}",
        "family",
        "both",
        "fast-only",
        "precise-only",
        "agreement"
    );
    for f in &c.families {
        say!(
            "{:<28} {:>6} {:>10} {:>13} {:>9.1}%",
            f.family,
            f.both,
            f.fast_only.len(),
            f.precise_only.len(),
            f.agreement()
        );
    }
    say!(
        "{:<28} {:>6} {:>10} {:>13} {:>9.1}%",
        "total",
        c.both,
        c.fast_only,
        c.precise_only,
        c.agreement
    );
    if family.is_some() {
        for f in &c.families {
            for e in &f.fast_only {
                say!("  fast only:    {e}");
            }
            for e in &f.precise_only {
                say!("  precise only: {e}");
            }
        }
    }
    Ok(0)
}
