//! Markdown table rows with escaped cells. A cell is text from specs and catalogs (dataset
//! titles such as `Synthetic (D = 10, ||x|| ≤ 1)`, claims such as `P(|Lap(1)| <= 3)`), and an
//! unescaped `|` in it starts a new cell: the row gains columns, every later value sits under
//! the wrong header, and a link or note split across cells breaks. Every generated table row
//! goes through [`row`], so no caller can forget.

/// A cell's text made safe inside a GFM table row: `|` escaped as `\|` (GFM reads it as a
/// literal bar, in code spans and link text too) and line breaks folded into spaces.
pub fn cell(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '|' => out.push_str("\\|"),
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// One table row, `| a | b |`, every cell escaped (no trailing newline).
pub fn row<S: AsRef<str>>(cells: &[S]) -> String {
    let mut out = String::from("|");
    for c in cells {
        out.push(' ');
        out.push_str(&cell(c.as_ref()));
        out.push_str(" |");
    }
    out
}

/// A header row and its delimiter row (`|---|…`), ending in a newline.
pub fn head<S: AsRef<str>>(cells: &[S]) -> String {
    format!("{}\n|{}\n", row(cells), "---|".repeat(cells.len()))
}

/// The cells of a GFM table row as a reader splits them: on every `|` not escaped by a
/// backslash, without the leading and trailing bar. The test of the committed tables reads
/// rows with it.
pub fn split_row(line: &str) -> Vec<String> {
    let line = line.trim();
    let line = line.strip_prefix('|').unwrap_or(line);
    let mut cells = vec![String::new()];
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                chars.next();
                cells.last_mut().expect("one cell").push('|');
            }
            '|' => cells.push(String::new()),
            c => cells.last_mut().expect("one cell").push(c),
        }
    }
    // A closing bar leaves an empty last cell behind it.
    if line.trim_end().ends_with('|') && !line.trim_end().ends_with("\\|") {
        cells.pop();
    }
    cells.into_iter().map(|c| c.trim().to_string()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bar_in_a_cell_stays_in_its_cell() {
        let title = "Synthetic (D = 10, ||x|| ≤ 1)";
        let r = row(&[title, "P(|Lap(1)| <= 3)", "83.5 ± 0.1"]);
        assert_eq!(
            r,
            "| Synthetic (D = 10, \\|\\|x\\|\\| ≤ 1) | P(\\|Lap(1)\\| <= 3) | 83.5 ± 0.1 |"
        );
        assert_eq!(split_row(&r), vec![title, "P(|Lap(1)| <= 3)", "83.5 ± 0.1"]);
        // Unescaped, the same two cells are six.
        assert_eq!(split_row(&format!("| {title} | a |")).len(), 6);
    }

    #[test]
    fn head_has_one_rule_per_column() {
        assert_eq!(head(&["a", "b"]), "| a | b |\n|---|---|\n");
        assert_eq!(cell("two\nlines"), "two lines");
    }

    #[test]
    fn pulldown_cmark_reads_an_escaped_bar_as_text_of_one_cell() {
        let md = format!(
            "{}{}\n",
            head(&["experiment", "n"]),
            row(&["[a |b|](#x)", "1"])
        );
        let mut html = String::new();
        pulldown_cmark::html::push_html(
            &mut html,
            pulldown_cmark::Parser::new_ext(&md, pulldown_cmark::Options::ENABLE_TABLES),
        );
        assert!(
            html.contains("<td><a href=\"#x\">a |b|</a></td><td>1</td>"),
            "{html}"
        );
    }
}
