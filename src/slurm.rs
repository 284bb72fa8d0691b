//! `epsilab slurm`: a spec as a Slurm job array (one shard per task) plus a report job that runs
//! once every task has succeeded (`--dependency=afterok`). Slurm does the scheduling; epsilab only
//! writes the two batch scripts and, with `--submit`, hands them to `sbatch`.

use crate::error::{Error, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// What the array and its report job look like.
#[derive(Debug, Clone)]
pub struct SlurmOptions {
    /// The spec, as given on the command line.
    pub spec: PathBuf,
    /// Array tasks = shards.
    pub tasks: usize,
    pub partition: Option<String>,
    /// Wall-time limit of each task (`--time`, e.g. `01:00:00`).
    pub time: Option<String>,
    pub cpus_per_task: usize,
    /// Results root (`run --out`).
    pub out: PathBuf,
    pub data_dir: Option<PathBuf>,
    /// Where the scripts and the task logs go.
    pub script_dir: PathBuf,
    /// Extra arguments for every `sbatch` call (account, QoS, memory, `--hold`, ...).
    pub sbatch_args: Vec<String>,
}

/// The written scripts.
#[derive(Debug, Clone)]
pub struct Scripts {
    pub array: PathBuf,
    pub report: PathBuf,
}

/// Job ids of a submission.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Submitted {
    pub array: String,
    pub report: String,
}

/// Absolute form of a path (relative to the current directory), without touching the filesystem
/// beyond reading the current directory: tasks may start anywhere on the cluster.
fn absolute(p: &Path) -> Result<PathBuf> {
    std::path::absolute(p).map_err(|e| Error::io(p, e))
}

/// Quotes a word for a POSIX shell.
fn sh(p: &Path) -> String {
    let s = p.to_string_lossy();
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// Whether sbatch reads `t` as a time limit: minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM or
/// D-HH:MM:SS (every field digits), or INFINITE/UNLIMITED. Checked here: sbatch would refuse
/// a malformed one only when the scripts are submitted, perhaps long after they were written.
fn is_time_limit(t: &str) -> bool {
    if t.eq_ignore_ascii_case("infinite") || t.eq_ignore_ascii_case("unlimited") {
        return true;
    }
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let (days, clock) = t.split_once('-').map_or((None, t), |(d, c)| (Some(d), c));
    let fields: Vec<&str> = clock.split(':').collect();
    days.is_none_or(digits) && fields.len() <= 3 && fields.into_iter().all(digits)
}

/// Writes `array.sbatch` and `report.sbatch` into `opts.script_dir`.
pub fn write_scripts(opts: &SlurmOptions, experiment: &str) -> Result<Scripts> {
    if opts.tasks == 0 {
        return Err(Error::param("tasks", "an array needs at least one task"));
    }
    if opts.cpus_per_task == 0 {
        return Err(Error::param("cpus-per-task", "must be at least 1"));
    }
    if let Some(t) = opts.time.as_deref().filter(|t| !is_time_limit(t)) {
        return Err(Error::param(
            "time",
            format!(
                "`{t}` is not a Slurm time limit: give minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM \
                 or D-HH:MM:SS (e.g. 90, 02:00:00, 1-12), or UNLIMITED"
            ),
        ));
    }
    let exe = std::env::current_exe().map_err(|e| Error::io("epsilab executable", e))?;
    let cwd = std::env::current_dir().map_err(|e| Error::io(".", e))?;
    let spec = absolute(&opts.spec)?;
    let out = absolute(&opts.out)?;
    let dir = absolute(&opts.script_dir)?;
    std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    let data = opts
        .data_dir
        .as_deref()
        .map(|d| absolute(d).map(|d| format!(" --data-dir {}", sh(&d))))
        .transpose()?
        .unwrap_or_default();

    let mut head = format!("#!/bin/bash\n#SBATCH --job-name=epsilab-{experiment}\n");
    if let Some(p) = &opts.partition {
        head += &format!("#SBATCH --partition={p}\n");
    }
    if let Some(t) = &opts.time {
        head += &format!("#SBATCH --time={t}\n");
    }
    let array = format!(
        "{head}#SBATCH --array=0-{last}\n#SBATCH --cpus-per-task={cpus}\n\
         #SBATCH --output={log}\n\
         # One shard of the spec per task; the shard comes from SLURM_ARRAY_TASK_ID/COUNT.\n\
         set -euo pipefail\ncd {cwd}\n\
         exec {exe} run {spec} --out {out}{data} --shard env --no-report -j \"${{SLURM_CPUS_PER_TASK:-1}}\"\n",
        last = opts.tasks - 1,
        cpus = opts.cpus_per_task,
        log = dir.join("task-%A_%a.out").display(),
        cwd = sh(&cwd),
        exe = sh(&exe),
        spec = sh(&spec),
        out = sh(&out),
    );
    let report = format!(
        "{head}#SBATCH --cpus-per-task=1\n#SBATCH --output={log}\n\
         # Runs after every array task succeeded (submitted with --dependency=afterok).\n\
         set -euo pipefail\ncd {cwd}\nexec {exe} report {spec} --out {out}{data}\n",
        log = dir.join("report-%j.out").display(),
        cwd = sh(&cwd),
        exe = sh(&exe),
        spec = sh(&spec),
        out = sh(&out),
    );
    let scripts = Scripts {
        array: dir.join("array.sbatch"),
        report: dir.join("report.sbatch"),
    };
    for (path, text) in [(&scripts.array, array), (&scripts.report, report)] {
        std::fs::write(path, text).map_err(|e| Error::io(path, e))?;
    }
    Ok(scripts)
}

/// The shell command that submits as [`submit`] does, `sbatch_args` included, for a user who
/// submits by hand.
pub fn submit_command(scripts: &Scripts, sbatch_args: &[String]) -> String {
    let args: String = sbatch_args
        .iter()
        .map(|a| format!(" {}", sh(Path::new(a))))
        .collect();
    format!(
        "jid=$(sbatch --parsable{args} {}) && sbatch{args} --dependency=afterok:$jid {}",
        sh(&scripts.array),
        sh(&scripts.report)
    )
}

/// Submits the array, then the report job depending on it; returns both job ids.
pub fn submit(scripts: &Scripts, sbatch_args: &[String]) -> Result<Submitted> {
    let array = sbatch(sbatch_args, &[], &scripts.array)?;
    let dep = format!("--dependency=afterok:{array}");
    let report = sbatch(sbatch_args, &[dep], &scripts.report)?;
    Ok(Submitted { array, report })
}

fn sbatch(common: &[String], extra: &[String], script: &Path) -> Result<String> {
    let out = Command::new("sbatch")
        .arg("--parsable")
        .args(common)
        .args(extra)
        .arg(script)
        .output()
        .map_err(|e| {
            Error::param(
                "slurm",
                format!("cannot start sbatch ({e}); is Slurm installed and on PATH?"),
            )
        })?;
    if !out.status.success() {
        return Err(Error::param(
            "slurm",
            format!(
                "sbatch {} failed: {}",
                script.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        ));
    }
    parse_job_id(&String::from_utf8_lossy(&out.stdout))
}

/// `sbatch --parsable` prints `JOBID` or `JOBID;CLUSTER`.
pub fn parse_job_id(stdout: &str) -> Result<String> {
    let id = stdout.trim().split(';').next().unwrap_or("").trim();
    if !id.is_empty() && id.chars().all(|c| c.is_ascii_digit()) {
        Ok(id.to_string())
    } else {
        Err(Error::param(
            "slurm",
            format!("sbatch printed no job id: `{}`", stdout.trim()),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_ids() {
        assert_eq!(parse_job_id("1234\n").unwrap(), "1234");
        assert_eq!(parse_job_id("77;cluster\n").unwrap(), "77");
        assert!(parse_job_id("Submitted batch job 5").is_err());
    }

    #[test]
    fn scripts_run_every_shard_and_then_the_report() {
        let tmp = tempfile::tempdir().unwrap();
        let opts = SlurmOptions {
            spec: PathBuf::from("experiments/quick start.toml"),
            tasks: 4,
            partition: Some("debug".into()),
            time: Some("00:30:00".into()),
            cpus_per_task: 2,
            out: PathBuf::from("results"),
            data_dir: None,
            script_dir: tmp.path().join("slurm"),
            sbatch_args: vec![],
        };
        let s = write_scripts(&opts, "quickstart").unwrap();
        let array = std::fs::read_to_string(&s.array).unwrap();
        assert!(array.contains("#SBATCH --array=0-3\n"), "{array}");
        assert!(array.contains("#SBATCH --cpus-per-task=2\n"));
        assert!(array.contains("#SBATCH --partition=debug\n"));
        assert!(array.contains("#SBATCH --time=00:30:00\n"));
        assert!(array.contains("--shard env --no-report -j \"${SLURM_CPUS_PER_TASK:-1}\""));
        assert!(
            array.contains("quick start.toml'"),
            "paths are quoted: {array}"
        );
        let report = std::fs::read_to_string(&s.report).unwrap();
        assert!(report.contains(" report '"), "{report}");
        assert!(!report.contains("--array"));
        let args = ["--account=lab x".to_string(), "--mem=4G".to_string()];
        let command = submit_command(&s, &args);
        for part in [
            "sbatch --parsable '--account=lab x' '--mem=4G' '",
            "sbatch '--account=lab x' '--mem=4G' --dependency=afterok:$jid '",
        ] {
            assert!(command.contains(part), "{part} in {command}");
        }
        let bad = SlurmOptions { tasks: 0, ..opts };
        assert!(write_scripts(&bad, "q").is_err());
    }
}
