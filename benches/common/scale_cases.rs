//! The parameters `benches/scale.rs` runs each registered kind with (issue 52), keyed by kind
//! name, and the check that every learner, release and attack of the default registry has at
//! least one (`#[path = "common/scale_cases.rs"] mod scale_cases;`).
//!
//! Each case is a pipeline table (its fields as a spec writes them, taken from the kind's own
//! experiments where one exists) and the synthetic data it runs on. A kind added to the
//! registry without a case here stops the bench before it times anything, naming the kind.

/// The spec key a family's pipelines name their kind with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    Learner,
    Release,
    Attack,
}

impl Family {
    pub fn key(self) -> &'static str {
        match self {
            Family::Learner => "learner",
            Family::Release => "release",
            Family::Attack => "attack",
        }
    }
}

/// The synthetic data of n training rows a case runs on (test rows, where the source has
/// them: n / 4, so evaluation grows with n too).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Data {
    /// `nb_sampled`, D = 20 binary features, θ = (0.8, 0.5).
    Binary,
    /// `logistic_ball`, D = 10 (‖x‖ ≤ 1, two classes).
    Ball,
    /// `gaussian_mixture`, D = 10, two components: real features with public bounds [-1, 1].
    TwoClasses,
    /// `gaussian_mixture`, D = 8, four components (k-means, PCA).
    Mixture,
    /// A CSV written by the bench: target y = w·x + noise in [-1, 1], four features in
    /// [-1, 1] (`target_bounds`, 80/20 split).
    Regression,
    /// `uniform` on [0, 1], n values (every row is a training row).
    Column,
    /// A `csv_column` of n seeded fair 0/1 values written by the bench.
    Bits,
}

impl Data {
    pub fn describe(self) -> &'static str {
        match self {
            Data::Binary => "nb_sampled D=20",
            Data::Ball => "logistic_ball D=10",
            Data::TwoClasses => "mixture D=10 k=2",
            Data::Mixture => "mixture D=8 k=4",
            Data::Regression => "csv regression D=4",
            Data::Column => "uniform column",
            Data::Bits => "0/1 column",
        }
    }
}

/// How a kind is run: as `Setup` says, or not at all, for the reason given.
#[derive(Debug, Clone, Copy)]
pub enum Run {
    On(Setup),
    // No kind needs it today; it is how one that cannot run here is listed with its reason.
    #[allow(dead_code)]
    Not(&'static str),
}

/// A runnable case: its data and pipeline fields.
#[derive(Debug, Clone, Copy)]
pub struct Setup {
    pub data: Data,
    /// The pipeline's fields besides `name` and the kind, as TOML lines.
    pub fields: &'static str,
    /// Whether the experiment runs under replace-one neighbours (kinds proven only there).
    pub replace_one: bool,
    /// The largest n it is timed at (`usize::MAX`: every n the bench times).
    pub largest: usize,
}

#[derive(Debug, Clone, Copy)]
pub struct Case {
    pub family: Family,
    pub kind: &'static str,
    pub run: Run,
}

/// The bench's largest n by default (`EPSILAB_SCALE_MAX_LOG2` raises it, but not for cases
/// capped at it with `up_to`: those costly at 2^18 already).
pub const LARGEST: usize = 1 << 18;

const fn on(family: Family, kind: &'static str, data: Data, fields: &'static str) -> Case {
    Case {
        family,
        kind,
        run: Run::On(Setup {
            data,
            fields,
            replace_one: false,
            largest: usize::MAX,
        }),
    }
}

const fn learner(kind: &'static str, data: Data, fields: &'static str) -> Case {
    on(Family::Learner, kind, data, fields)
}

const fn release(kind: &'static str, data: Data, fields: &'static str) -> Case {
    on(Family::Release, kind, data, fields)
}

const fn attack(kind: &'static str, data: Data, fields: &'static str) -> Case {
    on(Family::Attack, kind, data, fields)
}

impl Case {
    /// The same case under replace-one neighbours.
    const fn replace_one(mut self) -> Case {
        if let Run::On(s) = &mut self.run {
            s.replace_one = true;
        }
        self
    }

    /// The same case timed up to n = `largest` only.
    const fn up_to(mut self, largest: usize) -> Case {
        if let Run::On(s) = &mut self.run {
            s.largest = largest;
        }
        self
    }
}

/// svm_rff_epsilon.toml's random Fourier features and Λ.
const RFF: &str = "gamma = 1\ncomponents = 200\nlambda = { per_example = 0.01 }";

/// The shipped diffprivlib examples as external kinds (examples/external/, by absolute path:
/// the bench's specs live in a temporary folder). Both refuse all but replace-one neighbours.
const EXTERNAL_LEARNER: &str = concat!(
    "command = [\"python3\", '",
    env!("CARGO_MANIFEST_DIR"),
    "/examples/external/diffprivlib_learner.py']\n",
    "params = { model = \"gaussian_nb\" }\ntimeout_s = 600"
);
const EXTERNAL_RELEASE: &str = concat!(
    "command = [\"python3\", '",
    env!("CARGO_MANIFEST_DIR"),
    "/examples/external/diffprivlib_release.py']\n",
    "params = { query = \"mean\" }\nbounds = [0.0, 1.0]\ntruth = \"mean\"\ntimeout_s = 600"
);

/// Every case, in registry order within each family. A kind may have several (one per query).
pub const CASES: &[Case] = &[
    learner("majority", Data::Binary, ""),
    learner("nb", Data::Binary, ""),
    learner("private_nb", Data::Binary, ""),
    learner("partitioned_nb", Data::Binary, ""),
    learner("lr", Data::Ball, "lambda = 1"),
    learner("lr_output", Data::Ball, "lambda = 1"),
    learner("lr_objective", Data::Ball, "lambda = 1"),
    learner("lr_functional", Data::Ball, ""),
    learner("vaidya_nb", Data::Binary, ""),
    // The ERM specs' fixed lambda = 10 (erm_dimension), and lambda = N Lambda (a problem as well
    // conditioned at every n), to tell solver iterations from the cost of each.
    learner("svm", Data::Ball, "lambda = 10"),
    learner("svm", Data::Ball, "lambda = { per_example = 0.001 }"),
    learner("svm_output", Data::Ball, "lambda = 10"),
    learner("svm_objective", Data::Ball, "lambda = 10"),
    learner(
        "noisy_gd",
        Data::Ball,
        "lambda = 10\nlearning_rate = 4\ndelta = 1e-15",
    ),
    learner(
        "dp_sgd",
        Data::Ball,
        "lambda = 10\nlearning_rate = 4\ndelta = 1e-15",
    ),
    learner("input_perturbation", Data::Ball, "lambda = 10").replace_one(),
    learner(
        "averaged",
        Data::Ball,
        "method = \"output\"\nmode = \"sequential\"\nmodels = 2\nlambda = 10",
    ),
    learner(
        "subsample_aggregate",
        Data::Ball,
        "lambda = 10\nblocks = 16\nbound = 20",
    ),
    // lambda = N Lambda: each block's problem as well conditioned at every n (at the fixed
    // lambda = 10 a block's regulariser fades with n and its Newton fit takes more steps).
    learner(
        "subsample_aggregate",
        Data::Ball,
        "lambda = { per_example = 0.001 }\nblocks = 16\nbound = 20",
    ),
    learner("external", Data::TwoClasses, EXTERNAL_LEARNER)
        .replace_one()
        .up_to(LARGEST),
    learner("gnb", Data::TwoClasses, ""),
    learner("private_gnb", Data::TwoClasses, ""),
    learner("tree", Data::TwoClasses, "max_depth = 5"),
    learner("forest", Data::TwoClasses, "trees = 10\nmax_depth = 5"),
    learner(
        "private_random_tree",
        Data::TwoClasses,
        "trees = 3\nmax_depth = 3",
    ),
    learner(
        "private_forest",
        Data::TwoClasses,
        "trees = 10\nmax_depth = 3",
    ),
    learner("private_id3", Data::TwoClasses, "max_depth = 2\nbins = 4"),
    learner("svm_rff", Data::TwoClasses, RFF),
    learner("svm_rff_output", Data::TwoClasses, RFF),
    learner("svm_rff_objective", Data::TwoClasses, RFF),
    learner("linreg", Data::Regression, ""),
    learner("linreg_ssp", Data::Regression, "delta = 1e-5"),
    learner("linreg_functional", Data::Regression, ""),
    learner("pca", Data::Mixture, "components = 3"),
    learner("pca_sulq", Data::Mixture, "components = 3"),
    learner(
        "pca_analyze_gauss",
        Data::Mixture,
        "components = 3\ndelta = 1e-5",
    ),
    learner(
        "pca_power_method",
        Data::Mixture,
        "components = 3\ndelta = 1e-5\niterations = 10",
    ),
    learner("kmeans", Data::Mixture, "clusters = 4"),
    learner(
        "kmeans_dp_lloyd",
        Data::Mixture,
        "clusters = 4\niterations = 5",
    ),
    learner("linreg_objective", Data::Regression, "radius = 2"),
    learner(
        "kmeans_sample_aggregate",
        Data::Mixture,
        "clusters = 4\nblocks = 10",
    ),
    release("laplace", Data::Column, "query = \"mean\"\nbounds = [0, 1]"),
    release(
        "laplace",
        Data::Column,
        "query = \"median\"\nbounds = [0, 1]",
    ),
    release(
        "gaussian",
        Data::Column,
        "query = \"count\"\nbounds = [0, 1]\nat_least = 0.5\ndelta = 1e-5\ncalibration = \"analytic\"",
    ),
    release("exponential_median", Data::Column, "bounds = [0, 1]"),
    release("smooth_median", Data::Column, "bounds = [0, 1]").replace_one(),
    release("global_median", Data::Column, "bounds = [0, 1]"),
    release(
        "composed_average",
        Data::Column,
        "bounds = [0, 1]\nsum_share = 0.5",
    ),
    release(
        "histogram",
        Data::Column,
        "bounds = [0, 1]\nbins = [0, 0.25, 0.5, 0.75, 1]",
    ),
    release("randomized_response", Data::Column, "below = 0.3").replace_one(),
    release(
        "pnorm_noise",
        Data::Column,
        "norms = [1, 2, 10]\nsamples = 2000\ndimension = 2",
    ),
    release(
        "composition",
        Data::Column,
        "ks = [1, 10, 100, 1000, 10000]\ndelta = 1e-5",
    ),
    release("external", Data::Column, EXTERNAL_RELEASE)
        .replace_one()
        .up_to(LARGEST),
    release(
        "trimmed_mean_ptr",
        Data::Column,
        "bounds = [0, 1]\nalpha = 0.25\npropose = 1\ndelta = 1e-6",
    )
    .replace_one(),
    release(
        "iqr_ptr",
        Data::Column,
        "bounds = [0, 1]\npropose = 5\ndelta = 1e-6",
    )
    .replace_one(),
    release(
        "m_estimator_histogram",
        Data::Column,
        "bounds = [0, 1]\nhuber = 0.05",
    ),
    attack("differencing", Data::Bits, "").replace_one(),
    attack(
        "majority_vote",
        Data::Column,
        "ks = [1, 3, 5, 7, 11, 21, 51, 101]",
    )
    .replace_one(),
    attack("delta_leak", Data::Column, "delta = 1e-5"),
];

/// The registered kinds of each family, from the registry itself.
pub fn registered(registry: &epsilab::kinds::Registry) -> Vec<(Family, &'static str)> {
    let learners = registry.learners.iter().map(|r| (Family::Learner, r.name));
    let releases = registry.releases.iter().map(|r| (Family::Release, r.name));
    let attacks = registry.attacks.iter().map(|r| (Family::Attack, r.name));
    learners.chain(releases).chain(attacks).collect()
}

/// Refuses a registered kind without a case and a case naming no registered kind, each by
/// family and name: a kind added to the registry must say here how it is timed, or why not.
pub fn check_coverage(registry: &epsilab::kinds::Registry) -> Result<(), String> {
    let kinds = registered(registry);
    let name = |(f, k): &(Family, &str)| format!("{} `{k}`", f.key());
    let missing: Vec<String> = kinds
        .iter()
        .filter(|(f, k)| !CASES.iter().any(|c| c.family == *f && c.kind == *k))
        .map(name)
        .collect();
    let stale: Vec<String> = CASES
        .iter()
        .map(|c| (c.family, c.kind))
        .filter(|fk| !kinds.contains(fk))
        .map(|fk| name(&fk))
        .collect();
    let mut problems = Vec::new();
    if !missing.is_empty() {
        problems.push(format!(
            "registered without a case in benches/common/scale_cases.rs (give its pipeline fields \
             and data, or `Run::Not` with the reason): {}",
            missing.join(", ")
        ));
    }
    if !stale.is_empty() {
        problems.push(format!(
            "cases naming no registered kind: {}",
            stale.join(", ")
        ));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}
