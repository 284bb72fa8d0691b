//! The command line: parses arguments, runs the library, reports errors once.

use crate::data::{DataDir, DatasetDef};
use crate::error::Result;
use crate::privacy::accountant::default_delta;
use crate::runner::{CONFIRM_CELLS, Prepared, RunOptions, results_dir};
use crate::shard::Shard;
use crate::spec::Spec;
use clap::{Parser, Subcommand};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

/// epsilab: reproducible experiments and benchmarks for differentially private machine learning.
///
/// A TOML spec lists datasets, pipelines (learner, parameters, budget split), a grid of epsilons
/// and other axes, and what the report shows. `run` executes the seeded trials in parallel and
/// stores one JSON line per trial; `report` rebuilds tables and figures from those lines alone.
#[derive(Debug, Parser)]
#[command(name = "epsilab", version, about, long_about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the trials of a spec (resumes: finished trials are skipped), then write its report.
    Run {
        /// Experiment spec (TOML), e.g. experiments/quickstart.toml.
        spec: PathBuf,
        /// Worker threads, 1 to 256; 0 (the default) means one per core. Results do not depend
        /// on it.
        #[arg(short = 'j', long = "jobs", default_value_t = 0,
              value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(0..=crate::runner::MAX_JOBS as u64))]
        jobs: usize,
        /// Folder holding the dataset files, plain or .gz [default: $EPSILAB_DATA, else the
        /// datasets shipped in the repository's datasets/ folder].
        #[arg(long)]
        data_dir: Option<PathBuf>,
        /// Results root; results go to `OUT/<experiment name>/`.
        #[arg(long, default_value = "results")]
        out: PathBuf,
        /// Small version of the spec for CI: every grid value, at most two trials per cell
        /// (and `n_train` only up to `grid.smoke_n_train_of`).
        #[arg(long)]
        smoke: bool,
        /// Recompute every trial, replacing the stored results of this experiment. The new
        /// trials go to `trials.jsonl.staging` and replace `trials.jsonl` only once all of them
        /// have finished, so a forced run that fails or is interrupted keeps the old results
        /// (and a repeated `--force` resumes it). Without `--force`, stored results are reused
        /// when the spec only gained trials, grid values, datasets or pipelines, and refused
        /// when the spec, a pipeline or a dataset file changed in a way that alters them.
        #[arg(long)]
        force: bool,
        /// Recompute the stored trials of this pipeline only (repeatable), keeping every other
        /// stored trial: for a pipeline whose definition changed. Refused when anything else
        /// that the kept trials depend on changed (the seed, the neighbours, another pipeline,
        /// a dataset). Writes staging files like --force, so an interrupted run keeps the old
        /// results and a repeated call resumes it. Not with --force or --shard.
        #[arg(long, value_name = "PIPELINE")]
        rerun: Vec<String>,
        /// Run plans of more than 1000000 pending trials without asking. Such a run prints its
        /// trial count and a rough ETA and asks for confirmation on a terminal; without a
        /// terminal it stops with an error unless --yes is given.
        #[arg(short = 'y', long)]
        yes: bool,
        /// Do not write the report after running.
        #[arg(long)]
        no_report: bool,
        /// Print where the time went at the end: a table of seconds per pipeline and phase
        /// (load, split, select, preprocess, cv, fit, evaluate, write; each phase excludes the
        /// phases nested in it). Summed over threads: with -j 2 it is about CPU time, except
        /// for cells fitted in lockstep, whose fit and evaluate include waiting for their group.
        #[arg(long)]
        profile: bool,
        /// Run one shard of the plan: `I/N` (0 <= I < N), or `env` to take it from an array
        /// job's environment (SLURM_ARRAY_TASK_ID/SLURM_ARRAY_TASK_COUNT; else
        /// EPSILAB_SHARD_INDEX or JOB_COMPLETION_INDEX with EPSILAB_SHARD_COUNT). Groups of
        /// trials are dealt to shards by estimated cost; each shard appends to its own
        /// `trials.shard-I-of-N.jsonl`, and `report`, `check`, `status` and resume read all
        /// shards as one. Rerunning a shard finishes it. Not with --force.
        #[arg(long, value_name = "I/N|env")]
        shard: Option<String>,
    },
    /// Rebuild an experiment's tables and figures from its stored trials (no trial is rerun).
    ///
    /// Always writes table.md (the wide paper table: rows = x values or datasets, columns =
    /// pipelines, mean ± s.e., best private cell bold, published value in parentheses) and
    /// table.csv (every cell, long form). --format adds figure.png, figure.svg, figure.pdf
    /// (vector, font embedded), pgf (figure.tex + figure_data.csv for pgfplots), tex (table.tex,
    /// booktabs + siunitx) and html (index.html, self-contained). Published values are drawn on
    /// the figures as hollow diamonds coloured by verdict. Style flags override `[report]`.
    ///
    /// With --all: every spec in --experiments that has results, then OUT/REPORT.md and
    /// OUT/index.html (all experiments, their figures, published values beside ours, verdicts,
    /// and a filter by verdict).
    Report(ReportArgs),
    /// CI regression gate: rerun every spec in smoke mode (every grid value) and compare every
    /// trial record, bit for bit but for timings and memo keys, with
    /// EXPERIMENTS/expectations/*.json.gz; then the speed gate (per-benchmark ratios to a
    /// reference workload, limit 1.3x).
    Check(CheckArgs),
    /// Compare two results folders (or a git revision's committed results with the work
    /// tree's): pairs trials by cell and trial, paired t and Wilcoxon signed-rank tests,
    /// Holm-corrected over cells; prints each cell's minimal detectable difference. Exits 1
    /// when a cell is flagged.
    Compare {
        /// OLD results folder (with --rev: the NEW folder, default `results`).
        old: Option<PathBuf>,
        /// NEW results folder.
        new: Option<PathBuf>,
        /// OLD is this git revision's committed results (e.g. `main`, `HEAD~1`).
        #[arg(long)]
        rev: Option<String>,
        /// Per-trial quantity to compare (repeatable).
        #[arg(long, default_value = "test_accuracy")]
        metric: Vec<String>,
        /// Family-wise level of the flags.
        #[arg(long, default_value_t = 0.05)]
        alpha: f64,
        /// Only these experiments (by folder name).
        #[arg(long)]
        only: Vec<String>,
        /// Write Markdown (for a pull-request comment) here.
        #[arg(long, value_name = "FILE")]
        markdown: Option<PathBuf>,
        /// Write the full comparison as JSON here.
        #[arg(long, value_name = "FILE")]
        json: Option<PathBuf>,
        /// Write JUnit XML (one test case per cell) here.
        #[arg(long, value_name = "FILE")]
        junit: Option<PathBuf>,
    },
    /// Trials done and planned for a spec's results, per shard and in total, with the command
    /// that finishes each incomplete shard.
    Status {
        /// Experiment spec.
        spec: PathBuf,
        /// Results root the spec was run with (`run --out`).
        #[arg(long, default_value = "results")]
        out: PathBuf,
        /// Folder holding the dataset files (read to size the shards of a dataset whose size
        /// only its files tell) [default: $EPSILAB_DATA, else the repository's datasets/].
        #[arg(long)]
        data_dir: Option<PathBuf>,
        /// The smoke run's results.
        #[arg(long)]
        smoke: bool,
        /// Number of shards the spec was run with [default: read from the shard files present].
        #[arg(long)]
        shards: Option<usize>,
    },
    /// Run a spec on a Slurm cluster: writes an sbatch job array (one shard per task, threads
    /// from SLURM_CPUS_PER_TASK) and a report job that runs after every task succeeded
    /// (afterok); with --submit, submits both and prints their job ids. Merged results equal a
    /// single-process run bit for bit; `epsilab status SPEC` shows progress.
    Slurm(SlurmArgs),
    /// Datasets: download a file into the cache with checksum verification.
    Data {
        #[command(subcommand)]
        command: DataCommand,
    },
    /// Show the datasets and data sources, the learners, selectors, variants, probes, releases
    /// and attacks (each with its privacy statement), and the specs available.
    List {
        /// Folder holding the dataset files, plain or .gz [default: $EPSILAB_DATA, else the
        /// datasets shipped in the repository's datasets/ folder].
        #[arg(long)]
        data_dir: Option<PathBuf>,
        /// Folder of specs to list [default: experiments, when there is one]; a given folder
        /// that is missing or holds no specs is an error.
        #[arg(long)]
        experiments: Option<PathBuf>,
    },
    /// Empirical epsilon audit: Clopper–Pearson 95% lower bounds beside the claimed epsilons.
    Audit {
        /// Audit one mechanism (see `--all` for the list).
        #[arg(long, conflicts_with_all = ["all", "spec"])]
        mechanism: Option<String>,
        /// Audit a release or learner pipeline of this spec as it runs (an external program
        /// included), beside the ε its ledger declares (docs/external.md) [default trials: 1000].
        #[arg(long, requires = "pipeline", conflicts_with = "all")]
        spec: Option<PathBuf>,
        /// The pipeline of `--spec` to audit.
        #[arg(long, requires = "spec")]
        pipeline: Option<String>,
        /// The ε the pipeline is run at (with `--spec`).
        #[arg(long, default_value_t = 1.0, requires = "spec")]
        epsilon: f64,
        /// Neighbour X as comma-separated values (with `--spec`); `--x=` is the empty column,
        /// add/remove's neighbour of every one-value column [default: ten 0s].
        #[arg(long, value_name = "V,..", requires = "spec", value_parser = parse_column,
              allow_hyphen_values = true)]
        x: Option<Column>,
        /// Neighbour X' (with `--x`), checked to neighbour X under the spec's relation
        /// [default: X plus a 1 under add/remove, X with its last value replaced by 1 (or by 0
        /// if it is 1) under replace-one].
        #[arg(long, value_name = "V,..", requires = "spec", value_parser = parse_column,
              allow_hyphen_values = true)]
        x_prime: Option<Column>,
        /// Audit every mechanism, including the planted known-bad mutants.
        #[arg(long)]
        all: bool,
        /// Runs per side (half choose the event, half estimate it) [default: 100000, or
        /// 1000000 with --unseeded].
        #[arg(long)]
        trials: Option<usize>,
        /// Seed of the audit's draws: the same seed and trials give the same bounds.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Long run with a fresh seed from the OS and the clock (printed to stderr so the run
        /// can be replayed with --seed); default trials 1000000 per side.
        #[arg(long, conflicts_with = "seed")]
        unseeded: bool,
        /// Print a JSON array, one object per audit.
        #[arg(long)]
        json: bool,
    },
    /// DP-SGD accountant: the (ε, δ) of a training plan, or the noise multiplier a target ε
    /// needs.
    ///
    /// The plan is K releases of the Poisson-subsampled Gaussian mechanism: each step
    /// keeps every example with probability Q, sums their gradients clipped to norm C and adds
    /// N(0, S² C² I). Rényi DP of every order on dp-accounting's default grid (1.1 … 10.9,
    /// 11 … 63, 128, 256, 512, 1024; Mironov, Talwar & Zhang 2019), composed over the steps,
    /// then (ε, δ) by Balle et al. 2020's conversion; add/remove neighbours. Matches Google's
    /// dp-accounting 0.6.0 RdpAccountant. Examples (Adult, batch 256, 10 epochs):
    ///
    /// epsilab accountant --noise-multiplier 1.1 --sampling-rate 0.00786 --steps 1272 --dataset-size 32561
    ///
    /// epsilab accountant --epsilon 1 --sampling-rate 0.00786 --steps 1272 --delta 1e-9
    #[command(group(clap::ArgGroup::new("noise").required(true).args(["noise_multiplier", "epsilon"])))]
    #[command(group(clap::ArgGroup::new("delta_or_size").required(true).multiple(true)
        .args(["delta", "dataset_size"])))]
    Accountant {
        /// Noise multiplier S = noise standard deviation / clipping norm C (> 0): print the ε
        /// it gives.
        #[arg(long, value_name = "S", value_parser = parse_positive, allow_negative_numbers = true)]
        noise_multiplier: Option<f64>,
        /// Target ε (> 0): print the smallest noise multiplier that meets it (bisection to
        /// relative precision 1e-9) and the ε it gives.
        #[arg(long, value_name = "E", value_parser = parse_positive, allow_negative_numbers = true)]
        epsilon: Option<f64>,
        /// Poisson sampling rate Q in (0, 1]: expected batch size / dataset size (1 = full-batch
        /// noisy gradient descent).
        #[arg(long, value_name = "Q", value_parser = parse_sampling_rate, allow_negative_numbers = true)]
        sampling_rate: f64,
        /// Number of noisy steps K (>= 1): epochs × 1/Q for DP-SGD.
        #[arg(long, value_name = "K", value_parser = parse_steps, allow_negative_numbers = true)]
        steps: u64,
        /// δ in (0, 1), e.g. 1e-5; 1/N² is the usual choice (see --dataset-size).
        #[arg(long, value_name = "D", value_parser = parse_delta, allow_negative_numbers = true)]
        delta: Option<f64>,
        /// Training-set size N (>= 2): sets δ = 1/N² when --delta is not given.
        #[arg(long, value_name = "N", value_parser = parse_dataset_size, allow_negative_numbers = true)]
        dataset_size: Option<u64>,
    },
}

/// A line to stderr that never panics (stderr may be a closed pipe, as in `2>&1 | head`).
macro_rules! note {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($t)*);
    }};
}

/// [`note!`] without the newline (a prompt).
macro_rules! note_inline {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stderr(), $($t)*);
    }};
}

/// Appends a formatted line to a `String` buffer.
macro_rules! out {
    ($o:expr, $($t:tt)*) => {{
        $o.push_str(&format!($($t)*));
        $o.push('\n');
    }};
}

// The flags of `epsilab report` (its help is the `Command::Report` doc above).
#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// Experiment spec whose stored results to report on (or --all).
    #[arg(required_unless_present = "all")]
    spec: Option<PathBuf>,
    /// Results root the spec was run with (`run --out`).
    #[arg(long, default_value = "results")]
    out: PathBuf,
    /// Report on the smoke run's results.
    #[arg(long)]
    smoke: bool,
    /// Rebuild every experiment's report, then write OUT/REPORT.md and OUT/index.html.
    #[arg(long, conflicts_with = "spec")]
    all: bool,
    /// Folder of specs for --all.
    #[arg(long, default_value = "experiments")]
    experiments: PathBuf,
    /// Folder holding the dataset files the spec was run with, read to check that the
    /// stored results are of the data as it is (as `run` checks) [default: $EPSILAB_DATA,
    /// else the repository's datasets/].
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// With --all: write nothing; rebuild REPORT.md and the tables from the committed
    /// trials in a temporary folder and fail, naming each differing line and flipped
    /// verdict, when they differ from the committed files (the verdict gate).
    #[arg(long, requires = "all")]
    check: bool,
    #[command(flatten)]
    style: ReportStyle,
}

// The flags of `epsilab check` (its help is the `Command::Check` doc above).
#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// Folder of specs (expectations live in its `expectations/` subfolder).
    #[arg(long, default_value = "experiments")]
    experiments: PathBuf,
    /// Folder holding the dataset files, plain or .gz [default: $EPSILAB_DATA, else the
    /// datasets shipped in the repository's datasets/ folder].
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Accept the smoke records as the new expectations (a deliberate change); needs
    /// --reason, which is recorded in --changes.
    #[arg(long, requires = "reason")]
    bless: bool,
    /// Why the blessed results moved (written to --changes); only with --bless.
    #[arg(long, requires = "bless")]
    reason: Option<String>,
    /// File a bless records its reason in (newest entry first).
    #[arg(long, default_value = "results/CHANGES.md")]
    changes: PathBuf,
    /// Only these experiments (by name); skips the speed gate.
    #[arg(long)]
    only: Vec<String>,
    /// Skip the speed gate.
    #[arg(long)]
    no_speed: bool,
    /// Only the speed gate (no smoke runs).
    #[arg(long, conflicts_with_all = ["only", "no_speed", "bless"])]
    speed_only: bool,
    /// Store this machine's speed ratios as the expectation (expectations/speed.json).
    #[arg(long, conflicts_with = "no_speed")]
    bless_speed: bool,
    /// Append each benchmark's ratio, with the commit ($EPSILAB_COMMIT or git's HEAD), to
    /// `DIR/<benchmark>.tsv`; `report --all` draws the history from OUT/speed/.
    #[arg(long, value_name = "DIR", conflicts_with = "no_speed")]
    record_speed: Option<PathBuf>,
}

// The flags of `epsilab slurm` (its help is the `Command::Slurm` doc above).
#[derive(Debug, clap::Args)]
pub struct SlurmArgs {
    /// Experiment spec.
    spec: PathBuf,
    /// Array tasks (= shards).
    #[arg(long)]
    tasks: usize,
    /// Slurm partition [default: the cluster's default].
    #[arg(long)]
    partition: Option<String>,
    /// Time limit of each task, in Slurm's format (e.g. 02:00:00) [default: the partition's].
    #[arg(long)]
    time: Option<String>,
    /// CPUs per task; each task runs that many threads.
    #[arg(long, default_value_t = 1)]
    cpus_per_task: usize,
    /// Results root (as `run --out`); must be on a filesystem every node sees.
    #[arg(long, default_value = "results")]
    out: PathBuf,
    /// Folder holding the dataset files, plain or .gz, written into every task's command;
    /// must be on a filesystem every node sees [default: $EPSILAB_DATA, else the datasets
    /// shipped in the repository's datasets/ folder].
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Where the batch scripts and task logs go [default: OUT/EXPERIMENT/slurm].
    #[arg(long)]
    script_dir: Option<PathBuf>,
    /// An extra sbatch argument for both jobs (repeatable), e.g. --sbatch-arg=--account=X.
    #[arg(long = "sbatch-arg", value_name = "ARG", allow_hyphen_values = true)]
    sbatch_args: Vec<String>,
    /// Submit both jobs with sbatch and print their ids (otherwise only write the scripts).
    #[arg(long)]
    submit: bool,
}

impl SlurmArgs {
    /// The scripts' options for `spec` (read from `self.spec`); the submitter's data folder
    /// is written into every task.
    fn options(self, spec: &Spec) -> crate::slurm::SlurmOptions {
        let script_dir = self
            .script_dir
            .unwrap_or_else(|| results_dir(spec, &self.out, false).join("slurm"));
        crate::slurm::SlurmOptions {
            spec: self.spec,
            tasks: self.tasks,
            partition: self.partition,
            time: self.time,
            cpus_per_task: self.cpus_per_task,
            out: self.out,
            data_dir: Some(DataDir::resolve(self.data_dir).0),
            script_dir,
            sbatch_args: self.sbatch_args,
        }
    }
}

/// Output and figure-style flags of `report`; each overrides the spec's `[report]`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ReportStyle {
    /// Outputs besides table.md/table.csv, comma-separated [default: `[report] formats`, else
    /// png,svg,pdf,pgf,tex].
    #[arg(long, value_delimiter = ',', value_name = "FORMATS")]
    pub format: Vec<crate::spec::Format>,
    /// Figure width preset (one-column: 3.5 in, two-column: 7 in) [default: two-column].
    #[arg(long)]
    pub size: Option<crate::spec::SizePreset>,
    /// Figure width in inches (overrides --size).
    #[arg(long, value_name = "INCHES")]
    pub width: Option<f64>,
    /// Figure height in inches [default: from the width and the number of panels].
    #[arg(long, value_name = "INCHES")]
    pub height: Option<f64>,
    /// Font size in points [default: 9].
    #[arg(long, value_name = "PT")]
    pub font_size: Option<f64>,
    /// One y range for every panel.
    #[arg(long)]
    pub share_y: bool,
    /// Logarithmic x axis.
    #[arg(long)]
    pub log_x: bool,
    /// Logarithmic y axis (scatter and curve figures).
    #[arg(long)]
    pub log_y: bool,
    /// Figure kind: auto (dot plot for a single x value, else lines), line, dot, histogram, or
    /// loglog (log-log axes with a fitted slope per series).
    #[arg(long)]
    pub figure: Option<crate::spec::FigureKind>,
}

impl ReportStyle {
    /// Applies the flags to a spec's `[report]`; the formats to write.
    pub fn apply(&self, spec: &mut Spec) -> Result<Vec<crate::spec::Format>> {
        let r = &mut spec.report;
        if let Some((i, why)) =
            crate::spec::style_out_of_range([self.width, self.height, self.font_size])
        {
            return Err(crate::Error::param(crate::spec::STYLE_RANGES[i].1, why));
        }
        if self.size.is_some() {
            r.size = self.size;
            r.width_in = None;
        }
        r.width_in = self.width.or(r.width_in);
        r.height_in = self.height.or(r.height_in);
        r.font_pt = self.font_size.or(r.font_pt);
        r.share_y |= self.share_y;
        r.log_x |= self.log_x;
        r.log_y |= self.log_y;
        if let Some(k) = self.figure {
            r.figure = k;
        }
        Ok(if self.format.is_empty() {
            crate::report::formats_of(spec)
        } else {
            self.format.clone()
        })
    }
}

/// `epsilab data` subcommands.
#[derive(Debug, Subcommand)]
pub enum DataCommand {
    /// Download a dataset file into the cache folder, verified by SHA-256.
    ///
    /// The file is streamed into a temporary file in the cache folder while it is hashed and is
    /// renamed to its final name only when the checksum matches; on a mismatch the temporary
    /// file is deleted and the error shows the expected and the actual checksum. A file already
    /// cached with the right checksum is not downloaded again.
    ///
    /// A URL is saved as `CACHE/<last segment of the URL path>`; --sha256 is then required (the
    /// checksum of the file as downloaded: `sha256sum FILE`). A catalog NAME fetches the files
    /// its definition lists under `urls` into `CACHE/<catalog path>`, checked against the
    /// catalog's checksums (no built-in dataset has one: they all ship in datasets/).
    ///
    /// A spec then refers to the cached file by its path, e.g. in [dataset.mine]:
    /// train = "/home/me/.cache/epsilab/mine.csv" (or run with --data-dir CACHE for a catalog
    /// dataset).
    Fetch {
        /// A URL (http:// or https://) or a catalog dataset name.
        source: String,
        /// Expected SHA-256 of the downloaded file (64 hex digits); required for a URL.
        #[arg(long)]
        sha256: Option<String>,
        /// Cache folder [default: $EPSILAB_CACHE, else $XDG_CACHE_HOME/epsilab, else
        /// ~/.cache/epsilab].
        #[arg(long)]
        cache: Option<PathBuf>,
    },
}

/// Runs a parsed command line.
pub fn execute(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Run {
            spec,
            jobs,
            data_dir,
            out,
            smoke,
            force,
            rerun,
            yes,
            no_report,
            profile,
            shard,
        } => {
            let opts = RunOptions {
                shard: shard.as_deref().map(parse_shard).transpose()?,
                ..run_options(jobs, data_dir, out, smoke, force)
            };
            let how = Run {
                yes,
                profile,
                no_report,
                rerun: &rerun,
            };
            run(&Spec::load(&spec)?, &opts, &how)
        }
        Command::Report(args) => report_command(args),
        Command::Check(args) => check_command(args),
        Command::Compare {
            old,
            new,
            rev,
            metric,
            alpha,
            only,
            markdown,
            json,
            junit,
        } => compare(
            CompareArgs {
                old,
                new,
                rev,
                outputs: [markdown, json, junit],
            },
            &crate::compare::CompareOptions {
                metrics: metric,
                alpha,
                only,
            },
        ),
        Command::Status {
            spec: path,
            out,
            data_dir,
            smoke,
            shards,
        } => status(&path, &out, DataDir::resolve(data_dir), smoke, shards),
        Command::Slurm(args) => {
            let spec = Spec::load(&args.spec)?;
            let submit = args.submit;
            slurm(&spec, &args.options(&spec), submit)
        }
        other => execute_tool(other),
    }
}

/// `epsilab report`: one spec, every spec (`--all`), or the verdict gate (`--all --check`).
fn report_command(args: ReportArgs) -> Result<()> {
    let (out, style) = (&args.out, &args.style);
    let data_dir = DataDir::resolve(args.data_dir);
    match args.spec {
        Some(path) => report_spec(&path, out, args.smoke, style, &data_dir),
        None if args.check => report_check(&args.experiments, out, &data_dir),
        None => report_all(&args.experiments, out, style, &data_dir),
    }
}

/// `epsilab check`: the exact gate, then the speed gate (or the speed gate alone).
fn check_command(args: CheckArgs) -> Result<()> {
    let CheckArgs {
        experiments,
        data_dir,
        bless,
        reason,
        changes,
        only,
        no_speed,
        speed_only,
        bless_speed,
        record_speed,
    } = args;
    let speed = (!no_speed).then(|| crate::speed::SpeedOptions {
        bless: bless_speed,
        record: record_speed.map(|d| (d, crate::speed::current_commit())),
    });
    if speed_only {
        let exp = experiments.join(crate::check::EXPECTATIONS_DIR);
        return speed_gate(&exp, &speed.unwrap_or_default());
    }
    check(crate::check::CheckOptions {
        experiments,
        data_dir: DataDir::resolve(data_dir),
        bless: if bless { reason } else { None },
        changes,
        only,
        speed,
    })
}

/// The commands that run no spec: data, list, audit, accountant.
fn execute_tool(command: Command) -> Result<()> {
    match command {
        Command::Data { command } => data(command),
        Command::List {
            data_dir,
            experiments,
        } => list(&DataDir::resolve(data_dir), experiments.as_deref()),
        Command::Audit {
            mechanism,
            spec: Some(spec),
            pipeline,
            epsilon,
            x,
            x_prime,
            trials,
            seed,
            unseeded,
            json,
            ..
        } => {
            let _ = mechanism;
            let size = audit_size(trials.or(Some(PIPELINE_TRIALS)), seed, unseeded);
            let name = pipeline.unwrap_or_default();
            audit_pipeline(
                &Spec::load(&spec)?,
                &name,
                epsilon,
                (x.map(|c| c.0), x_prime.map(|c| c.0)),
                size,
                json,
            )
        }
        Command::Audit {
            mechanism,
            all,
            trials,
            seed,
            unseeded,
            json,
            ..
        } => {
            let (trials, seed) = audit_size(trials, seed, unseeded);
            audit(mechanism.as_deref(), all, (trials, seed), json)
        }
        Command::Accountant {
            noise_multiplier,
            epsilon,
            sampling_rate,
            steps,
            delta,
            dataset_size,
        } => {
            let delta = delta.unwrap_or_else(|| default_delta(dataset_size.unwrap_or(2) as usize));
            emit(&accountant(
                noise_multiplier,
                epsilon,
                sampling_rate,
                steps,
                delta,
            )?)
        }
        _ => unreachable!("spec commands are run by `execute`"),
    }
}

/// `epsilab run`'s options but its shard, with a progress bar on a terminal.
fn run_options(
    jobs: usize,
    data_dir: Option<PathBuf>,
    out: PathBuf,
    smoke: bool,
    force: bool,
) -> RunOptions {
    RunOptions {
        shard: None,
        threads: jobs,
        data_dir: DataDir::resolve(data_dir),
        out_dir: out,
        smoke,
        force,
        progress: std::io::stderr().is_terminal(),
    }
}

/// `epsilab run`: prepare (everything that can fail before a write), confirm a huge plan, run,
/// then report.
/// How `epsilab run` runs, beyond the [`RunOptions`] of the runner.
struct Run<'a> {
    yes: bool,
    profile: bool,
    no_report: bool,
    rerun: &'a [String],
}

fn run(spec: &Spec, opts: &RunOptions, how: &Run) -> Result<()> {
    let Run {
        yes,
        profile,
        no_report,
        rerun,
    } = *how;
    if profile {
        crate::profile::enable();
    }
    if !opts.force && rerun.is_empty() {
        let dir = results_dir(spec, &opts.out_dir, opts.smoke);
        if let Some(st) = crate::store::unfinished_staging(&dir)? {
            note!(
                "note: {} holds an unfinished forced recomputation ({} trials in {}{}): this run \
                 leaves it as it is and works on the previous results; `epsilab run {} --force` \
                 resumes it (or the same `--rerun`, if that started it)",
                dir.display(),
                st.records,
                crate::store::TRIALS_FILE,
                crate::store::STAGING,
                spec.path.display()
            );
        }
    }
    let prepared = crate::runner::prepare_rerun(spec, opts, rerun)?;
    if prepared.pending() > CONFIRM_CELLS && !yes {
        confirm(&prepared)?;
    }
    let s = prepared.execute();
    if profile {
        note_inline!("{}", crate::profile::table(&crate::profile::take()));
    }
    let s = s?;
    note!(
        "{}: {} trials ({} run, {} already stored) in {:.1} s -> {}",
        spec.experiment.name,
        s.total,
        s.ran,
        s.skipped,
        s.seconds,
        s.results_dir.display()
    );
    if !no_report {
        report(spec, &s.results_dir)?;
    }
    Ok(())
}

/// `epsilab slurm`: writes the array and report scripts, and submits them if asked.
fn slurm(spec: &Spec, opts: &crate::slurm::SlurmOptions, submit: bool) -> Result<()> {
    let scripts = crate::slurm::write_scripts(opts, &spec.experiment.name)?;
    let mut o = String::new();
    out!(
        o,
        "wrote {} and {}",
        scripts.array.display(),
        scripts.report.display()
    );
    if submit {
        let ids = crate::slurm::submit(&scripts, &opts.sbatch_args)?;
        out!(
            o,
            "submitted array job {} ({} tasks), report job {} (afterok:{})",
            ids.array,
            opts.tasks,
            ids.report,
            ids.array
        );
    } else {
        out!(
            o,
            "submit with: {}",
            crate::slurm::submit_command(&scripts, &opts.sbatch_args)
        );
    }
    emit(&o)
}

/// `epsilab status SPEC`: trials done and planned, per shard when sharded.
fn status(
    path: &Path,
    out: &Path,
    data_dir: DataDir,
    smoke: bool,
    shards: Option<usize>,
) -> Result<()> {
    let spec = Spec::load(path)?;
    let st = crate::status::status(&spec, &data_dir, out, smoke, shards)?;
    emit(&status_text(&spec, path, out, smoke, &st))
}

/// `epsilab report SPEC`: the report of one results folder, in the formats asked for. Refused,
/// as `run` refuses them, when the stored results are of another spec, data or program.
fn report_spec(
    path: &Path,
    out: &Path,
    smoke: bool,
    style: &ReportStyle,
    data_dir: &DataDir,
) -> Result<()> {
    let mut spec = Spec::load(path)?;
    let formats = style.apply(&mut spec)?;
    let dir = results_dir(&spec, out, smoke);
    let standing = crate::runner::standing(&spec, data_dir, &dir, smoke)?;
    if let Some(reason) = standing.stale {
        return Err(not_reported(&dir, &reason));
    }
    standing_notes(&spec, path, &standing);
    let records = report_formats(&spec, &dir, &formats, Some(path))?;
    let planned = crate::plan::plan(&spec, smoke).n_cells();
    if (records as u64) < planned {
        let smoke_flag = if smoke { " --smoke" } else { "" };
        note!(
            "note: {records} of {planned} planned trials are stored (incomplete): the report \
             shows those; `epsilab run {} --out {}{smoke_flag}` runs the rest",
            path.display(),
            out.display()
        );
    }
    Ok(())
}

/// The refusal of a report on results that `run` would refuse.
fn not_reported(dir: &Path, reason: &str) -> crate::Error {
    crate::Error::Store {
        path: dir.into(),
        reason: format!(
            "{reason}. Not reported: its tables would show trials of another spec or data"
        ),
    }
}

/// Warnings of what could not be checked, and of an unfinished forced run, on stderr.
fn standing_notes(spec: &Spec, path: &Path, st: &crate::runner::Standing) {
    for line in standing_lines(path, st) {
        note!("note: {}: {line}", spec.experiment.name);
    }
}

/// What [`crate::runner::Standing`] says beyond stale results: what could not be checked,
/// and an unfinished forced run.
fn standing_lines(path: &Path, st: &crate::runner::Standing) -> Vec<String> {
    let mut lines = Vec::new();
    for why in &st.unchecked_data {
        lines.push(format!(
            "the stored results could not be checked against the data of {why} (`--data-dir`)"
        ));
    }
    for p in &st.unchecked_programs {
        lines.push(format!(
            "the stored trials of [[pipeline]] `{p}` predate checksums of its program's files, \
             so a change to them cannot be detected; `epsilab run {} --rerun '{p}'` recomputes \
             them and records the checksums",
            path.display()
        ));
    }
    if let Some(staging) = &st.staging {
        let resume = if st.staging_resumes {
            format!(
                "`epsilab run {} --force` resumes it (or the same `--rerun`, if that started it)",
                path.display()
            )
        } else {
            format!(
                "it was of another version of the spec, data or program, so `epsilab run {} \
                 --force` starts it afresh",
                path.display()
            )
        };
        lines.push(format!(
            "a forced recomputation is unfinished ({} trials in {}{}); the stored results are \
             the previous ones, kept until it finishes; {resume}",
            staging.records,
            crate::store::TRIALS_FILE,
            crate::store::STAGING,
        ));
    }
    lines
}

/// Trials per side and seed of an audit: as given, or a fresh seed (printed for replay).
fn audit_size(trials: Option<usize>, seed: u64, unseeded: bool) -> (usize, u64) {
    if unseeded {
        let seed = fresh_seed();
        let trials = trials.unwrap_or(UNSEEDED_TRIALS);
        note!(
            "unseeded audit: seed {seed}, {trials} trials per side (replay: --trials {trials} --seed {seed})"
        );
        (trials, seed)
    } else {
        (trials.unwrap_or(SEEDED_TRIALS), seed)
    }
}

/// Asks on a terminal whether to run a plan above [`CONFIRM_CELLS`]; refuses without one.
fn confirm(p: &Prepared) -> Result<()> {
    let eta = crate::status::format_duration(p.estimate_seconds()?);
    let what = format!(
        "{} trials to run (of {} planned), about {eta}",
        p.pending(),
        p.total()
    );
    let refuse = |reason: &str| crate::Error::Confirm {
        what: what.clone(),
        reason: reason.into(),
        limit: CONFIRM_CELLS,
    };
    let stdin = std::io::stdin();
    if !(stdin.is_terminal() && std::io::stderr().is_terminal()) {
        return Err(refuse(
            "not a terminal, so nothing was asked; pass --yes to run it",
        ));
    }
    note_inline!("{what}. Run it? [y/N] ");
    let mut answer = String::new();
    stdin
        .read_line(&mut answer)
        .map_err(|e| crate::Error::io("stdin", e))?;
    if matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes") {
        Ok(())
    } else {
        Err(refuse("not confirmed"))
    }
}

/// Default runs per side of `epsilab audit`.
pub const SEEDED_TRIALS: usize = 100_000;
/// Default runs per side of `epsilab audit --spec`: each run may start a program.
pub const PIPELINE_TRIALS: usize = 1_000;
/// Default runs per side of `epsilab audit --unseeded`.
pub const UNSEEDED_TRIALS: usize = 1_000_000;

/// A seed from the OS generator mixed with the clock.
fn fresh_seed() -> u64 {
    use rand::Rng as _;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    rand::thread_rng().r#gen::<u64>() ^ nanos
}

/// `size` is (trials per side, seed), from [`audit_size`].
fn audit(mechanism: Option<&str>, all: bool, size: (usize, u64), json: bool) -> Result<()> {
    let (trials, seed) = size;
    let results = match mechanism {
        Some(name) => vec![crate::audit::audit_named(name, trials, seed)?],
        None if all => crate::audit::audit_all(trials, seed)?,
        None => {
            let names: Vec<String> = crate::audit::all()
                .iter()
                .map(|m| m.claim().name.to_string())
                .collect();
            return Err(crate::Error::param(
                "mechanism",
                format!(
                    "give --mechanism NAME or --all; mechanisms: {}",
                    names.join(", ")
                ),
            ));
        }
    };
    audit_report(
        &results,
        json,
        "a correct mechanism exceeded its claim or a mutant was not caught",
    )
}

/// `epsilab audit --spec`: one release or learner pipeline at `epsilon` on the given neighbours (or the
/// default ones), beside the ε its ledger declares.
fn audit_pipeline(
    spec: &Spec,
    name: &str,
    epsilon: f64,
    neighbours: (Option<Vec<f64>>, Option<Vec<f64>>),
    size: (usize, u64),
    json: bool,
) -> Result<()> {
    use crate::audit::pipeline::PipelineAudit;
    let m = PipelineAudit::new(spec, name, epsilon, neighbours)?;
    let result = crate::audit::audit(&m, size.0, size.1)?;
    if let Some(e) = m.failure() {
        return Err(e.in_cell(name, "audit"));
    }
    audit_report(
        &[result],
        json,
        "the pipeline exceeded the ε its ledger declares",
    )
}

/// Prints the audit's results (a table or JSON); an error when any row is not ok.
fn audit_report(results: &[crate::audit::AuditResult], json: bool, failed: &str) -> Result<()> {
    if json {
        let s = serde_json::to_string_pretty(&results)
            .map_err(|e| crate::Error::param("json", e.to_string()))?;
        emit(&format!("{s}\n"))?;
    } else {
        emit(&crate::audit::table(results))?;
    }
    if results.iter().any(|r| !r.ok) {
        return Err(crate::Error::param("audit", failed));
    }
    Ok(())
}

fn report(spec: &Spec, dir: &Path) -> Result<()> {
    report_formats(spec, dir, &crate::report::formats_of(spec), None).map(|_| ())
}

/// Writes the report of `dir`; returns how many records it read.
fn report_formats(
    spec: &Spec,
    dir: &Path,
    formats: &[crate::spec::Format],
    path: Option<&Path>,
) -> Result<usize> {
    let w = crate::report::write_formats(spec, dir, formats, path)?;
    for f in &w.files {
        note!("  wrote {}", f.display());
    }
    for (field, m) in &w.unrecorded {
        let empty = match *field {
            "report.histograms" => "its histogram is",
            _ => "its table and figure are",
        };
        note!(
            "warning: {}: field `{field}`: no trial records `{m}`, so {empty} empty \
             (test_accuracy, train_accuracy, or a metric in the records' `metrics`)",
            spec.path.display()
        );
    }
    Ok(w.records)
}

fn check(opts: crate::check::CheckOptions) -> Result<()> {
    let r = crate::check::check(&opts)?;
    for f in &r.failures {
        note!("FAIL {f}");
    }
    if let Some(s) = &r.speed {
        speed_lines(s);
    }
    if !r.blessed.is_empty() {
        note!(
            "check: blessed {}; entry added to {}",
            r.blessed.join(", "),
            opts.changes.display()
        );
    }
    let what = if opts.bless.is_some() {
        "blessed where moved"
    } else {
        "compared exactly"
    };
    note!(
        "check: {} specs, {} trial records {what}, {} moved cells ({:.1} s of smoke runs)",
        r.specs,
        r.records,
        r.moved_cells,
        r.smoke_seconds
    );
    gate_result(r.failures.len())
}

fn speed_lines(s: &crate::speed::SpeedReport) {
    for (name, m, stored) in &s.ratios {
        let st = stored.map_or("none".into(), |x| format!("{x:.3}x"));
        note!("speed: {name} {m:.3}x the reference workload (stored {st})");
    }
}

fn speed_gate(exp_dir: &Path, opts: &crate::speed::SpeedOptions) -> Result<()> {
    let s = crate::speed::gate(exp_dir, opts)?;
    for f in &s.failures {
        note!("FAIL {f}");
    }
    speed_lines(&s);
    gate_result(s.failures.len())
}

fn gate_result(failures: usize) -> Result<()> {
    if failures == 0 {
        Ok(())
    } else {
        Err(crate::error::Error::Check(format!(
            "{failures} regression(s); see FAIL lines above"
        )))
    }
}

struct CompareArgs {
    old: Option<PathBuf>,
    new: Option<PathBuf>,
    rev: Option<String>,
    /// Markdown, JSON, JUnit.
    outputs: [Option<PathBuf>; 3],
}

fn compare(a: CompareArgs, opts: &crate::compare::CompareOptions) -> Result<()> {
    use crate::compare as c;
    let tmp = tempfile::tempdir().map_err(|e| crate::Error::io(std::env::temp_dir(), e))?;
    let (old, new) = match (&a.rev, a.old, a.new) {
        (Some(rev), n, None) => {
            let new = n.unwrap_or_else(|| PathBuf::from("results"));
            (c::extract_revision(rev, &new, tmp.path())?, new)
        }
        (None, Some(o), Some(n)) => (o, n),
        _ => {
            return Err(crate::Error::Compare(
                "give OLD and NEW folders, or --rev REV [NEW]".into(),
            ));
        }
    };
    let (old_results, new_results) = (c::load_results(&old)?, c::load_results(&new)?);
    if let Some(o) =
        (opts.only.iter()).find(|o| !old_results.contains_key(*o) && !new_results.contains_key(*o))
    {
        return Err(crate::Error::param(
            "only",
            format!(
                "neither {} nor {} holds results of an experiment named `{o}`",
                old.display(),
                new.display()
            ),
        ));
    }
    c::check_options(&old_results, &new_results, opts)?;
    let cmp = c::compare(&old_results, &new_results, opts);
    let json = serde_json::to_string_pretty(&cmp).expect("json") + "\n";
    let texts = [c::markdown(&cmp), json, c::junit(&cmp)];
    for (path, text) in a.outputs.iter().zip(&texts) {
        if let Some(p) = path {
            std::fs::write(p, text).map_err(|e| crate::Error::io(p, e))?;
        }
    }
    for f in cmp.flagged() {
        note!(
            "FLAGGED {}: `{}` {}: {:.4} -> {:.4} ({:+.4}; p = {:.2e} t, {:.2e} Wilcoxon, Holm)",
            f.experiment,
            f.cell,
            f.metric,
            f.mean_old,
            f.mean_new,
            f.mean_diff,
            f.p_t_holm,
            f.p_wilcoxon_holm
        );
    }
    let mdd: Vec<f64> = cmp.cells.iter().filter_map(|x| x.min_detectable).collect();
    let med = if mdd.is_empty() {
        f64::NAN
    } else {
        crate::speed::median(&mut mdd.clone())
    };
    note!(
        "compare: {} cells paired, {} flagged at family-wise alpha = {}; {} unpaired; median minimal detectable difference {med:.4}{}",
        cmp.cells.len(),
        cmp.flagged().count(),
        opts.alpha,
        cmp.unpaired.len(),
        if a.outputs[0].is_none() {
            " (per cell: --markdown or --json)"
        } else {
            ""
        }
    );
    match cmp.flagged().count() {
        0 => Ok(()),
        n => Err(crate::Error::Compare(format!(
            "{n} cell(s) flagged; see FLAGGED lines above"
        ))),
    }
}

fn status_text(
    spec: &Spec,
    path: &Path,
    out: &Path,
    smoke: bool,
    st: &crate::status::Status,
) -> String {
    let smoke_flag = if smoke { " --smoke" } else { "" };
    let cmd = |shard: Option<Shard>| {
        let s = shard.map_or(String::new(), |s| format!(" --shard {s}"));
        format!(
            "epsilab run {} --out {}{smoke_flag}{s}",
            path.display(),
            out.display()
        )
    };
    let state = |done: u64, planned: u64| {
        if done >= planned {
            "complete"
        } else {
            "incomplete"
        }
    };
    let mut o = String::new();
    if let Some(reason) = &st.standing.stale {
        // Not "complete": `run` would refuse these results, and `report` does.
        out!(
            o,
            "{}: stored results are not of this spec as it is now (stale, not done): {}: {reason}",
            spec.experiment.name,
            st.results_dir.display()
        );
        out!(o, "  replace them with: {} --force", cmd(None));
        for line in standing_lines(path, &st.standing) {
            out!(o, "  {line}");
        }
        return o;
    }
    let unfinished = if st.standing.staging.is_some() {
        "; a forced recomputation is unfinished"
    } else {
        ""
    };
    out!(
        o,
        "{}: {} / {} trials done ({}{unfinished}) in {}",
        spec.experiment.name,
        st.done,
        st.planned,
        state(st.done, st.planned),
        st.results_dir.display()
    );
    for line in standing_lines(path, &st.standing) {
        out!(o, "  {line}");
    }
    match &st.shards {
        Some(shards) => {
            for (s, done, planned) in shards {
                let finish = if done < planned {
                    format!("  -> {}", cmd(Some(*s)))
                } else {
                    String::new()
                };
                out!(
                    o,
                    "  shard {s}: {done} / {planned} ({}){finish}",
                    state(*done, *planned)
                );
            }
        }
        None if st.done < st.planned => out!(o, "  finish with: {}", cmd(None)),
        None => {}
    }
    o
}

/// Rebuilds every experiment's report that has results, then REPORT.md and index.html. Writes
/// nothing when any experiment's stored results are of another spec, data or program (as
/// `run` would refuse them), naming each.
fn report_all(
    experiments: &Path,
    out: &Path,
    style: &ReportStyle,
    data_dir: &DataDir,
) -> Result<()> {
    let mut specs = Vec::new();
    let mut stale = Vec::new();
    for p in crate::report::reproduction::spec_files(experiments)? {
        let mut spec = Spec::load(&p)?;
        let formats = style.apply(&mut spec)?;
        let dir = results_dir(&spec, out, false);
        if crate::store::record_files(&dir)?.is_empty() {
            continue;
        }
        let standing = crate::runner::standing(&spec, data_dir, &dir, false)?;
        match standing.stale {
            Some(reason) => stale.push(format!("{}: {reason}", dir.display())),
            None => {
                standing_notes(&spec, &p, &standing);
                specs.push((p, spec, formats, dir));
            }
        }
    }
    if !stale.is_empty() {
        return Err(crate::Error::Store {
            path: out.into(),
            reason: format!(
                "{} experiment(s) hold results of another spec or data, so nothing was reported \
                 (REPORT.md would show them): {}",
                stale.len(),
                stale.join("; ")
            ),
        });
    }
    for (p, spec, formats, dir) in &specs {
        report_formats(spec, dir, formats, Some(p))?;
    }
    for f in crate::report::reproduction::write_all(experiments, out)? {
        note!("  wrote {}", f.display());
    }
    Ok(())
}

/// The verdict gate: the committed report against one rebuilt from the committed trials.
fn report_check(experiments: &Path, out: &Path, data_dir: &DataDir) -> Result<()> {
    let failures = crate::report::stale::check(experiments, out, data_dir)?;
    for f in &failures {
        note!("FAIL {f}");
    }
    note!(
        "report --check: {} differing lines in {} (REPORT.md and the experiments' tables)",
        failures.len(),
        out.display()
    );
    gate_result(failures.len())
}

fn data(command: DataCommand) -> Result<()> {
    match command {
        DataCommand::Fetch {
            source,
            sha256,
            cache,
        } => data_fetch(&source, sha256.as_deref(), cache),
    }
}

fn data_fetch(source: &str, sha256: Option<&str>, cache: Option<PathBuf>) -> Result<()> {
    let cache = cache
        .or_else(crate::data::fetch::default_cache)
        .ok_or_else(|| {
            crate::Error::param(
                "--cache",
                "no cache folder: HOME, XDG_CACHE_HOME and EPSILAB_CACHE are unset; give --cache DIR",
            )
        })?;
    let catalog = crate::data::Catalog::builtin();
    for f in crate::data::fetch::fetch(source, sha256, &cache, &catalog)? {
        let how = if f.cached {
            "already cached"
        } else {
            "downloaded"
        };
        emit(&format!(
            "{how}: {} ({} bytes, SHA-256 verified) <- {}\n",
            f.path.display(),
            f.bytes,
            f.url
        ))?;
    }
    Ok(())
}

/// `epsilab list`'s datasets: the built-in catalog's (whether their files are found) and the
/// sources a spec may define its own from.
fn list_datasets(o: &mut String, dir: &DataDir) {
    let catalog = crate::data::Catalog::builtin();
    out!(o, "Datasets (data directory: {}):", dir.0.display());
    for name in catalog.names() {
        let (title, file, what) = match catalog.get(name) {
            Some(DatasetDef::Libsvm(d)) => (&d.title, &d.train, format!("D = {:<4}", d.dimension)),
            Some(DatasetDef::CsvColumn(d)) => (
                &d.title,
                &d.file,
                "scalar column (release and attack pipelines) ".to_string(),
            ),
            Some(DatasetDef::Csv(d)) => (&d.title, &d.train, csv_what(d)),
            _ => continue,
        };
        let found = crate::data::files::locate(&dir.0.join(file)).is_some();
        out!(
            o,
            "  {name:<12} {:<12} {what} {}",
            title.as_deref().unwrap_or(name),
            if found { "found" } else { "files not found" }
        );
    }
    out!(
        o,
        "  file sources for [dataset.NAME]: libsvm, csv (docs/data.md: \"Your own dataset\")"
    );
    out!(
        o,
        "  synthetic sources for [dataset.NAME]: toy_gaussian, logistic_ball, nb_sampled, nb_proxy, gaussian_mixture"
    );
    out!(
        o,
        "  scalar sources (release and attack pipelines): uniform, beta, contaminated, student_t, table_i, csv_column, none"
    );
}

/// What `epsilab list` says of a catalog CSV dataset: real-valued features in public bounds,
/// with classes or a regression target.
fn csv_what(d: &crate::data::catalog::CsvDef) -> String {
    let task = if d.target_bounds.is_some() {
        "regression target".to_string()
    } else {
        format!("{} classes", d.classes.len())
    };
    format!("real-valued, public bounds, {task}")
}

/// `epsilab list`. Run outside a checkout (no `experiments/` with specs) it lists the kinds
/// and datasets alone; a folder given with `--experiments` must hold specs.
fn list(dir: &DataDir, experiments: Option<&Path>) -> Result<()> {
    let default = Path::new("experiments");
    let (experiments, specs) = match experiments {
        Some(e) => (e, crate::report::reproduction::spec_files(e)?),
        None => (
            default,
            crate::report::reproduction::spec_files(default).unwrap_or_default(),
        ),
    };
    let mut o = String::new();
    list_datasets(&mut o, dir);
    out!(
        o,
        "
Learners:"
    );
    for l in crate::kinds::LEARNERS {
        out!(o, "  {:<15} {}", l.name, l.about);
    }
    out!(o, "\nFeature selectors (pipeline `selection`):");
    for s in crate::kinds::SELECTORS {
        out!(o, "  {:<15} {}", s.name, s.about);
    }
    out!(
        o,
        "\nAblation variants (pipeline `variant`, one named deviation from SPEC each):"
    );
    for v in crate::kinds::variant::VARIANTS {
        let label = match v.excess.label() {
            "" => String::new(),
            l => format!(" [{l}]"),
        };
        out!(o, "  {:<15} {:<13} {}{label}", v.kind, v.name, v.about);
    }
    out!(
        o,
        "\nAnalysis probes (pipeline `probe`, for figures that are not accuracies):"
    );
    for p in crate::analysis::PROBES {
        out!(o, "  {:<17} {}", p.name, p.about);
    }
    out!(
        o,
        "\nReleases (pipeline `release`, on a scalar source; records release, truth, abs_error):"
    );
    for r in crate::kinds::RELEASES {
        out!(o, "  {:<18} {}", r.name, r.about);
    }
    out!(o, "\nAttacks (pipeline `attack`; records success):");
    for r in crate::kinds::ATTACKS {
        out!(o, "  {:<18} {}", r.name, r.about);
    }
    out!(o, "\nSpecs in {}:", experiments.display());
    for p in specs {
        match Spec::load(&p) {
            Ok(s) => out!(o, "  {:<28} {}", p.display(), s.title()),
            Err(e) => out!(o, "  {:<28} INVALID: {e}", p.display()),
        }
    }
    emit(&o)
}

fn parse_positive(s: &str) -> std::result::Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        Ok(v) => Err(format!("must be finite and > 0, got {v}")),
        Err(e) => Err(e.to_string()),
    }
}

/// A column of `audit --x`/`--x-prime`: comma-separated finite values, or none.
#[derive(Debug, Clone, PartialEq)]
pub struct Column(pub Vec<f64>);

fn parse_column(s: &str) -> std::result::Result<Column, String> {
    if s.trim().is_empty() {
        return Ok(Column(Vec::new()));
    }
    // Hyphens are allowed for negative values, so a flag after a bare `--x` lands here.
    if s.starts_with("--") {
        return Err(format!(
            "`{s}` is a flag, not a value: give the values, or end the flag with `=` (`--x=`) for \
             the empty column"
        ));
    }
    s.split(',')
        .map(|v| match v.trim().parse::<f64>() {
            Ok(x) if x.is_finite() => Ok(x),
            _ => Err(format!(
                "`{v}` is not a finite number (values are comma-separated)"
            )),
        })
        .collect::<std::result::Result<_, _>>()
        .map(Column)
}

fn parse_steps(s: &str) -> std::result::Result<u64, String> {
    match s.parse::<u64>() {
        Ok(v) if v >= 1 => Ok(v),
        _ => Err(format!("must be a whole number >= 1, got {s}")),
    }
}

fn parse_dataset_size(s: &str) -> std::result::Result<u64, String> {
    match s.parse::<u64>() {
        Ok(v) if v >= 2 => Ok(v),
        _ => Err(format!("must be a whole number >= 2, got {s}")),
    }
}

fn parse_sampling_rate(s: &str) -> std::result::Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v > 0.0 && v <= 1.0 => Ok(v),
        Ok(v) => Err(format!("must be in (0, 1], got {v}")),
        Err(e) => Err(e.to_string()),
    }
}

fn parse_delta(s: &str) -> std::result::Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v > 0.0 && v < 1.0 => Ok(v),
        Ok(v) => Err(format!("must be in (0, 1), got {v}")),
        Err(e) => Err(e.to_string()),
    }
}

/// `epsilab accountant`: ε of a plan, or the noise multiplier for a target ε.
/// `--shard I/N`, or `env` for the array job's environment (Slurm, Kubernetes, ...).
fn parse_shard(arg: &str) -> Result<Shard> {
    match arg {
        "env" => Shard::from_env(),
        s => s.parse::<Shard>(),
    }
}

fn accountant(
    noise_multiplier: Option<f64>,
    target: Option<f64>,
    q: f64,
    steps: u64,
    delta: f64,
) -> Result<String> {
    use crate::privacy::accountant::{SubsampledGaussian, noise_multiplier_for};
    let mut o = String::new();
    let (sigma, g) = match (noise_multiplier, target) {
        (Some(sigma), _) => (
            sigma,
            SubsampledGaussian::new(sigma, q, steps)?.epsilon(delta)?,
        ),
        (None, Some(eps)) => {
            let (sigma, g) = noise_multiplier_for(eps, q, steps, delta)?;
            out!(o, "noise multiplier: {sigma:.6}");
            (sigma, g)
        }
        (None, None) => {
            return Err(crate::Error::param(
                "--noise-multiplier",
                "give --noise-multiplier or --epsilon",
            ));
        }
    };
    out!(o, "epsilon: {:.6}", g.epsilon);
    out!(o, "delta: {delta:e}");
    out!(o, "order: {}", g.order);
    out!(
        o,
        "plan: noise multiplier {sigma:.6}, sampling rate {q}, {steps} steps; Poisson-subsampled Gaussian, add/remove neighbours, RDP (dp-accounting's orders) -> (epsilon, delta) by Balle et al. 2020"
    );
    Ok(o)
}

/// Writes to stdout; a closed pipe (`epsilab list | head -1`) ends the output quietly.
pub fn emit(text: &str) -> Result<()> {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(crate::Error::io("stdout", e)),
        _ => Ok(()),
    }
}
