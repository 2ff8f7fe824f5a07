//! The tour's command line.

use std::path::PathBuf;

use clap::builder::PossibleValuesParser;
use clap::{Parser, Subcommand};

/// Runs every step of every technique in the registry's order: checks it against the CPU, times
/// it (median of CUDA-event-timed batches) and compares it with the read and copy roofs measured in
/// the same run. Writes the results into the book's data folder and redraws the book's tables and
/// charts. Without a GPU, runs every step on the CPU simulator and prints what each launch did.
#[derive(Debug, Clone, PartialEq, Parser)]
#[command(name = "tour", version, args_conflicts_with_subcommands = true, after_help = ENVIRONMENT)]
pub struct Options {
    /// Course mode (also `cargo course <command>`): starter copies and grading.
    #[command(subcommand)]
    pub command: Option<CourseCommand>,

    /// Only these crates (comma-separated), e.g. `reduce-naive,reduce-atomic`.
    #[arg(
        long,
        value_name = "CRATES",
        value_delimiter = ',',
        value_parser = PossibleValuesParser::new(crates())
    )]
    pub crates: Vec<String>,

    /// Only these families (comma-separated), e.g. `reduction`.
    #[arg(
        long,
        value_name = "FAMILIES",
        value_delimiter = ',',
        value_parser = PossibleValuesParser::new(families())
    )]
    pub families: Vec<String>,

    /// Only these cases (comma-separated labels as the registry writes them), e.g. `2^20,2^28`.
    #[arg(long, value_name = "CASES", value_delimiter = ',')]
    pub cases: Vec<String>,

    /// Write results under DIR/<gpu>/ instead of the book's data folder.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,

    /// Do not redraw the book's tables and charts after measuring.
    #[arg(long)]
    pub no_charts: bool,

    /// Only redraw the book's tables, charts, SUMMARY.md and the README's status table from the
    /// committed data (no GPU needed).
    #[arg(long, conflicts_with_all = ["crates", "families", "cases", "no_charts"])]
    pub charts: bool,

    /// Only redraw the book's pictures of what a warp does (book/src/pictures/), from the
    /// chapters' kernels run on the CPU simulator (no GPU needed); `--crates` picks chapters.
    #[arg(long, conflicts_with_all = ["families", "cases", "no_charts", "charts", "out"])]
    pub pictures: bool,
}

/// The variables the tour (and every test and bench) reads, shown after `--help`.
const ENVIRONMENT: &str = "Environment:
  GPU_BACKEND=cpu|cuda  the CPU simulator or the GPU, whatever is present
  CUDA_REQUIRED=1       insist on the GPU
  GPU_PROFILE=<gpu>     run as that GPU: its architecture's code path (PTX for its compute_XY), its
                        SMs and threads per SM, its limits checked at every launch; on a GPU no
                        older than it, or on the simulator. One of T4, A10, RTX3090, L4, RTX4090,
                        A100, H100, H200, B200, RTX5090; results go to <gpu>-gpu-profile-<name>/";

/// Course mode: hand out the kernels with the technique removed, and grade them with the same
/// tests.
#[derive(Debug, Clone, PartialEq, Subcommand)]
pub enum CourseCommand {
    /// Write a starter copy of the workspace to DEST: every solution region of the chosen crates
    /// replaced by its stub, the tests untouched, and a GitHub Classroom autograding file.
    Starter {
        dest: PathBuf,
        /// Only these crates' regions (default: every crate that has any).
        #[arg(long, value_name = "CRATES", value_delimiter = ',')]
        crates: Vec<String>,
    },
    /// Run the chosen crates' graded tests (every test but the illustrations) and print a table of
    /// tests passed and points; where they all pass, count on the CPU simulator what each graded
    /// step's technique improves, beside the reference solution (optimisation points); on a GPU,
    /// `--speed` adds a speed score against the reference solution measured in the same run.
    Grade {
        /// Only these crates (default: every crate that has solution regions).
        #[arg(long, value_name = "CRATES", value_delimiter = ',')]
        crates: Vec<String>,
        /// A student's workspace: its solution files are graded by this workspace's tests.
        #[arg(long, value_name = "DIR")]
        submission: Option<PathBuf>,
        /// Also write the grades as JSON to FILE.
        #[arg(long, value_name = "FILE")]
        json: Option<PathBuf>,
        /// Also write the grades as Gradescope's results.json to FILE: a test per crate's graded
        /// tests and one per graded step's optimisation score, with the advice as output.
        #[arg(long, value_name = "FILE")]
        gradescope: Option<PathBuf>,
        /// On a GPU: time each step against this workspace's solution (needs --submission).
        #[arg(long, requires = "submission")]
        speed: bool,
        /// Exit with an error unless every graded test passed (for autograders).
        #[arg(long)]
        require_all: bool,
        /// Exit with an error unless every graded test passed and every graded step's counts are
        /// within the reference solution's (full optimisation points; for autograders).
        #[arg(long)]
        require_optimised: bool,
        /// Refuse to grade unless the tests are the instructor's (the digest a starter wrote).
        #[arg(long, value_name = "HEX")]
        tests_digest: Option<String>,
    },
    /// Write Gradescope's autograder bundle to DEST: `setup.sh` (installs Rust and NVRTC on
    /// Gradescope's Ubuntu image, builds the grader), `run_autograder` (grades the submission's
    /// files with this workspace's tests into results.json) and a copy of this workspace. Zip
    /// DEST's contents and upload the zip as the assignment's autograder.
    Gradescope {
        dest: PathBuf,
        /// Only these crates (default: every crate that has solution regions).
        #[arg(long, value_name = "CRATES", value_delimiter = ',')]
        crates: Vec<String>,
    },
    /// Draw the pictures of what a warp does from the kernels of this workspace (your starter
    /// copy), each above the book's picture of the reference solution, into DEST.
    Pictures {
        /// Only these chapters' pictures (default: all).
        #[arg(long, value_name = "CRATES", value_delimiter = ',')]
        crates: Vec<String>,
        /// Where to write them.
        #[arg(long, value_name = "DIR", default_value = "target/pictures")]
        dest: PathBuf,
    },
    /// CI's contract for every crate with solution regions: with the stubs in place the workspace
    /// builds and every kernel compiles, and each crate's graded tests fail.
    Check {
        /// Only these crates.
        #[arg(long, value_name = "CRATES", value_delimiter = ',')]
        crates: Vec<String>,
    },
    /// What `grade` runs in a build of a student's files: count the graded steps of the chosen
    /// crates on the CPU simulator and write the counts as JSON to FILE.
    #[command(hide = true)]
    Count {
        #[arg(long, value_name = "CRATES", value_delimiter = ',', required = true)]
        crates: Vec<String>,
        #[arg(long, value_name = "FILE")]
        json: PathBuf,
    },
}

/// Every crate that offers steps (technique crates and the crates of peers).
fn crates() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = Vec::new();
    for step in course::registry().steps() {
        if !names.contains(&step.crate_name) {
            names.push(step.crate_name);
        }
    }
    names
}

fn families() -> Vec<&'static str> {
    course::registry().families.iter().map(|f| f.id.as_str()).collect()
}

impl Options {
    /// Whether the step `crate_name/_` of `family` was asked for.
    pub fn wants(&self, family: &str, crate_name: &str) -> bool {
        (self.crates.is_empty() || self.crates.iter().any(|c| c == crate_name))
            && (self.families.is_empty() || self.families.iter().any(|f| f == family))
    }

    /// Whether the case labelled `label` was asked for.
    pub fn wants_case(&self, label: &str) -> bool {
        self.cases.is_empty() || self.cases.iter().any(|c| c == label)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::error::ErrorKind;

    #[test]
    fn the_help_names_every_gpu_profile() {
        for profile in gpu_harness::profiles::PROFILES {
            assert!(ENVIRONMENT.contains(profile.name), "--help leaves out {}", profile.name);
        }
    }

    fn parse(args: &[&str]) -> Result<Options, clap::Error> {
        Options::try_parse_from(std::iter::once("tour").chain(args.iter().copied()))
    }

    #[test]
    fn defaults_take_everything() {
        let options = parse(&[]).expect("no options parse");
        assert!(options.wants("reduction", "reduce-naive") && options.wants_case("2^28"));
        assert!(!options.charts && !options.no_charts && options.out.is_none());
        assert_eq!(options.command, None);
    }

    #[test]
    fn course_commands() {
        let options = parse(&["grade", "--crates", "reduce-naive", "--require-all"]).unwrap();
        assert!(matches!(options.command, Some(CourseCommand::Grade { require_all: true, .. })));
        let options = parse(&["grade", "--require-optimised"]).unwrap();
        assert!(matches!(
            options.command,
            Some(CourseCommand::Grade { require_optimised: true, .. })
        ));
        let options =
            parse(&["count", "--crates", "reduce-naive", "--json", "/tmp/c.json"]).unwrap();
        assert!(matches!(options.command, Some(CourseCommand::Count { .. })));
        assert_eq!(
            parse(&["grade", "--speed"]).unwrap_err().kind(),
            ErrorKind::MissingRequiredArgument
        );
        let options = parse(&["pictures", "--crates", "reduce-naive"]).unwrap();
        assert!(matches!(options.command, Some(CourseCommand::Pictures { .. })));
        let options = parse(&["--pictures", "--crates", "transpose"]).unwrap();
        assert!(options.pictures && options.wants("transpose", "transpose"));
        let options = parse(&["starter", "/tmp/x"]).unwrap();
        assert!(matches!(options.command, Some(CourseCommand::Starter { .. })));
        let options = parse(&["grade", "--gradescope", "/tmp/results.json"]).unwrap();
        assert!(matches!(options.command, Some(CourseCommand::Grade { gradescope: Some(_), .. })));
        let options = parse(&["gradescope", "/tmp/x", "--crates", "reduce-naive"]).unwrap();
        assert!(matches!(options.command, Some(CourseCommand::Gradescope { .. })));
    }

    #[test]
    fn filters() {
        let options =
            parse(&["--crates", "reduce-naive,reduce-atomic", "--cases", "2^20"]).unwrap();
        assert!(
            options.wants("reduction", "reduce-atomic")
                && !options.wants("reduction", "reduce-unroll")
        );
        assert!(options.wants_case("2^20") && !options.wants_case("2^28"));
        assert_eq!(
            parse(&["--crates", "reduce-nothing"]).unwrap_err().kind(),
            ErrorKind::InvalidValue
        );
        assert_eq!(
            parse(&["--charts", "--crates", "reduce-naive"]).unwrap_err().kind(),
            ErrorKind::ArgumentConflict
        );
    }
}
