//! The wide tables in LaTeX (`table.tex`): booktabs rules, siunitx columns aligned on the
//! decimal point. A wide table (Table 4.2 has six series of mean, s.e. and published value)
//! is far wider than a column, so each metric's table is split into blocks of series that
//! fit the report's width (`size`: one column or the text width), every block labelled with
//! its metric (and "series i–j of n"), the dataset (and x) columns repeated. Column headers
//! wrap onto short lines. The width of a set table is only estimated here, so each block is
//! also set in a box and scaled down to `\linewidth` should it still be wider: it never
//! overflows, whatever the document's fonts.

use super::summary::is_accuracy;
use super::summary::tex_escape;
use super::table::{Wide, WideRow, metric_caption, target_text, wide_value};
use crate::spec::{SizePreset, Spec, Target};
use std::fmt::Write;

/// Width in points of a digit, of a text character (10 pt Computer Modern, on average) and of
/// the padding around one column (2 × `\tabcolsep`).
const DIGIT_PT: f64 = 5.0;
const CHAR_PT: f64 = 4.5;
const PAD_PT: f64 = 12.0;
/// Header lines are wrapped at this many characters.
const HEADER_CHARS: usize = 16;

/// The width in points the blocks of a table are planned for: `\columnwidth` of a two-column
/// paper (3.4 in) for `size = "one-column"`, the text width of a one-column paper (6.5 in)
/// otherwise, or `width_in` when the report gives it.
pub fn target_pt(spec: &Spec) -> f64 {
    match (spec.report.width_in, spec.report.size) {
        (Some(w), _) => w * 72.0,
        (None, Some(SizePreset::OneColumn)) => 3.4 * 72.0,
        _ => 6.5 * 72.0,
    }
}

/// The siunitx `table-format` of a column (a sign when a value is negative: siunitx sets
/// it apart from the digits, wider than one) and its estimated width in points.
fn digits(values: impl Iterator<Item = f64>, decimals: usize) -> (String, f64) {
    let finite: Vec<f64> = values.filter(|v| v.is_finite()).collect();
    let int = finite
        .iter()
        .map(|v| format!("{:.0}", v.abs().trunc()).len())
        .max()
        .unwrap_or(1);
    let sign = finite.iter().any(|v| *v < 0.0);
    let width = (int + decimals + 1) as f64 * DIGIT_PT + if sign { 8.0 } else { 0.0 };
    (
        format!("{}{int}.{decimals}", if sign { "-" } else { "" }),
        width,
    )
}

/// How one wide table is set: its decimals and whether it shows modes (no s.e.).
#[derive(Debug, Clone, Copy)]
struct Setting {
    modal: bool,
    dec: usize,
}

impl Setting {
    fn of(metric: &str) -> Setting {
        let modal = super::summary::is_modal(metric);
        let dec = if modal {
            0
        } else if is_accuracy(metric) {
            1
        } else {
            4
        };
        Setting { modal, dec }
    }
}

/// A series' siunitx columns (mean, s.e., published) and their estimated width in points.
fn series_columns(t: &Wide, i: usize, set: Setting) -> (String, f64) {
    let means: Vec<f64> = t
        .rows
        .iter()
        .filter_map(|r| r.cells[i].map(|c| c.0))
        .collect();
    let dec = if set.modal {
        usize::from(!means.iter().all(|x| x.fract() == 0.0))
    } else {
        set.dec
    };
    let (format, w) = digits(means.into_iter(), dec);
    let mut cols = format!(" S[table-format={format}]");
    let mut width = w + PAD_PT;
    if !set.modal {
        let ses = t.rows.iter().filter_map(|r| r.cells[i].map(|c| c.1));
        let (format, w) = digits(ses, set.dec);
        let _ = write!(cols, "@{{\\,\\(\\pm\\)\\,}}S[table-format={format}]");
        width += w + 10.0;
    }
    if t.has_published[i] {
        cols.push_str(" l");
        // The widest target text: digits, and the kind's word when it is not published.
        let word = t
            .rows
            .iter()
            .filter_map(|r| r.cells[i].and_then(|c| c.2))
            .map(|(_, k)| {
                if k == Target::Published {
                    0
                } else {
                    k.word().len() + 1
                }
            })
            .max()
            .unwrap_or(0);
        width += (set.dec + 5) as f64 * 0.8 * DIGIT_PT + word as f64 * 0.8 * CHAR_PT + PAD_PT;
    }
    (cols, width)
}

/// `text` broken at spaces into lines of at most [`HEADER_CHARS`] characters (a longer word
/// keeps its own line).
fn wrap(text: &str) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        match lines.last_mut() {
            Some(l) if l.chars().count() + 1 + word.chars().count() <= HEADER_CHARS => {
                l.push(' ');
                l.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    lines
}

/// A header cell of stacked lines (`\begin{tabular}[b]{@{}c@{}}…`), or the text when one line.
fn stacked(lines: &[String]) -> String {
    let escaped: Vec<String> = lines.iter().map(|l| tex_escape(l)).collect();
    if escaped.len() <= 1 {
        escaped.concat()
    } else {
        format!(
            "\\begin{{tabular}}[b]{{@{{}}c@{{}}}}{}\\end{{tabular}}",
            // `\relax`: a line starting with `[` is not an optional argument of `\\`.
            escaped.join("\\\\\\relax ")
        )
    }
}

fn longest(lines: &[String]) -> usize {
    lines.iter().map(|l| l.chars().count()).max().unwrap_or(0)
}

/// The series of a table split into blocks that fit `target` points beside `lead` points of
/// row headers: consecutive series, at least one per block.
fn blocks(widths: &[f64], lead: f64, target: f64) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut used = lead;
    for (i, w) in widths.iter().enumerate() {
        if i > start && used + w > target {
            out.push(start..i);
            start = i;
            used = lead;
        }
        used += w;
    }
    if start < widths.len() {
        out.push(start..widths.len());
    }
    out
}

/// The LaTeX cells of one row for the series in `range`: mean (± s.e.) and the published
/// value.
fn row_cells(t: &Wide, r: &WideRow, set: Setting, range: std::ops::Range<usize>) -> Vec<String> {
    let mut cells = Vec::new();
    for i in range {
        let bold = if r.best == Some(i) { "\\bfseries " } else { "" };
        match &r.cells[i] {
            Some((m, se, p)) => {
                cells.push(format!("{bold}{}", wide_value(&t.metric, *m)));
                if !set.modal {
                    cells.push(format!("{bold}{}", wide_value(&t.metric, *se)));
                }
                if t.has_published[i] {
                    cells.push(p.map_or(String::new(), |p| {
                        format!("{{\\footnotesize ({})}}", target_text(&t.metric, p))
                    }));
                }
            }
            None => {
                cells.push("{---}".into());
                if !set.modal {
                    cells.push("{}".into());
                }
                if t.has_published[i] {
                    cells.push(String::new());
                }
            }
        }
    }
    cells
}

/// The definitions every `table.tex` and `figure.tex` starts with: `\epsilabbox`, the box a
/// block is measured in, and `\epsilabfit{width}`, which sets the box at its natural size,
/// scaled down to `width` if wider and then to 0.85 `\textheight` if taller (a figure with a
/// long legend), so that no float is wider or taller than its page.
pub const FIT_MACROS: &str = "\\ifdefined\\epsilabbox\\else\\newsavebox{\\epsilabbox}\\fi\n\
\\providecommand{\\epsilabfit}[1]{\\ifdim\\wd\\epsilabbox>#1\\relax\
\\sbox\\epsilabbox{\\resizebox{#1}{!}{\\usebox{\\epsilabbox}}}\\fi\
\\ifdim\\dimexpr\\ht\\epsilabbox+\\dp\\epsilabbox\\relax>0.85\\textheight\\relax\
\\resizebox*{!}{0.85\\textheight}{\\usebox{\\epsilabbox}}\\else\\usebox{\\epsilabbox}\\fi}\n";

/// Rows a block holds at most: with its label and a header of wrapped series names it stays
/// under the shortest text height it is compiled for (9 in, letter paper with 1 in margins),
/// so a tall table is split into row blocks instead of a float taller than the page.
const ROWS_PER_BLOCK: usize = 36;

/// The environment each block is set in: a `table` float unless the document defines
/// `epsilabtable` before the `\input` (a `table*` in a two-column document, say).
pub const TABLE_ENV: &str = "\\ifdefined\\epsilabtable\\else\\newenvironment{epsilabtable}{\\begin{table}[tbp]}{\\end{table}}\\fi\n";

/// `n` rows in about equal consecutive blocks of at most [`ROWS_PER_BLOCK`].
fn row_blocks(n: usize) -> Vec<std::ops::Range<usize>> {
    let k = n.div_ceil(ROWS_PER_BLOCK).max(1);
    let size = n.div_ceil(k).max(1);
    (0..n).step_by(size).map(|a| a..(a + size).min(n)).collect()
}

/// One block of a wide table: the row headers and the series in `range`, in a measured box.
fn block(
    out: &mut String,
    t: &Wide,
    set: Setting,
    (range, rows): (std::ops::Range<usize>, &[WideRow]),
    label: &str,
) {
    let mut spec_cols = String::from("l");
    if t.x_head.is_some() {
        spec_cols.push_str(" l");
    }
    for i in range.clone() {
        spec_cols.push_str(&series_columns(t, i, set).0);
    }
    let width = |i: usize| 1 + usize::from(!set.modal) + usize::from(t.has_published[i]);
    let _ = writeln!(
        out,
        "\\begin{{epsilabtable}}\n\\par\\noindent{{\\small\\itshape {}}}\\par\\nopagebreak\\smallskip\n\
         \\begin{{lrbox}}{{\\epsilabbox}}%\n\
         \\sisetup{{detect-weight=true, mode=text, table-number-alignment=center}}%\n\
         \\begin{{tabular}}{{{spec_cols}}}\n\\toprule",
        tex_escape(label)
    );
    let lead = match &t.x_head {
        Some(x) => format!("dataset & {}", tex_escape(x)),
        None => "dataset".into(),
    };
    let blank = if t.x_head.is_some() { " & " } else { "" };
    let names: Vec<String> = range
        .clone()
        .map(|i| {
            let lines = wrap(&t.columns[i].0);
            format!("\\multicolumn{{{}}}{{c}}{{{}}}", width(i), stacked(&lines))
        })
        .collect();
    let tags: Vec<String> = range
        .clone()
        .map(|i| {
            let tag = if t.columns[i].1 {
                "private"
            } else {
                "non-private"
            };
            format!("\\multicolumn{{{}}}{{c}}{{\\footnotesize {tag}}}", width(i))
        })
        .collect();
    let _ = writeln!(out, "{lead} & {} \\\\", names.join(" & "));
    let _ = writeln!(out, "{blank} & {} \\\\\n\\midrule", tags.join(" & "));
    let mut last = String::new();
    for r in rows {
        if t.x_head.is_some() && !last.is_empty() && last != r.dataset {
            let _ = writeln!(out, "\\midrule");
        }
        let head = if t.x_head.is_some() {
            let d = if last == r.dataset {
                String::new()
            } else {
                tex_escape(&r.dataset)
            };
            format!("{d} & {}", tex_escape(&r.x))
        } else {
            tex_escape(&r.dataset)
        };
        last = r.dataset.clone();
        let cells = row_cells(t, r, set, range.clone());
        let _ = writeln!(out, "{head} & {} \\\\", cells.join(" & "));
    }
    let _ = writeln!(
        out,
        "\\bottomrule\n\\end{{tabular}}%\n\\end{{lrbox}}%\n\\epsilabfit{{\\linewidth}}\\par\n\\end{{epsilabtable}}\n"
    );
}

/// A block's label: the metric, then which series and rows it holds when the table is split.
fn block_label(
    caption: &str,
    t: &Wide,
    (series, n_series): (&std::ops::Range<usize>, usize),
    (rows, n_rows): (&std::ops::Range<usize>, usize),
) -> String {
    let mut label = caption.to_string();
    let parts = [
        ("series", series, n_series, t.columns.len()),
        ("rows", rows, n_rows, t.rows.len()),
    ];
    for (what, range, blocks, total) in parts {
        if blocks > 1 {
            let (from, to) = (range.start + 1, range.end);
            let _ = write!(label, ", {what} {from}–{to} of {total}");
        }
    }
    label
}

/// The estimated width in points of the row-header columns (dataset, x) of a table.
fn lead_pt(t: &Wide) -> f64 {
    let chars = |v: Vec<usize>| v.into_iter().max().unwrap_or(0) as f64;
    let dataset = chars(t.rows.iter().map(|r| r.dataset.chars().count()).collect()).max(7.0);
    let x = t.x_head.as_ref().map_or(0.0, |h| {
        let values = chars(t.rows.iter().map(|r| r.x.chars().count()).collect());
        values.max(h.chars().count() as f64) * CHAR_PT + PAD_PT
    });
    dataset * CHAR_PT + PAD_PT + x
}

/// The wide tables in LaTeX (`table.tex`): per metric, blocks of series that fit the report's
/// width, each labelled; needs `\usepackage{booktabs,siunitx,graphicx}`.
pub fn wide_latex(spec: &Spec, tables: &[Wide]) -> String {
    let mut out = format!(
        "% {} --- generated by epsilab; needs \\usepackage{{booktabs,siunitx,graphicx}}.\n\
         % Mean $\\pm$ s.e. over trials; bold: best private cell of a row; (target value:\n\
         % published unless marked derived or assumed).\n\
         % Blocks planned for {:.1} in ({}); a block still wider than \\linewidth is scaled down.\n\
         % Each block (at most {ROWS_PER_BLOCK} rows) is its own float, `epsilabtable`: a table\n\
         % unless defined before the \\input (in a two-column document a text-width table wants\n\
         % \\newenvironment{{epsilabtable}}{{\\begin{{table*}}[tbp]}}{{\\end{{table*}}}}). Do not\n\
         % put this file inside a table environment.\n",
        tex_escape(spec.title()),
        target_pt(spec) / 72.0,
        if spec.report.size == Some(SizePreset::OneColumn) {
            "one column"
        } else {
            "the text width"
        }
    );
    out.push_str(FIT_MACROS);
    out.push_str(TABLE_ENV);
    for t in tables {
        let set = Setting::of(&t.metric);
        let widths: Vec<f64> = (0..t.columns.len())
            .map(|i| {
                let header = longest(&wrap(&t.columns[i].0)) as f64 * CHAR_PT + PAD_PT;
                series_columns(t, i, set).1.max(header)
            })
            .collect();
        let parts = blocks(&widths, lead_pt(t), target_pt(spec));
        let caption = metric_caption(&t.metric);
        let row_parts = row_blocks(t.rows.len());
        let total = parts.len() * row_parts.len();
        for (j, rows) in row_parts.iter().enumerate() {
            for (k, range) in parts.iter().enumerate() {
                let label = block_label(&caption, t, (range, parts.len()), (rows, row_parts.len()));
                let n = j * parts.len() + k + 1;
                let _ = writeln!(out, "% {label} (block {n} of {total})");
                let slice = (range.clone(), &t.rows[rows.clone()]);
                block(&mut out, t, set, slice, &label);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_keep_each_within_the_target_and_every_series_once() {
        let b = blocks(&[100.0, 100.0, 100.0, 300.0, 50.0], 60.0, 280.0);
        assert_eq!(b, vec![0..2, 2..3, 3..4, 4..5]);
        // One series wider than the target still gets its block.
        assert_eq!(blocks(&[500.0], 60.0, 280.0), vec![0..1]);
        assert_eq!(blocks(&[10.0; 4], 60.0, 280.0), vec![0..4]);
    }

    #[test]
    fn row_blocks_cover_every_row_once_within_the_limit() {
        assert_eq!(row_blocks(0), Vec::<std::ops::Range<usize>>::new());
        assert_eq!(row_blocks(6), vec![0..6]);
        assert_eq!(row_blocks(ROWS_PER_BLOCK), vec![0..ROWS_PER_BLOCK]);
        for n in [37, 100, 192] {
            let b = row_blocks(n);
            assert_eq!(b.first().unwrap().start, 0);
            assert_eq!(b.last().unwrap().end, n);
            assert!(b.windows(2).all(|w| w[0].end == w[1].start));
            assert!(b.iter().all(|r| !r.is_empty() && r.len() <= ROWS_PER_BLOCK));
        }
    }

    #[test]
    fn a_negative_column_gets_a_sign_in_its_format() {
        assert_eq!(digits([-2.0, 5.0].into_iter(), 0).0, "-1.0");
        assert_eq!(digits([12.5, 3.0].into_iter(), 1).0, "2.1");
    }

    #[test]
    fn headers_wrap_at_spaces() {
        assert_eq!(
            wrap("objective perturbation (private λ)"),
            vec!["objective", "perturbation", "(private λ)"]
        );
        assert_eq!(wrap("LR"), vec!["LR"]);
        assert_eq!(
            stacked(&wrap("non-private LR model")),
            "\\begin{tabular}[b]{@{}c@{}}non-private LR\\\\\\relax model\\end{tabular}"
        );
    }
}
