//! `[[report.view]]`: more figures of a spec's trials along another grid axis than the main
//! figure's (e.g. error vs eps beside error vs n), drawn like a `figure` report with that
//! axis as x, and saved as `figure_<name>`. Published values are not drawn on views: the
//! verdicts name the main figure's axis.

use super::figure::Figure;
use super::summary::{baselines, summarise};
use crate::spec::{ReportKind, Spec};
use crate::store::TrialRecord;
use std::collections::BTreeMap;

/// The figures of every view of `spec`, with their file stems.
pub fn figures(
    spec: &Spec,
    records: &[TrialRecord],
    titles: &BTreeMap<String, String>,
) -> Vec<(Figure, String)> {
    let mut out = Vec::new();
    for v in &spec.report.view {
        let mut s = spec.clone();
        s.report.kind = ReportKind::Figure;
        s.report.x = Some(v.x.clone());
        s.report.metrics = v.metrics.clone();
        s.report.figure = v.figure;
        s.report.x_label = v.x_label.clone();
        s.report.y_label = v.y_label.clone();
        s.report.log_x = v.log_x;
        s.report.view = Vec::new();
        if let Some(ds) = &v.datasets {
            s.experiment.datasets.retain(|d| ds.contains(d));
        }
        let chosen: Vec<TrialRecord> = records
            .iter()
            .filter(|r| {
                v.pipelines
                    .as_ref()
                    .is_none_or(|ps| ps.contains(&r.pipeline))
            })
            .cloned()
            .collect();
        let summaries = summarise(&s, &chosen);
        let fig = Figure::build(
            &s,
            &v.metrics,
            &summaries,
            &baselines(&chosen),
            titles,
            None,
        );
        out.push((fig, format!("figure_{}", v.name)));
    }
    out
}
