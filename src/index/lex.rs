//! Comment stripping and a small C/C++ tokenizer for the preprocessor.
//!
//! Both keep byte offsets into the text they were given, so every later step can
//! map what it finds back to a line of the original file.

/// Replaces each comment by one space and squeezes runs of blanks, keeping every
/// newline, so line numbers stay those of the original text (byte offsets do not:
/// nothing downstream needs columns, and the parser is faster on less text). String,
/// character and raw-string literals are kept as they are.
pub fn strip_comments(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'/' && i + 1 < b.len() && b[i + 1] == b'/' {
            // Line comment, up to the newline; a backslash-newline continues it.
            push_blank(&mut out);
            while i < b.len() && b[i] != b'\n' {
                if b[i] == b'\\' && i + 1 < b.len() && b[i + 1] == b'\n' {
                    out.push(b'\n');
                    i += 2;
                    continue;
                }
                i += 1;
            }
        } else if c == b'/' && i + 1 < b.len() && b[i + 1] == b'*' {
            push_blank(&mut out);
            i += 2;
            while i < b.len() && !(b[i] == b'*' && i + 1 < b.len() && b[i + 1] == b'/') {
                if b[i] == b'\n' {
                    out.push(b'\n');
                }
                i += 1;
            }
            i = (i + 2).min(b.len());
            push_blank(&mut out);
        } else if c == b'"' || c == b'\'' {
            // Raw strings R"delim( ... )delim" may hold anything.
            if c == b'"' && i > 0 && b[i - 1] == b'R' && is_raw_prefix(b, i - 1) {
                let start = i;
                let open = b[i + 1..].iter().position(|&x| x == b'(');
                if let Some(p) = open {
                    let delim = &b[i + 1..i + 1 + p];
                    let mut close = Vec::with_capacity(delim.len() + 2);
                    close.push(b')');
                    close.extend_from_slice(delim);
                    close.push(b'"');
                    let body_start = i + 2 + p;
                    let end = find_sub(&b[body_start..], &close)
                        .map(|e| body_start + e + close.len())
                        .unwrap_or(b.len());
                    out.extend_from_slice(&b[start..end]);
                    i = end;
                    continue;
                }
            }
            out.push(c);
            i += 1;
            while i < b.len() && b[i] != c && b[i] != b'\n' {
                if b[i] == b'\\' && i + 1 < b.len() {
                    out.push(b[i]);
                    out.push(b[i + 1]);
                    i += 2;
                    continue;
                }
                out.push(b[i]);
                i += 1;
            }
            if i < b.len() && b[i] == c {
                out.push(c);
                i += 1;
            }
        } else if c == b' ' || c == b'\t' || c == b'\r' {
            push_blank(&mut out);
            i += 1;
        } else {
            out.push(c);
            i += 1;
        }
    }
    // Only ASCII bytes were replaced by ASCII bytes, so the text stays valid UTF-8.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Pushes one space unless the output already ends in a blank.
fn push_blank(out: &mut Vec<u8>) {
    if !matches!(out.last(), Some(b' ') | Some(b'\n') | None) {
        out.push(b' ');
    }
}

fn is_raw_prefix(b: &[u8], r: usize) -> bool {
    r == 0
        || !(b[r - 1].is_ascii_alphanumeric() || b[r - 1] == b'_')
        || matches!(b[r - 1], b'u' | b'U' | b'L' | b'8')
}

fn find_sub(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// What a token is, as far as macro expansion cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tok {
    /// Identifier or keyword.
    Ident,
    /// Number (pp-number).
    Number,
    /// String or character literal.
    Literal,
    /// Punctuation; `##` and `#` are single tokens.
    Punct,
}

/// One token with its byte range in the tokenized text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Token {
    /// Kind of token.
    pub kind: Tok,
    /// Start byte.
    pub start: usize,
    /// End byte (exclusive).
    pub end: usize,
}

/// Splits comment-free text into tokens, skipping white space.
pub fn tokenize(src: &str) -> Vec<Token> {
    let b = src.as_bytes();
    let mut toks = Vec::with_capacity(b.len() / 4);
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() || (c == b'\\' && i + 1 < b.len() && b[i + 1] == b'\n') {
            i += 1;
            continue;
        }
        let start = i;
        let kind;
        if c.is_ascii_alphabetic() || c == b'_' || c >= 0x80 {
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] >= 0x80) {
                i += 1;
            }
            // String literal prefixes (u8"", L'', R"()") belong to the literal.
            if i < b.len() && (b[i] == b'"' || b[i] == b'\'') {
                let word = &src[start..i];
                if matches!(
                    word,
                    "u8" | "u" | "U" | "L" | "R" | "u8R" | "uR" | "UR" | "LR"
                ) {
                    i = skip_literal(b, i);
                    toks.push(Token {
                        kind: Tok::Literal,
                        start,
                        end: i,
                    });
                    continue;
                }
            }
            kind = Tok::Ident;
        } else if c.is_ascii_digit() || (c == b'.' && i + 1 < b.len() && b[i + 1].is_ascii_digit())
        {
            while i < b.len() {
                let d = b[i];
                let exponent_sign =
                    (d == b'+' || d == b'-') && matches!(b[i - 1], b'e' | b'E' | b'p' | b'P');
                if d.is_ascii_alphanumeric()
                    || d == b'.'
                    || d == b'_'
                    || d == b'\''
                    || exponent_sign
                {
                    i += 1;
                } else {
                    break;
                }
            }
            kind = Tok::Number;
        } else if c == b'"' || c == b'\'' {
            i = skip_literal(b, i);
            kind = Tok::Literal;
        } else {
            i += punct_len(&b[i..]);
            kind = Tok::Punct;
        }
        toks.push(Token {
            kind,
            start,
            end: i,
        });
    }
    toks
}

fn skip_literal(b: &[u8], mut i: usize) -> usize {
    let q = b[i];
    // Raw string: R"delim( ... )delim"
    if q == b'"' && i > 0 && b[i - 1] == b'R' {
        if let Some(p) = b[i + 1..].iter().position(|&x| x == b'(') {
            let delim = &b[i + 1..i + 1 + p];
            let mut close = vec![b')'];
            close.extend_from_slice(delim);
            close.push(b'"');
            let body = i + 2 + p;
            return find_sub(&b[body..], &close)
                .map(|e| body + e + close.len())
                .unwrap_or(b.len());
        }
    }
    i += 1;
    while i < b.len() && b[i] != q && b[i] != b'\n' {
        if b[i] == b'\\' {
            i += 1;
        }
        i += 1;
    }
    (i + 1).min(b.len())
}

fn punct_len(b: &[u8]) -> usize {
    const THREE: [&[u8]; 4] = [b"<<=", b">>=", b"...", b"->*"];
    const TWO: [&[u8]; 20] = [
        b"##", b"::", b"->", b"++", b"--", b"<<", b">>", b"<=", b">=", b"==", b"!=", b"&&", b"||",
        b"+=", b"-=", b"*=", b"/=", b"%=", b"&=", b"|=",
    ];
    if b.len() >= 3 && THREE.iter().any(|p| &b[..3] == *p) {
        return 3;
    }
    if b.len() >= 2 && TWO.iter().any(|p| &b[..2] == *p) {
        return 2;
    }
    // A lone non-ASCII byte sequence is kept whole so slicing stays on char boundaries.
    let c = b[0];
    if c >= 0x80 {
        let mut n = 1;
        while n < b.len() && (b[n] & 0xC0) == 0x80 {
            n += 1;
        }
        return n;
    }
    1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_become_spaces_and_keep_lines() {
        let src = "a // x\nb /* y\n z */ c \"//not\" '/'\n";
        let out = strip_comments(src);
        assert_eq!(out.lines().count(), src.lines().count());
        assert!(out.contains("\"//not\""));
        assert!(!out.contains('x') && !out.contains('y') && !out.contains('z'));
        assert_eq!(out, "a \nb \nc \"//not\" '/'\n");
        // Blank runs shrink to one space; literals keep theirs.
        assert_eq!(strip_comments("int   x =\t\"a  b\";"), "int x = \"a  b\";");
    }

    #[test]
    fn tokens_cover_paste_and_literals() {
        let src = "f##_64(a, \"s,t\") <<< x";
        let toks: Vec<&str> = tokenize(src).iter().map(|t| &src[t.start..t.end]).collect();
        assert_eq!(
            toks,
            ["f", "##", "_64", "(", "a", ",", "\"s,t\"", ")", "<<", "<", "x"]
        );
    }

    #[test]
    fn numbers_keep_exponents() {
        let src = "1.0e-5f+2";
        let toks: Vec<&str> = tokenize(src).iter().map(|t| &src[t.start..t.end]).collect();
        assert_eq!(toks, ["1.0e-5f", "+", "2"]);
    }
}
