//! A small renderer of the GitHub Markdown opentiger writes (headings, paragraphs, lists with
//! checkboxes, tables, code and Mermaid blocks, quotes, `<details>`, inline code, bold and
//! links) into an SVG picture framed as GitHub shows it: a comment, an issue, a check run. The
//! layout is estimated from character counts (no font is measured), which is enough for a
//! picture of what people read. HTML comments (opentiger's markers) are not shown, as GitHub
//! does not show them.
//!
//! Not for: anything the product does; it draws the docs' pictures (`tests/docs_pictures.rs`).

use std::fmt::Write as _;

/// The picture's width, in pixels.
const WIDTH: f64 = 880.0;
/// The text column's left edge and width inside the frame.
const LEFT: f64 = 32.0;
const COLUMN: f64 = WIDTH - 2.0 * LEFT;
/// The body text's size, and the width of an average character of it (an estimate).
const SIZE: f64 = 14.0;
const CHAR: f64 = 0.54;
const MONO_CHAR: f64 = 0.6;
/// Lines of a Mermaid block shown before it is cut.
const MERMAID_LINES: usize = 10;

const SANS: &str = "-apple-system, 'Segoe UI', Helvetica, Arial, sans-serif";
const MONO: &str = "ui-monospace, SFMono-Regular, Menlo, Consolas, monospace";

/// A run of text with one style.
#[derive(Clone, Debug)]
struct Span {
    text: String,
    bold: bool,
    code: bool,
    link: bool,
}

/// The picture being drawn: its elements and how far down it is.
struct Canvas {
    body: String,
    y: f64,
}

/// `markdown` framed under a header bar saying `header` (who said it, where), with `badge` (a
/// state: `Open`, `success`) beside it.
pub fn render(header: &str, badge: &str, markdown: &str) -> String {
    let mut c = Canvas {
        body: String::new(),
        y: 64.0,
    };
    blocks(&mut c, &strip_comments(markdown));
    let height = c.y + 24.0;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{height}\" viewBox=\"0 0 {WIDTH} {height}\">"
    );
    let _ = writeln!(
        out,
        "<rect x=\"0.5\" y=\"0.5\" width=\"{}\" height=\"{}\" rx=\"6\" fill=\"#ffffff\" stroke=\"#d0d7de\"/>",
        WIDTH - 1.0,
        height - 1.0
    );
    let _ = writeln!(
        out,
        "<path d=\"M0.5 6.5 a6 6 0 0 1 6 -6 h{} a6 6 0 0 1 6 6 v33 h-{} z\" fill=\"#f6f8fa\" stroke=\"#d0d7de\"/>",
        WIDTH - 13.0,
        WIDTH - 1.0
    );
    let _ = writeln!(
        out,
        "<text x=\"16\" y=\"26\" font-family=\"{SANS}\" font-size=\"14\" fill=\"#1f2328\" font-weight=\"600\">{}</text>",
        escape(header)
    );
    if !badge.is_empty() {
        let w = badge.chars().count() as f64 * 7.0 + 20.0;
        let _ = writeln!(
            out,
            "<rect x=\"{}\" y=\"10\" width=\"{w}\" height=\"22\" rx=\"11\" fill=\"#1f883d\"/><text x=\"{}\" y=\"25\" font-family=\"{SANS}\" font-size=\"12\" fill=\"#ffffff\" text-anchor=\"middle\">{}</text>",
            WIDTH - w - 16.0,
            WIDTH - w / 2.0 - 16.0,
            escape(badge)
        );
    }
    out.push_str(&c.body);
    out.push_str("</svg>\n");
    out
}

/// The text without HTML comments (GitHub does not show them).
fn strip_comments(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("<!--") {
        out.push_str(&rest[..start]);
        match rest[start..].find("-->") {
            Some(end) => rest = &rest[start + end + 3..],
            None => return out,
        }
    }
    out.push_str(rest);
    out
}

fn blocks(c: &mut Canvas, text: &str) {
    let lines: Vec<&str> = text.lines().collect();
    let mut i = 0;
    let mut paragraph: Vec<&str> = Vec::new();
    while i < lines.len() {
        let line = lines[i];
        let trimmed = line.trim();
        let flush = |c: &mut Canvas, paragraph: &mut Vec<&str>| {
            if !paragraph.is_empty() {
                let joined = paragraph.join(" ");
                wrapped(c, &inline(&joined), LEFT, COLUMN, SIZE, false);
                c.y += 8.0;
                paragraph.clear();
            }
        };
        if trimmed.starts_with("```") {
            flush(c, &mut paragraph);
            let lang = trimmed.trim_start_matches('`').trim().to_string();
            let mut code = Vec::new();
            i += 1;
            while i < lines.len() && !lines[i].trim().starts_with("```") {
                code.push(lines[i]);
                i += 1;
            }
            code_block(c, &lang, &code);
        } else if trimmed.is_empty() || trimmed == "<details>" || trimmed == "</details>" {
            flush(c, &mut paragraph);
        } else if let Some(summary) = trimmed
            .strip_prefix("<details><summary>")
            .or_else(|| trimmed.strip_prefix("<summary>"))
        {
            flush(c, &mut paragraph);
            let summary = summary
                .trim_end_matches("</summary>")
                .trim_end_matches("</details>");
            let mut spans = vec![plain("▸ ")];
            spans.extend(inline(&strip_tags(summary)));
            for s in &mut spans {
                s.bold = true;
            }
            wrapped(c, &spans, LEFT, COLUMN, SIZE, false);
            c.y += 6.0;
        } else if trimmed.starts_with('#') {
            flush(c, &mut paragraph);
            let level = trimmed.chars().take_while(|ch| *ch == '#').count();
            let size = match level {
                1 => 22.0,
                2 => 19.0,
                3 => 16.0,
                _ => 15.0,
            };
            c.y += 6.0;
            let mut spans = inline(trimmed[level..].trim());
            for s in &mut spans {
                s.bold = true;
            }
            wrapped(c, &spans, LEFT, COLUMN, size, false);
            if level <= 2 {
                rule(c);
            }
            c.y += 4.0;
        } else if trimmed.starts_with('|') {
            flush(c, &mut paragraph);
            let mut rows = Vec::new();
            while i < lines.len() && lines[i].trim().starts_with('|') {
                rows.push(lines[i].trim());
                i += 1;
            }
            table(c, &rows);
            continue;
        } else if let Some(quoted) = trimmed.strip_prefix('>') {
            flush(c, &mut paragraph);
            let top = c.y;
            wrapped(
                c,
                &inline(quoted.trim()),
                LEFT + 16.0,
                COLUMN - 16.0,
                SIZE,
                true,
            );
            let _ = writeln!(
                c.body,
                "<rect x=\"{LEFT}\" y=\"{}\" width=\"4\" height=\"{}\" fill=\"#d0d7de\"/>",
                top - 2.0,
                c.y - top
            );
            c.y += 6.0;
        } else if trimmed == "---" {
            flush(c, &mut paragraph);
            rule(c);
        } else if let Some((marker, item)) = list_item(line) {
            flush(c, &mut paragraph);
            let depth = (line.len() - line.trim_start().len()) as f64 / 2.0;
            let x = LEFT + 8.0 + depth * 18.0;
            let _ = writeln!(
                c.body,
                "<text x=\"{x}\" y=\"{}\" font-family=\"{SANS}\" font-size=\"{SIZE}\" fill=\"#1f2328\">{}</text>",
                c.y + SIZE,
                escape(&marker)
            );
            wrapped(
                c,
                &inline(&strip_tags(item)),
                x + 22.0,
                COLUMN - (x - LEFT) - 22.0,
                SIZE,
                false,
            );
            c.y += 2.0;
        } else {
            paragraph.push(trimmed);
        }
        i += 1;
    }
    if !paragraph.is_empty() {
        let joined = paragraph.join(" ");
        wrapped(c, &inline(&strip_tags(&joined)), LEFT, COLUMN, SIZE, false);
    }
}

/// A list item's marker as drawn (`•`, `1.`, a checkbox) and its text.
fn list_item(line: &str) -> Option<(String, &str)> {
    let t = line.trim_start();
    let (bullet, rest) = if let Some(rest) = t.strip_prefix("- ").or_else(|| t.strip_prefix("* ")) {
        ("•".to_string(), rest)
    } else {
        let digits = t.chars().take_while(char::is_ascii_digit).count();
        let rest = t[digits..].strip_prefix(". ").filter(|_| digits > 0)?;
        (t[..digits + 1].to_string(), rest)
    };
    Some(match rest {
        r if r.starts_with("[ ] ") => ("☐".to_string(), &r[4..]),
        r if r.starts_with("[x] ") || r.starts_with("[X] ") => ("☑".to_string(), &r[4..]),
        r => (bullet, r),
    })
}

fn rule(c: &mut Canvas) {
    c.y += 4.0;
    let _ = writeln!(
        c.body,
        "<rect x=\"{LEFT}\" y=\"{}\" width=\"{COLUMN}\" height=\"1\" fill=\"#d8dee4\"/>",
        c.y
    );
    c.y += 8.0;
}

fn code_block(c: &mut Canvas, lang: &str, code: &[&str]) {
    let mermaid = lang == "mermaid";
    let shown: Vec<&str> = if mermaid && code.len() > MERMAID_LINES {
        code[..MERMAID_LINES].to_vec()
    } else {
        code.to_vec()
    };
    let line_height = 18.0;
    let caption = mermaid.then_some("Mermaid: GitHub draws this as the task graph");
    let rows = shown.len() + usize::from(caption.is_some()) + usize::from(shown.len() < code.len());
    let height = rows as f64 * line_height + 16.0;
    let _ = writeln!(
        c.body,
        "<rect x=\"{LEFT}\" y=\"{}\" width=\"{COLUMN}\" height=\"{height}\" rx=\"6\" fill=\"#f6f8fa\"/>",
        c.y
    );
    let mut y = c.y + 8.0;
    let most = ((COLUMN - 24.0) / (13.0 * MONO_CHAR)) as usize;
    if let Some(caption) = caption {
        let _ = writeln!(
            c.body,
            "<text x=\"{}\" y=\"{}\" font-family=\"{SANS}\" font-size=\"12\" fill=\"#59636e\" font-style=\"italic\">{caption}</text>",
            LEFT + 12.0,
            y + 13.0
        );
        y += line_height;
    }
    for line in &shown {
        let cut: String = line.chars().take(most).collect();
        let _ = writeln!(
            c.body,
            "<text x=\"{}\" y=\"{}\" font-family=\"{MONO}\" font-size=\"13\" fill=\"#1f2328\" xml:space=\"preserve\">{}</text>",
            LEFT + 12.0,
            y + 13.0,
            escape(&cut)
        );
        y += line_height;
    }
    if shown.len() < code.len() {
        let _ = writeln!(
            c.body,
            "<text x=\"{}\" y=\"{}\" font-family=\"{MONO}\" font-size=\"13\" fill=\"#59636e\">… {} more line(s)</text>",
            LEFT + 12.0,
            y + 13.0,
            code.len() - shown.len()
        );
    }
    c.y += height + 10.0;
}

fn table(c: &mut Canvas, rows: &[&str]) {
    let cells: Vec<Vec<String>> = rows
        .iter()
        .filter(|r| !r.chars().all(|ch| matches!(ch, '|' | '-' | ':' | ' ')))
        .map(|r| {
            r.trim_matches('|')
                .split('|')
                .map(|cell| strip_tags(cell.trim()))
                .collect()
        })
        .collect();
    let columns = cells.iter().map(Vec::len).max().unwrap_or(0);
    if columns == 0 {
        return;
    }
    // Each column as wide as its longest cell, scaled down together to fit the column.
    let wants: Vec<f64> = (0..columns)
        .map(|k| {
            cells
                .iter()
                .filter_map(|r| r.get(k))
                .map(|cell| text_of(&inline(cell)).chars().count() as f64 * SIZE * CHAR + 20.0)
                .fold(40.0, f64::max)
        })
        .collect();
    let total: f64 = wants.iter().sum();
    let scale = (COLUMN / total).min(1.0);
    let widths: Vec<f64> = wants.iter().map(|w| w * scale).collect();
    let row_height = 28.0;
    for (n, row) in cells.iter().enumerate() {
        let mut x = LEFT;
        let fill = if n == 0 { "#f6f8fa" } else { "#ffffff" };
        for (k, width) in widths.iter().enumerate() {
            let _ = writeln!(
                c.body,
                "<rect x=\"{x}\" y=\"{}\" width=\"{width}\" height=\"{row_height}\" fill=\"{fill}\" stroke=\"#d0d7de\"/>",
                c.y
            );
            let most = ((width - 16.0) / (SIZE * CHAR)).max(1.0) as usize;
            let mut spans = inline(row.get(k).map_or("", String::as_str));
            if n == 0 {
                for s in &mut spans {
                    s.bold = true;
                }
            }
            let line = cut(&spans, most);
            draw_line(c, &line, x + 8.0, c.y + 19.0, SIZE);
            x += width;
        }
        c.y += row_height;
    }
    c.y += 12.0;
}

/// Text wrapped into `width` from `x`, a line at a time.
fn wrapped(c: &mut Canvas, spans: &[Span], x: f64, width: f64, size: f64, muted: bool) {
    let per_line = (width / (size * CHAR)).max(10.0) as usize;
    let mut line: Vec<Span> = Vec::new();
    let mut used = 0usize;
    let height = size * 1.5;
    for word in words(spans) {
        let len = word.text.chars().count();
        if used + len > per_line && used > 0 {
            draw_styled(c, &line, x, size, muted);
            c.y += height;
            line.clear();
            used = 0;
        }
        let text = if used == 0 {
            word.text.trim_start().to_string()
        } else {
            word.text.clone()
        };
        used += text.chars().count();
        line.push(Span { text, ..word });
    }
    if !line.is_empty() {
        draw_styled(c, &line, x, size, muted);
        c.y += height;
    }
}

fn draw_styled(c: &mut Canvas, line: &[Span], x: f64, size: f64, muted: bool) {
    let y = c.y + size;
    if muted {
        let spans: Vec<Span> = line.to_vec();
        let mut svg = String::new();
        tspans(&mut svg, &spans, "#59636e");
        let _ = writeln!(
            c.body,
            "<text x=\"{x}\" y=\"{y}\" font-family=\"{SANS}\" font-size=\"{size}\" xml:space=\"preserve\">{svg}</text>"
        );
    } else {
        draw_line(c, line, x, y, size);
    }
}

fn draw_line(c: &mut Canvas, line: &[Span], x: f64, y: f64, size: f64) {
    let mut svg = String::new();
    tspans(&mut svg, line, "#1f2328");
    let _ = writeln!(
        c.body,
        "<text x=\"{x}\" y=\"{y}\" font-family=\"{SANS}\" font-size=\"{size}\" xml:space=\"preserve\">{svg}</text>"
    );
}

fn tspans(out: &mut String, line: &[Span], color: &str) {
    for s in line {
        let mut attrs = String::new();
        if s.bold {
            attrs.push_str(" font-weight=\"600\"");
        }
        if s.code {
            let _ = write!(attrs, " font-family=\"{MONO}\" fill=\"#0550ae\"");
        } else if s.link {
            attrs.push_str(" fill=\"#0969da\"");
        } else {
            let _ = write!(attrs, " fill=\"{color}\"");
        }
        let _ = write!(out, "<tspan{attrs}>{}</tspan>", escape(&s.text));
    }
}

/// The spans split into words, each word keeping the blank before it.
fn words(spans: &[Span]) -> Vec<Span> {
    let mut out = Vec::new();
    for s in spans {
        let mut word = String::new();
        for ch in s.text.chars() {
            if ch == ' ' && !word.trim().is_empty() {
                out.push(Span {
                    text: std::mem::take(&mut word),
                    ..s.clone()
                });
            }
            word.push(ch);
        }
        if !word.is_empty() {
            out.push(Span {
                text: word,
                ..s.clone()
            });
        }
    }
    out
}

/// The spans cut to `most` characters, with `…` where cut.
fn cut(spans: &[Span], most: usize) -> Vec<Span> {
    let mut out = Vec::new();
    let mut left = most;
    for s in spans {
        let len = s.text.chars().count();
        if len <= left {
            left -= len;
            out.push(s.clone());
            continue;
        }
        let mut text: String = s.text.chars().take(left.saturating_sub(1)).collect();
        text.push('…');
        out.push(Span { text, ..s.clone() });
        break;
    }
    out
}

fn plain(text: &str) -> Span {
    Span {
        text: text.to_string(),
        bold: false,
        code: false,
        link: false,
    }
}

fn text_of(spans: &[Span]) -> String {
    spans.iter().map(|s| s.text.as_str()).collect()
}

/// Inline Markdown: `code`, **bold**, [text](url); HTML tags dropped, entities read.
fn inline(text: &str) -> Vec<Span> {
    let text = strip_tags(text);
    let mut out: Vec<Span> = Vec::new();
    let mut bold = false;
    let mut rest = text.as_str();
    let mut buf = String::new();
    let push = |out: &mut Vec<Span>, buf: &mut String, bold: bool| {
        if !buf.is_empty() {
            out.push(Span {
                text: std::mem::take(buf),
                bold,
                code: false,
                link: false,
            });
        }
    };
    while let Some(ch) = rest.chars().next() {
        if let Some(escaped) = rest
            .strip_prefix('\\')
            .and_then(|r| r.chars().next())
            .filter(char::is_ascii_punctuation)
        {
            // A Markdown escape: the character itself.
            buf.push(escaped);
            rest = &rest[1 + escaped.len_utf8()..];
        } else if let Some(after) = rest.strip_prefix("**") {
            push(&mut out, &mut buf, bold);
            bold = !bold;
            rest = after;
        } else if ch == '`' {
            if let Some(end) = rest[1..].find('`') {
                push(&mut out, &mut buf, bold);
                out.push(Span {
                    text: rest[1..end + 1].to_string(),
                    bold,
                    code: true,
                    link: false,
                });
                rest = &rest[end + 2..];
            } else {
                buf.push(ch);
                rest = &rest[1..];
            }
        } else if ch == '[' {
            match link(rest) {
                Some((label, len)) => {
                    push(&mut out, &mut buf, bold);
                    out.push(Span {
                        text: label,
                        bold,
                        code: false,
                        link: true,
                    });
                    rest = &rest[len..];
                }
                None => {
                    buf.push(ch);
                    rest = &rest[1..];
                }
            }
        } else {
            buf.push(ch);
            rest = &rest[ch.len_utf8()..];
        }
    }
    push(&mut out, &mut buf, bold);
    out
}

/// `[label](url)` at the start of `text`: the label and the length taken.
fn link(text: &str) -> Option<(String, usize)> {
    let close = text.find("](")?;
    let end = text[close..].find(')')? + close;
    let label = &text[1..close];
    (!label.contains('[')).then(|| (label.to_string(), end + 1))
}

/// HTML tags out (`<br>` as a blank), the entities GitHub would show as characters read.
fn strip_tags(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find('<') {
        out.push_str(&rest[..start]);
        match rest[start..].find('>') {
            Some(end)
                if rest[start + 1..].starts_with(|c: char| c.is_ascii_alphabetic() || c == '/') =>
            {
                out.push(' ');
                rest = &rest[start + end + 1..];
            }
            _ => {
                out.push('<');
                rest = &rest[start + 1..];
            }
        }
    }
    out.push_str(rest);
    out.replace("&amp;", "&")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace('\u{200B}', "")
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
