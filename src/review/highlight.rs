//! Syntax colours for the C++/HIP the detail pane shows, from the tree-sitter-cpp
//! grammar the index already parses with.
//!
//! A file is parsed once and each leaf token gets a class by its node kind (comments,
//! strings, numbers, types, keywords, preprocessor, function names); the pane draws only
//! the lines in view. No highlight query crate is needed for the handful of classes a
//! reviewer reads by, and the parse of a 2,000-line file stays within the render budget
//! (`benches/review_render.rs`).

use tree_sitter::{Node, Parser};

/// What a run of characters is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    Comment,
    String,
    Number,
    Type,
    Keyword,
    Preprocessor,
    Function,
}

/// A file's lines with the classed byte ranges of each.
#[derive(Debug, Default)]
pub struct Highlighted {
    pub lines: Vec<String>,
    /// Per line, `(start byte, end byte, class)`, sorted and not overlapping.
    pub spans: Vec<Vec<(usize, usize, Class)>>,
}

fn class_of(node: Node) -> Option<Class> {
    let kind = node.kind();
    match kind {
        "comment" => Some(Class::Comment),
        "string_literal" | "raw_string_literal" | "char_literal" | "system_lib_string" => {
            Some(Class::String)
        }
        "number_literal" => Some(Class::Number),
        "primitive_type" | "type_identifier" | "sized_type_specifier" | "auto" => Some(Class::Type),
        "preproc_directive" => Some(Class::Preprocessor),
        "identifier" | "field_identifier" => {
            let parent = node.parent()?;
            let calls = matches!(parent.kind(), "call_expression" | "function_declarator")
                && parent.child_by_field_name(if parent.kind() == "call_expression" {
                    "function"
                } else {
                    "declarator"
                }) == Some(node);
            calls.then_some(Class::Function)
        }
        _ if !node.is_named() && kind.starts_with('#') => Some(Class::Preprocessor),
        _ if !node.is_named()
            && kind.len() > 1
            && kind.bytes().all(|b| b.is_ascii_alphabetic() || b == b'_') =>
        {
            Some(Class::Keyword)
        }
        _ => None,
    }
}

/// Parses `text` as C++ and classes its tokens.
pub fn highlight(text: &str) -> Highlighted {
    let lines: Vec<String> = text.lines().map(str::to_string).collect();
    let mut spans = vec![Vec::new(); lines.len()];
    let mut parser = Parser::new();
    parser
        .set_language(&tree_sitter_cpp::LANGUAGE.into())
        .expect("tree-sitter-cpp grammar loads");
    let Some(tree) = parser.parse(text, None) else {
        return Highlighted { lines, spans };
    };
    let mut cursor = tree.walk();
    'walk: loop {
        let node = cursor.node();
        let class = class_of(node);
        // Strings and comments are coloured whole; other nodes by their leaves.
        let whole = matches!(class, Some(Class::Comment | Class::String));
        if let Some(c) = class.filter(|_| whole || node.child_count() == 0) {
            let (a, b) = (node.start_position(), node.end_position());
            for row in a.row..=b.row.min(lines.len().saturating_sub(1)) {
                let len = lines[row].len();
                let from = if row == a.row { a.column.min(len) } else { 0 };
                let to = if row == b.row { b.column.min(len) } else { len };
                if from < to {
                    spans[row].push((from, to, c));
                }
            }
        }
        if !whole && cursor.goto_first_child() {
            continue;
        }
        while !cursor.goto_next_sibling() {
            if !cursor.goto_parent() {
                break 'walk;
            }
        }
    }
    for s in &mut spans {
        s.sort_by_key(|&(a, _, _)| a);
    }
    Highlighted { lines, spans }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn classes(h: &Highlighted, line: usize) -> Vec<(&str, Class)> {
        h.spans[line]
            .iter()
            .map(|&(a, b, c)| (&h.lines[line][a..b], c))
            .collect()
    }

    #[test]
    fn tokens_get_their_classes() {
        let h = highlight(
            "#include <hip/hip_runtime.h>\n\
             // scale x\n\
             template <typename T>\n\
             static void scal(int n, T* x) {\n  if (n > 0) x[0] = helper(2.5f, \"s\");\n}\n",
        );
        assert_eq!(
            classes(&h, 0),
            [
                ("#include", Class::Preprocessor),
                ("<hip/hip_runtime.h>", Class::String)
            ]
        );
        assert_eq!(classes(&h, 1), [("// scale x", Class::Comment)]);
        assert!(classes(&h, 2).contains(&("template", Class::Keyword)));
        let l3 = classes(&h, 3);
        assert!(
            l3.contains(&("void", Class::Type)) && l3.contains(&("scal", Class::Function)),
            "{l3:?}"
        );
        let l4 = classes(&h, 4);
        for want in [
            ("if", Class::Keyword),
            ("helper", Class::Function),
            ("2.5f", Class::Number),
            ("\"s\"", Class::String),
        ] {
            assert!(l4.contains(&want), "{want:?} in {l4:?}");
        }
    }
}
