//! The static HTML report: one self-contained file (figures inlined as SVG, or PNG data URIs
//! when no SVG was written; no external resources) with the tables, the verdicts and a filter
//! by verdict. The filter also reads the URL fragment (`#verdict=differs`), so a link can open
//! the page filtered.

use pulldown_cmark::{Options, Parser, html::push_html};
use std::fmt::Write;
use std::path::PathBuf;

/// One experiment's part of REPORT.md and index.html.
#[derive(Debug, Clone)]
pub struct Section {
    pub name: String,
    pub title: String,
    /// `reproduced` (every verdict holds), `differs` (some do not) or `none` (nothing published).
    pub verdict: &'static str,
    /// The row of the summary table (Markdown).
    pub summary_row: String,
    /// Markdown before the figures (spec, links).
    pub intro: String,
    /// Figure file stems in the results folder (`figure`, `figure_log10_lambda`, ...).
    pub figures: Vec<String>,
    /// Markdown after the figures (tables, verdicts).
    pub rest: String,
    /// The results folder.
    pub dir: PathBuf,
    /// Keys of the verdicts that differ or fail ([`super::ablation::cell_key`], `claim_key`).
    pub differing: Vec<super::ablation::VerdictKey>,
}

/// The header of the summary table (REPORT.md and index.html).
pub const SUMMARY_HEAD: &str = "| experiment | verdicts | reproduced / holds | differences explained (faithful ε-DP / variant / post hoc) / unexplained |\n|---|---|---|---|\n";

const STYLE: &str = "body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222;line-height:1.45}\
table{border-collapse:collapse;margin:.8em 0;font-size:.9em}th,td{border:1px solid #ccc;padding:.25em .5em;text-align:left}\
th{background:#f3f3f3}figure.figure{margin:1em 0}figure.figure svg,figure.figure img{max-width:100%;height:auto}\
section.experiment{border-top:2px solid #ddd;padding-top:.5em}section[hidden]{display:none}\
nav#filter button{margin-right:.4em;padding:.3em .7em;border:1px solid #888;background:#fff;border-radius:4px;cursor:pointer}\
nav#filter button[aria-pressed=true]{background:#0072b2;color:#fff;border-color:#0072b2}\
.badge{font-size:.75em;padding:.1em .5em;border-radius:3px;color:#fff;vertical-align:middle}\
.badge.reproduced{background:#00824f}.badge.differs{background:#c81e1e}.badge.none{background:#888}";

const SCRIPT: &str = "(function(){\
var sections=[].slice.call(document.querySelectorAll('section.experiment'));\
var buttons=[].slice.call(document.querySelectorAll('nav#filter button'));\
function show(v){sections.forEach(function(s){s.hidden=!(v==='all'||s.dataset.verdict===v);});\
buttons.forEach(function(b){b.setAttribute('aria-pressed',String(b.dataset.show===v));});\
document.body.dataset.filter=v;}\
buttons.forEach(function(b){b.addEventListener('click',function(){show(b.dataset.show);});});\
var m=/verdict=(\\w+)/.exec(location.hash);show(m?m[1]:'all');\
document.body.dataset.ready='yes';})();";

fn md_html(md: &str) -> String {
    let mut out = String::new();
    push_html(&mut out, Parser::new_ext(md, Options::ENABLE_TABLES));
    out
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Standard base64 (RFC 4648) for data URIs.
pub fn base64(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for c in bytes.chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        for (i, shift) in [18, 12, 6, 0].into_iter().enumerate() {
            if i <= c.len() {
                out.push(A[(n >> shift) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// An `<svg>` element ready to inline: no XML prolog, and a viewBox so CSS can scale it.
fn inline_svg(svg: &str) -> String {
    let start = svg.find("<svg").unwrap_or(0);
    let svg = &svg[start..];
    if svg.contains("viewBox") {
        return svg.to_string();
    }
    let attr = |name: &str| {
        let key = format!("{name}=\"");
        svg.find(&key).and_then(|i| {
            let rest = &svg[i + key.len()..];
            rest.find('"').map(|j| rest[..j].to_string())
        })
    };
    match (attr("width"), attr("height")) {
        (Some(w), Some(h)) => svg.replacen("<svg", &format!("<svg viewBox=\"0 0 {w} {h}\""), 1),
        _ => svg.to_string(),
    }
}

fn figure_html(s: &Section, stem: &str, prefix: &str) -> String {
    let svg = std::fs::read_to_string(s.dir.join(format!("{stem}.svg")));
    let body = match svg {
        Ok(svg) => inline_svg(&svg),
        Err(_) => match std::fs::read(s.dir.join(format!("{stem}.png"))) {
            Ok(png) => format!(
                "<img alt=\"{}\" src=\"data:image/png;base64,{}\">",
                escape(&s.title),
                base64(&png)
            ),
            Err(_) => String::new(),
        },
    };
    format!(
        "<figure class=\"figure\" data-figure=\"{}{stem}\">{body}</figure>\n",
        escape(prefix)
    )
}

/// The whole page; `all`: the page of every experiment at the results root (figure ids and
/// links are prefixed with `NAME/`).
pub fn page(title: &str, intro: &str, sections: &[Section], all: bool) -> String {
    let mut out = format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>{}</h1>\n{}",
        escape(title),
        escape(title),
        md_html(intro)
    );
    let count = |v: &str| sections.iter().filter(|s| s.verdict == v).count();
    let _ = writeln!(
        out,
        "<nav id=\"filter\">Show: <button data-show=\"all\">all ({})</button>\
         <button data-show=\"reproduced\">all reproduced ({})</button>\
         <button data-show=\"differs\">some differ ({})</button>\
         <button data-show=\"none\">no target values ({})</button></nav>",
        sections.len(),
        count("reproduced"),
        count("differs"),
        count("none")
    );
    if all {
        let mut md = String::from(SUMMARY_HEAD);
        for s in sections {
            md.push_str(&s.summary_row);
            md.push('\n');
        }
        out.push_str(&md_html(&md));
    }
    for s in sections {
        let id = super::summary::anchor(&s.name);
        let fig_prefix = if all {
            format!("{}/", s.name)
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "<section class=\"experiment\" id=\"{}\" data-verdict=\"{}\">\n<h2>{} <span class=\"badge {}\">{}</span></h2>",
            escape(&id),
            s.verdict,
            escape(&s.title),
            s.verdict,
            match s.verdict {
                "reproduced" => "all reproduced",
                "differs" => "some differ",
                _ => "no target values",
            }
        );
        out.push_str(&md_html(&s.intro));
        for f in &s.figures {
            out.push_str(&figure_html(s, f, &fig_prefix));
        }
        out.push_str(&md_html(&s.rest));
        out.push_str("</section>\n");
    }
    let _ = write!(out, "<script>{SCRIPT}</script>\n</body>\n</html>\n");
    out
}

/// `page` with `extra` HTML at the end of its body, before its script (the speed history).
pub fn with_appendix(page: String, extra: &str) -> String {
    match page.rfind("<script>") {
        Some(i) => format!("{}{extra}{}", &page[..i], &page[i..]),
        None => page + extra,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc4648_vectors() {
        for (i, o) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(i.as_bytes()), o);
        }
    }

    #[test]
    fn inline_svg_gains_a_view_box() {
        let s = inline_svg("<?xml version=\"1.0\"?>\n<svg width=\"10\" height=\"20\"></svg>");
        assert_eq!(
            s,
            "<svg viewBox=\"0 0 10 20\" width=\"10\" height=\"20\"></svg>"
        );
    }
}
