//! epsilab: an experiment and benchmark harness for differentially private machine learning.
//!
//! Data flow, one module per stage (docs/architecture.md draws it):
//! [`spec`] (TOML experiment, each pipeline read by its [`kinds`]) → [`plan`] (cells with seeds
//! and per-step budgets) → [`data`] (shared datasets,
//! splits) → [`counts`] (sufficient statistics) → [`selection`] → [`learners`] (with
//! [`privacy`] mechanisms and the ledger; [`privacy::accountant`] for DP-SGD's Rényi-DP accountant) → [`evaluate`] → [`store`] (trials.jsonl) →
//! [`report`] (tables, figures, verdicts against the thesis, REPORT.md). [`runner`] drives the
//! plan in parallel; [`pipeline`] runs one cell; [`analysis`] holds the probe kinds that record
//! non-accuracy quantities in place of a learner.
//!
//! Around it: [`audit`] (empirical epsilon lower bounds, planted mutants), [`check`] (the CI
//! regression gate), [`provenance`] (what produced a results folder), [`stats`] (shared
//! statistics), [`rng`] (stable seed derivation), [`shard`] and [`slurm`] (a plan split over
//! the tasks of a job array), [`profile`] (where a run's time went), [`memo`] (noise-free results
//! computed once per key and shared across trials and threads), [`cli`] (the command line).
//!
//! These docs are for the people who change epsilab: build them with
//! `cargo doc --no-deps --document-private-items`, which CI runs with warnings as errors.

// Module docs name the private items that do the work; they are links in the private build.
#![allow(rustdoc::private_intra_doc_links)]

pub mod analysis;
pub mod audit;
pub mod check;
pub mod cli;
pub mod compare;
pub mod counts;
pub mod data;
pub mod error;
pub mod evaluate;
pub mod external;
pub mod fuzzing;
pub mod kinds;
pub mod learners;
pub mod memo;
pub mod pipeline;
pub mod plan;
pub(crate) mod preflight;
pub mod privacy;
pub mod profile;
pub mod provenance;
pub mod release;
pub mod report;
pub mod rng;
pub mod runner;
pub mod schedule;
pub mod selection;
pub mod shard;
pub mod slurm;
pub mod spec;
pub mod speed;
pub mod stats;
pub mod status;
pub mod store;

pub use error::{Error, Result};
