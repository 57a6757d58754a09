//! The Hugging Face dataset card (`README.md`: YAML front matter with the configs,
//! splits and features `load_dataset` reads, then the figures a user checks before
//! training) and the chart of the mix it shows (`mix.svg`, drawn here).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;

use super::format::{columns, Format, Kind, Sample};
use super::split::Split;
use super::{io_err, ExportError, ExportReport, Field};

/// A library's license, read from `LICENSE.md` at the root of its pinned tree.
#[derive(Debug, Clone, serde::Serialize)]
pub struct License {
    pub lib: String,
    pub version: String,
    /// SPDX id: `MIT`, `BSD-2-Clause`, `BSD-3-Clause`, or `other`.
    pub spdx: String,
    /// The copyright line, as the file has it.
    pub copyright: String,
}

/// Reads a tree's `LICENSE.md` and names its license by the grant's own words.
pub fn read_license(lib: &str, version: &str, tree: &Path) -> Result<License, ExportError> {
    let path = tree.join("LICENSE.md");
    let text = std::fs::read_to_string(&path).map_err(io_err(&path, "read"))?;
    // The library's own terms come before any section on code it includes (`-- LAPACK --`).
    let own = text.split("\n-- ").next().unwrap_or("");
    let spdx = if own.contains("Permission is hereby granted, free of charge") {
        "MIT"
    } else if own.contains("Redistribution and use in source and binary forms") {
        if own.contains("Neither the name") {
            "BSD-3-Clause"
        } else {
            "BSD-2-Clause"
        }
    } else {
        "other"
    };
    let copyright = text
        .lines()
        .find(|l| l.to_lowercase().contains("copyright"))
        .unwrap_or("")
        .trim()
        .to_string();
    Ok(License {
        lib: lib.to_string(),
        version: version.to_string(),
        spdx: spdx.to_string(),
        copyright,
    })
}

fn feature_yaml(out: &mut String, name: &str, kind: Kind, indent: &str) {
    match kind {
        Kind::Str => {
            let _ = writeln!(out, "{indent}- name: {name}\n{indent}  dtype: string");
        }
        Kind::Int => {
            let _ = writeln!(out, "{indent}- name: {name}\n{indent}  dtype: int64");
        }
        Kind::Messages(role, content) => {
            let _ = writeln!(
                out,
                "{indent}- name: {name}\n{indent}  list:\n{indent}  - name: {role}\n{indent}    dtype: string\n{indent}  - name: {content}\n{indent}    dtype: string"
            );
        }
    }
}

/// The YAML front matter: license, configs (one per format, Parquet the default) and
/// each config's features and split sizes.
fn front_matter(
    dir: &Path,
    samples: &[Sample],
    formats: &[Format],
    system: bool,
    licenses: &[License],
) -> String {
    let mut y = String::from("---\n");
    let spdx: BTreeSet<&str> = licenses.iter().map(|l| l.spdx.as_str()).collect();
    match spdx.iter().next() {
        Some(one) if spdx.len() == 1 && *one != "other" => {
            let _ = writeln!(y, "license: {}", one.to_lowercase());
        }
        _ => {
            let name: Vec<String> = licenses
                .iter()
                .map(|l| format!("{}-{}", l.lib, l.spdx.to_lowercase()))
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect();
            let _ = writeln!(y, "license: other\nlicense_name: {}", name.join("-and-"));
        }
    }
    y.push_str("language:\n- en\ntask_categories:\n- question-answering\n- text-generation\ntags:\n- rocm\n- hip\n- gpu\n- code\npretty_name: rocqa export\n");
    let counts = split_counts(samples);
    let splits: Vec<Split> = Split::ALL
        .into_iter()
        .filter(|s| counts.contains_key(s))
        .collect();
    y.push_str("configs:\n");
    // `load_dataset` picks one reader for every config (by the first config's files), so
    // the configs are the JSON formats; the Parquet files are loaded by name.
    let mut ordered: Vec<Format> = formats
        .iter()
        .copied()
        .filter(|f| *f != Format::Parquet)
        .collect();
    ordered.sort_by_key(|f| *f != Format::Openai);
    for (k, f) in ordered.iter().enumerate() {
        let _ = writeln!(y, "- config_name: {}", f.name());
        if k == 0 {
            y.push_str("  default: true\n");
        }
        y.push_str("  data_files:\n");
        for s in &splits {
            let _ = writeln!(y, "  - split: {}\n    path: {}", s.name(), f.file(*s));
        }
    }
    y.push_str("dataset_info:\n");
    for f in &ordered {
        let _ = writeln!(y, "- config_name: {}\n  features:", f.name());
        for (name, kind) in columns(*f, system) {
            feature_yaml(&mut y, name, kind, "  ");
        }
        y.push_str("  splits:\n");
        for s in &splits {
            let bytes = std::fs::metadata(dir.join(f.file(*s))).map_or(0, |m| m.len());
            let _ = writeln!(
                y,
                "  - name: {}\n    num_bytes: {bytes}\n    num_examples: {}",
                s.name(),
                counts[s]
            );
        }
    }
    y.push_str("---\n");
    y
}

fn split_counts(samples: &[Sample]) -> BTreeMap<Split, usize> {
    let mut c = BTreeMap::new();
    for s in samples {
        *c.entry(s.split).or_default() += 1;
    }
    c
}

/// A Markdown table of counts of one field per split.
fn table(out: &mut String, samples: &[Sample], field: Field) {
    let mut by: BTreeMap<&str, BTreeMap<Split, usize>> = BTreeMap::new();
    for s in samples {
        *by.entry(field.of(&s.row.entry))
            .or_default()
            .entry(s.split)
            .or_default() += 1;
    }
    let _ = writeln!(
        out,
        "\n| {} | train | validation | total |\n|---|---:|---:|---:|",
        field.name()
    );
    for (v, c) in by {
        let (t, va) = (
            c.get(&Split::Train).copied().unwrap_or(0),
            c.get(&Split::Validation).copied().unwrap_or(0),
        );
        let _ = writeln!(out, "| {v} | {t} | {va} | {} |", t + va);
    }
}

/// The card for the export in `dir` (its files written): front matter, then counts,
/// chart, pins, models, rates and licenses.
pub fn card(
    dir: &Path,
    samples: &[Sample],
    formats: &[Format],
    system: bool,
    licenses: &[License],
    report: &ExportReport,
) -> String {
    let mut c = front_matter(dir, samples, formats, system, licenses);
    let counts = split_counts(samples);
    let _ = writeln!(
        c,
        "\n# rocqa export\n\nQuestion-answer pairs about the sources of ROCm math libraries, each grounded in a pinned source tree: the user turn shows the code the question is about (read from the tree by the entry's line ranges), the assistant turn the validated answer. {} samples: {} train, {} validation.\n",
        samples.len(),
        counts.get(&Split::Train).copied().unwrap_or(0),
        counts.get(&Split::Validation).copied().unwrap_or(0)
    );
    c.push_str("![Samples per category and generator](mix.svg)\n\n");
    c.push_str("Configs `openai` (default; OpenAI `messages`, also what axolotl's `chat_template` reads, see `axolotl.yaml`), `sharegpt` and `alpaca` load with `load_dataset(\"<this folder>\", \"openai\")`; LLaMA-Factory reads them through `dataset_info.json`. ");
    if formats.contains(&Format::Parquet) {
        c.push_str("The Parquet files (`messages` and the provenance columns) load with `load_dataset(\"parquet\", data_files={\"train\": \"parquet/train.parquet\", \"validation\": \"parquet/validation.parquet\"})`.");
    }
    c.push_str("\n\n## Counts\n");
    for f in [
        Field::Category,
        Field::Difficulty,
        Field::Lib,
        Field::Version,
        Field::Generator,
    ] {
        table(&mut c, samples, f);
    }
    c.push_str("\n## Source pins\n\n| library | version | origin | sha256 |\n|---|---|---|---|\n");
    let pins: BTreeSet<(String, String, String, String)> = samples
        .iter()
        .map(|s| {
            let e = &s.row.entry;
            let o = serde_json::to_value(&e.source.origin).unwrap_or_default();
            let origin = [
                "kind",
                "package",
                "debian_version",
                "tarball",
                "url",
                "rev",
                "commit",
                "path",
            ]
            .iter()
            .filter_map(|k| o[*k].as_str().map(|v| format!("{k}={v}")))
            .collect::<Vec<_>>()
            .join(" ");
            (
                e.lib.clone(),
                e.version.clone(),
                origin,
                e.source.sha256.clone(),
            )
        })
        .collect();
    for (l, v, o, h) in pins {
        let _ = writeln!(c, "| {l} | {v} | {o} | `{h}` |");
    }
    c.push_str("\n## Models\n\n");
    let mut models: BTreeMap<String, usize> = BTreeMap::new();
    for s in samples {
        let m = if s.row.entry.model.is_empty() {
            format!(
                "none ({} entries, read off the code)",
                s.row.entry.generator
            )
        } else {
            s.row.entry.model.clone()
        };
        *models.entry(m).or_default() += 1;
    }
    for (m, n) in models {
        let _ = writeln!(c, "- {m}: {n} samples");
    }
    let sel = &report.selected;
    let kept = sel.run_entries as f64 / (sel.run_entries + sel.run_rejects).max(1) as f64;
    let _ = writeln!(
        c,
        "\n## Validation and review\n\n- Validation kept {} of {} answers checked in the runs read ({:.1}%); every sample passed every check its entry lists.\n- Reviewed: {} of {} entries read ({:.1}%); verdicts {:?}. Left out as wrong in review: {}; exported as edited by a reviewer: {}.\n- Left out by filters: {}; by decontamination: {}; code no longer as pinned: {}.",
        sel.run_entries,
        sel.run_entries + sel.run_rejects,
        100.0 * kept,
        sel.reviewed,
        sel.read,
        100.0 * sel.reviewed as f64 / sel.read.max(1) as f64,
        sel.verdicts,
        sel.rejected_in_review,
        sel.edited,
        sel.filtered_out,
        report.decontaminated,
        report.not_rendered.len()
    );
    let _ = writeln!(
        c,
        "- Splits: grouped by API family, joined where groups share a kernel ({} joins) or a near-duplicate pair ({} joins); {} groups, each wholly on one side.",
        report.split.kernel_joins, report.split.near_duplicate_joins, report.split.groups
    );
    if !report.eval.is_empty() {
        c.push_str("\n## Decontamination\n\n| evaluation set | sha256 | items | question | answer | paraphrase |\n|---|---|---:|---:|---:|---:|\n");
        for r in &report.eval {
            let f = |k: &str| r.found.get(k).copied().unwrap_or(0);
            let _ = writeln!(
                c,
                "| {} | `{}` | {} | {} | {} | {} |",
                r.file,
                r.sha256,
                r.items,
                f("question"),
                f("answer"),
                f("paraphrase")
            );
        }
    }
    if let Some(m) = &report.mix {
        let _ = writeln!(c, "\n## Mix\n\n`{}`, seed {}: {} samples picked from {} candidates.\n\n| target | wanted | got | available |\n|---|---:|---:|---:|", m.file, m.seed, m.picked, m.candidates);
        for t in &m.targets {
            let _ = writeln!(
                c,
                "| {} | {} | {} | {} |",
                t.what, t.wanted, t.got, t.available
            );
        }
    }
    c.push_str("\n## Licenses\n\nThe samples quote the libraries' code, which stays under its own license:\n\n");
    for l in licenses {
        let _ = writeln!(
            c,
            "- {} {}: {} ({}); the full text is `LICENSE.md` in its source tree.",
            l.lib, l.version, l.spdx, l.copyright
        );
    }
    let _ = writeln!(
        c,
        "\nThe code shown is read from the pinned trees by line ranges; macro expansions and the role notes of the original prompts are not stored in an entry, so they are not shown."
    );
    c
}

/// The chart of the mix: one bar per category, split by generator.
pub fn mix_svg(samples: &[Sample]) -> String {
    let mut by: BTreeMap<&str, BTreeMap<&str, usize>> = BTreeMap::new();
    let mut gens: BTreeSet<&str> = BTreeSet::new();
    for s in samples {
        let e = &s.row.entry;
        *by.entry(&e.category)
            .or_default()
            .entry(&e.generator)
            .or_default() += 1;
        gens.insert(&e.generator);
    }
    let colour = |g: &str| match g {
        "facts" => "#4c78a8",
        "mutation" => "#f58518",
        "llm" => "#54a24b",
        _ => "#9d9d9d",
    };
    let max = by
        .values()
        .map(|m| m.values().sum::<usize>())
        .max()
        .unwrap_or(1)
        .max(1);
    let (left, width, bar, gap) = (150.0, 420.0, 18.0, 6.0);
    let height = 60.0 + by.len() as f64 * (bar + gap);
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"680\" height=\"{height}\" font-family=\"sans-serif\" font-size=\"12\">\n<text x=\"10\" y=\"18\" font-size=\"14\">Samples per category, by generator ({} in all)</text>\n",
        samples.len()
    );
    let mut x = left;
    for g in &gens {
        let _ = writeln!(s, "<rect x=\"{x}\" y=\"28\" width=\"12\" height=\"12\" fill=\"{}\"/><text x=\"{}\" y=\"38\">{g}</text>", colour(g), x + 16.0);
        x += 100.0;
    }
    for (k, (cat, m)) in by.iter().enumerate() {
        let y = 50.0 + k as f64 * (bar + gap);
        let _ = writeln!(
            s,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{cat}</text>",
            left - 6.0,
            y + 13.0
        );
        let mut x = left;
        for (g, n) in m {
            let w = width * *n as f64 / max as f64;
            let _ = writeln!(s, "<rect x=\"{x:.1}\" y=\"{y}\" width=\"{w:.1}\" height=\"{bar}\" fill=\"{}\"><title>{cat} / {g}: {n}</title></rect>", colour(g));
            x += w;
        }
        let total: usize = m.values().sum();
        let _ = writeln!(
            s,
            "<text x=\"{:.1}\" y=\"{}\">{total}</text>",
            x + 4.0,
            y + 13.0
        );
    }
    s.push_str("</svg>\n");
    s
}

/// Writes the card and the chart into the export folder.
pub fn write(dir: &Path, card_text: &str, svg: &str) -> Result<(), ExportError> {
    super::format::write_file(&dir.join("README.md"), card_text.as_bytes())?;
    super::format::write_file(&dir.join("mix.svg"), svg.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn licenses_are_named_by_their_grant() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("LICENSE.md"), "Copyright (c) 2018 X\n\nRedistribution and use in source and binary forms, with or without modification, are permitted\n\n-- LAPACK --\nNeither the name of\n").unwrap();
        let l = read_license("rocsolver", "6.4.3", dir.path()).unwrap();
        assert_eq!(
            (l.spdx.as_str(), l.copyright.as_str()),
            ("BSD-2-Clause", "Copyright (c) 2018 X")
        );
        std::fs::write(
            dir.path().join("LICENSE.md"),
            "Copyright (C) 2016 Y\n\nPermission is hereby granted, free of charge, to any person\n",
        )
        .unwrap();
        assert_eq!(
            read_license("rocblas", "6.4.4", dir.path()).unwrap().spdx,
            "MIT"
        );
    }
}
