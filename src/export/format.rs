//! The files training stacks read, one writer per format, and the loader configs that
//! name them: LLaMA-Factory's `dataset_info.json` and an axolotl `datasets:` snippet.
//!
//! Every row carries the same provenance columns ([`provenance`]) beside its turns, so a
//! sample leads back to its entry, its pinned tree and its review. Files sit under
//! `<format>/<split>.<ext>`; a split with no rows gets no file.

use std::path::Path;

use arrow_array::builder::{ListBuilder, StringBuilder, StructBuilder};
use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Fields, Schema};
use serde_json::{json, Map, Value};

use super::render::UserTurn;
use super::split::Split;
use super::{io_err, ExportError, Row};

/// An output format.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, clap::ValueEnum, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// `conversations` of `{from, value}` (human / gpt / system).
    Sharegpt,
    /// OpenAI `messages` of `{role, content}`: also what axolotl's `chat_template` reads.
    Openai,
    /// `instruction` (the question), `input` (the code), `output` (the answer).
    Alpaca,
    /// The `messages` rows as Parquet, provenance in columns.
    Parquet,
}

impl Format {
    /// Every format, in the order they are written.
    pub const ALL: [Format; 4] = [
        Format::Sharegpt,
        Format::Openai,
        Format::Alpaca,
        Format::Parquet,
    ];

    /// Its name: folder, card config and LLaMA-Factory dataset prefix.
    pub fn name(self) -> &'static str {
        match self {
            Format::Sharegpt => "sharegpt",
            Format::Openai => "openai",
            Format::Alpaca => "alpaca",
            Format::Parquet => "parquet",
        }
    }

    /// The file of a split, relative to the export folder.
    pub fn file(self, split: Split) -> String {
        let ext = if self == Format::Parquet {
            "parquet"
        } else {
            "jsonl"
        };
        format!("{}/{}.{ext}", self.name(), split.name())
    }
}

/// One exported sample: an entry's turns and its side.
#[derive(Debug, Clone)]
pub struct Sample<'a> {
    pub row: &'a Row,
    pub split: Split,
    pub user: UserTurn,
    pub assistant: String,
}

/// A column's type, for Parquet and the card's features.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Str,
    Int,
    /// A list of `{role, content}` (or `{from, value}`) messages.
    Messages(&'static str, &'static str),
}

/// The provenance columns, in order: the one list every format writes.
pub const PROVENANCE: [(&str, Kind); 16] = [
    ("id", Kind::Str),
    ("lib", Kind::Str),
    ("version", Kind::Str),
    ("family", Kind::Str),
    ("api", Kind::Str),
    ("category", Kind::Str),
    ("difficulty", Kind::Str),
    ("template_id", Kind::Str),
    ("template_version", Kind::Int),
    ("generator", Kind::Str),
    ("model", Kind::Str),
    ("source_sha256", Kind::Str),
    ("slice_id", Kind::Str),
    ("code_ranges", Kind::Str),
    ("citations", Kind::Str),
    ("review", Kind::Str),
];

/// A row's provenance values, in [`PROVENANCE`] order. Ranges are `lib:file:start-end`
/// lines; the review is the verdict (`good`, `weak`) or empty.
pub fn provenance(r: &Row) -> Vec<Value> {
    let e = &r.entry;
    let ranges = |it: &mut dyn Iterator<Item = (&str, &str, u32, u32)>| {
        it.map(|(l, f, s, t)| format!("{l}:{f}:{s}-{t}"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    vec![
        json!(e.id),
        json!(e.lib),
        json!(e.version),
        json!(e.family),
        json!(e.api),
        json!(e.category),
        json!(e.difficulty),
        json!(e.template_id),
        json!(e.template_version),
        json!(e.generator),
        json!(e.model),
        json!(e.source.sha256),
        json!(e.slice_id),
        json!(ranges(&mut e.slice.iter().map(|p| (
            p.lib.as_str(),
            p.file.as_str(),
            p.start,
            p.end
        )))),
        json!(ranges(&mut e.citations.iter().map(|c| (
            c.lib.as_str(),
            c.file.as_str(),
            c.start,
            c.end
        )))),
        json!(r
            .verdict
            .map(|v| format!("{v:?}").to_lowercase())
            .unwrap_or_default()),
    ]
}

/// The columns of a format's rows: turns first, then provenance.
pub fn columns(format: Format, system: bool) -> Vec<(&'static str, Kind)> {
    let mut c = match format {
        Format::Sharegpt => vec![("conversations", Kind::Messages("from", "value"))],
        Format::Openai | Format::Parquet => vec![("messages", Kind::Messages("role", "content"))],
        Format::Alpaca => {
            let mut a = vec![
                ("instruction", Kind::Str),
                ("input", Kind::Str),
                ("output", Kind::Str),
            ];
            if system {
                a.push(("system", Kind::Str));
            }
            a
        }
    };
    c.extend(PROVENANCE);
    c
}

/// The turns of a sample as (role, content) in OpenAI role names.
fn turns<'a>(s: &'a Sample, system: Option<&'a str>) -> Vec<(&'static str, String)> {
    let mut t = Vec::new();
    if let Some(sys) = system {
        t.push(("system", sys.to_string()));
    }
    t.push(("user", s.user.text()));
    t.push(("assistant", s.assistant.clone()));
    t
}

/// A JSONL row of a format.
pub fn json_row(format: Format, s: &Sample, system: Option<&str>) -> Value {
    let mut m = Map::new();
    match format {
        Format::Sharegpt => {
            let conv: Vec<Value> = turns(s, system)
                .into_iter()
                .map(|(role, content)| {
                    let from = match role {
                        "user" => "human",
                        "assistant" => "gpt",
                        other => other,
                    };
                    json!({"from": from, "value": content})
                })
                .collect();
            m.insert("conversations".into(), Value::Array(conv));
        }
        Format::Openai | Format::Parquet => {
            let msgs: Vec<Value> = turns(s, system)
                .into_iter()
                .map(|(role, content)| json!({"role": role, "content": content}))
                .collect();
            m.insert("messages".into(), Value::Array(msgs));
        }
        Format::Alpaca => {
            m.insert("instruction".into(), json!(s.user.question));
            m.insert("input".into(), json!(s.user.context));
            m.insert("output".into(), json!(s.assistant));
            if let Some(sys) = system {
                m.insert("system".into(), json!(sys));
            }
        }
    }
    for ((name, _), v) in PROVENANCE.iter().zip(provenance(s.row)) {
        m.insert((*name).into(), v);
    }
    Value::Object(m)
}

/// Writes a JSONL file of rows.
pub fn write_jsonl(path: &Path, rows: &[Value]) -> Result<(), ExportError> {
    let mut text = String::new();
    for r in rows {
        text.push_str(&serde_json::to_string(r).expect("rows serialize"));
        text.push('\n');
    }
    write_file(path, text.as_bytes())
}

/// Writes a file, making its folder.
pub fn write_file(path: &Path, bytes: &[u8]) -> Result<(), ExportError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io_err(dir, "create"))?;
    }
    std::fs::write(path, bytes).map_err(io_err(path, "write"))
}

/// Writes the samples of one split as Parquet: `messages` then the provenance columns,
/// snappy-compressed.
pub fn write_parquet(
    path: &Path,
    samples: &[&Sample],
    system: Option<&str>,
) -> Result<(), ExportError> {
    let msg_fields = Fields::from(vec![
        Field::new("role", DataType::Utf8, false),
        Field::new("content", DataType::Utf8, false),
    ]);
    let mut messages = ListBuilder::new(StructBuilder::from_fields(msg_fields, samples.len() * 3));
    for s in samples {
        for (role, content) in turns(s, system) {
            let sb = messages.values();
            sb.field_builder::<StringBuilder>(0)
                .expect("role is a string column")
                .append_value(role);
            sb.field_builder::<StringBuilder>(1)
                .expect("content is a string column")
                .append_value(content);
            sb.append(true);
        }
        messages.append(true);
    }
    let messages: ArrayRef = std::sync::Arc::new(messages.finish());
    let mut fields = vec![Field::new("messages", messages.data_type().clone(), false)];
    let mut arrays = vec![messages];
    let prov: Vec<Vec<Value>> = samples.iter().map(|s| provenance(s.row)).collect();
    for (k, (name, kind)) in PROVENANCE.iter().enumerate() {
        let array: ArrayRef = match kind {
            Kind::Int => std::sync::Arc::new(Int64Array::from_iter_values(
                prov.iter().map(|p| p[k].as_i64().unwrap_or(0)),
            )),
            _ => std::sync::Arc::new(StringArray::from_iter_values(
                prov.iter().map(|p| p[k].as_str().unwrap_or("").to_string()),
            )),
        };
        fields.push(Field::new(*name, array.data_type().clone(), false));
        arrays.push(array);
    }
    let batch = RecordBatch::try_new(std::sync::Arc::new(Schema::new(fields)), arrays)?;
    let mut bytes = Vec::new();
    let props = parquet::file::properties::WriterProperties::builder()
        .set_compression(parquet::basic::Compression::SNAPPY)
        .build();
    let mut w = parquet::arrow::ArrowWriter::try_new(&mut bytes, batch.schema(), Some(props))?;
    w.write(&batch)?;
    w.close()?;
    write_file(path, &bytes)
}

/// LLaMA-Factory's `dataset_info.json`: one dataset per JSON format and split, with the
/// columns and (for the chat formats) the role tags its `sharegpt` reader needs.
pub fn dataset_info(formats: &[Format], splits: &[Split], system: bool) -> Value {
    let mut m = Map::new();
    for f in formats {
        for s in splits {
            let spec = match f {
                Format::Sharegpt => json!({
                    "file_name": f.file(*s),
                    "formatting": "sharegpt",
                    "columns": {"messages": "conversations"},
                    "tags": {"role_tag": "from", "content_tag": "value", "user_tag": "human",
                             "assistant_tag": "gpt", "system_tag": "system"},
                }),
                Format::Openai => json!({
                    "file_name": f.file(*s),
                    "formatting": "sharegpt",
                    "columns": {"messages": "messages"},
                    "tags": {"role_tag": "role", "content_tag": "content", "user_tag": "user",
                             "assistant_tag": "assistant", "system_tag": "system"},
                }),
                Format::Alpaca => {
                    let mut columns =
                        json!({"prompt": "instruction", "query": "input", "response": "output"});
                    if system {
                        columns["system"] = json!("system");
                    }
                    json!({"file_name": f.file(*s), "formatting": "alpaca", "columns": columns})
                }
                Format::Parquet => continue,
            };
            m.insert(format!("rocqa_{}_{}", f.name(), s.name()), spec);
        }
    }
    Value::Object(m)
}

/// An axolotl config snippet: the OpenAI-format files as `chat_template` datasets
/// (training on the assistant turns), validation as `test_datasets`. Paths are relative
/// to the export folder.
pub fn axolotl_snippet(splits: &[Split]) -> String {
    let entry = |s: Split| {
        format!(
            "  - path: {file}\n    ds_type: json\n    type: chat_template\n    field_messages: messages\n    message_property_mappings:\n      role: role\n      content: content\n    roles:\n      system: [system]\n      user: [user]\n      assistant: [assistant]\n    roles_to_train: [assistant]\n",
            file = Format::Openai.file(s)
        )
    };
    let mut out = String::from("# axolotl: paste into your config, run from the export folder (or make the paths absolute).\n");
    for (s, key) in [
        (Split::Train, "datasets"),
        (Split::Validation, "test_datasets"),
    ] {
        if splits.contains(&s) {
            out.push_str(&format!("{key}:\n{}", entry(s)));
        }
    }
    out
}
