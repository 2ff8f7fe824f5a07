//! The command line.

use std::path::PathBuf;

use clap::Parser;
use clap::builder::PossibleValuesParser;

use crate::steps::techniques;

/// The tour of the course: every step of every technique, checked and measured on this GPU.
///
/// Runs each step in the order the book teaches them, at each size: checks its result against the
/// CPU, measures the median device time of one call (CUDA events) and its effective bandwidth
/// against the device-to-device copy measured at that size in the same run, and prints a table per
/// technique and size. Then writes the results in the book's data format and re-renders the book's
/// tables and charts from them. Exits with an error when there is no GPU or a check fails.
#[derive(Debug, Clone, PartialEq, Parser)]
#[command(name = "tour", version)]
pub struct Options {
    /// Techniques to run, as comma-separated crate names [default: all, in ladder order]
    #[arg(long, value_name = "CRATES", value_delimiter = ',', value_parser = PossibleValuesParser::new(techniques()))]
    pub techniques: Vec<String>,

    /// Input sizes in f32 elements, comma-separated: a number below 64 is a power of two
    /// (28 means 2^28), a larger one an element count (1000000); `2^28` also works
    #[arg(long, value_name = "SIZES", value_delimiter = ',', value_parser = parse_size, default_value = "20,24,28")]
    pub sizes: Vec<usize>,

    /// Folder of results files: writes <DIR>/<gpu>/<technique>.json, where <gpu> is the GPU's name
    /// in lower case with dashes (nvidia-h200); a file holds only this run's sizes [default: the
    /// book's data folder, book/src/data]
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,

    /// Do not re-render the book's tables and charts after writing the results
    #[arg(long)]
    pub no_charts: bool,

    /// Measure nothing (no GPU needed): only re-render the book's tables and charts from the
    /// results files under --out (default: the committed data), and print the paths written
    #[arg(long, conflicts_with_all = ["techniques", "sizes", "no_charts"])]
    pub charts: bool,
}

/// The largest power of two accepted: 2^32 floats are 16 GiB.
const MAX_EXPONENT: u32 = 32;

/// Parses one size: `k` (below 64) or `2^k` for 2^k elements, else an element count.
pub fn parse_size(text: &str) -> Result<usize, String> {
    let text = text.trim().replace('_', "");
    let (number, exponent_only) = match text.strip_prefix("2^") {
        Some(k) => (k, true),
        None => (text.as_str(), false),
    };
    let value: u64 = number.parse().map_err(|_| format!("`{text}` is not a number, an exponent or 2^k"))?;
    let max_elements = 1u64 << MAX_EXPONENT;
    if exponent_only || value < 64 {
        if value > u64::from(MAX_EXPONENT) {
            return Err(format!("2^{value} elements is too large (at most 2^{MAX_EXPONENT})"));
        }
        return Ok(1 << value);
    }
    if value > max_elements {
        return Err(format!("{value} elements is too large (at most 2^{MAX_EXPONENT} = {max_elements})"));
    }
    usize::try_from(value).map_err(|_| format!("{value} elements do not fit this machine's address space"))
}

impl Options {
    /// The sizes to run, smallest first, each once.
    pub fn sizes(&self) -> Vec<usize> {
        let mut sizes = self.sizes.clone();
        sizes.sort_unstable();
        sizes.dedup();
        sizes
    }

    /// Whether `technique` was asked for (all are when none was named).
    pub fn wants(&self, technique: &str) -> bool {
        self.techniques.is_empty() || self.techniques.iter().any(|t| t == technique)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::error::ErrorKind;

    fn parse(args: &[&str]) -> Result<Options, clap::Error> {
        Options::try_parse_from(std::iter::once("tour").chain(args.iter().copied()))
    }

    #[test]
    fn defaults() {
        let Ok(options) = parse(&[]) else { panic!("no options should parse") };
        assert!(options.techniques.is_empty());
        assert_eq!(options.sizes(), [1 << 20, 1 << 24, 1 << 28]);
        assert_eq!(options.out, None);
        assert!(!options.no_charts && !options.charts);
        assert!(options.wants("reduce-naive") && options.wants("reduce-atomic"));
    }

    #[test]
    fn every_option() {
        let args =
            ["--techniques", "reduce-atomic,reduce-naive", "--sizes", "28,1000000,2^4", "--out", "x", "--no-charts"];
        let Ok(options) = parse(&args) else { panic!("should parse") };
        assert_eq!(options.techniques, ["reduce-atomic", "reduce-naive"]);
        assert_eq!(options.sizes(), [16, 1_000_000, 1 << 28]);
        assert_eq!(options.out, Some(PathBuf::from("x")));
        assert!(options.no_charts);
        assert!(options.wants("reduce-naive") && !options.wants("reduce-shuffle"));
    }

    #[test]
    fn charts_alone_or_with_out() {
        let Ok(options) = parse(&["--charts"]) else { panic!("should parse") };
        assert!(options.charts);
        assert!(parse(&["--charts", "--out", "data"]).is_ok());
        for other in [["--sizes", "20"], ["--techniques", "reduce-naive"]] {
            let Err(e) = parse(&["--charts", other[0], other[1]]) else { panic!("{other:?} should conflict") };
            assert_eq!(e.kind(), ErrorKind::ArgumentConflict);
        }
        assert!(parse(&["--charts", "--no-charts"]).is_err());
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("20"), Ok(1 << 20));
        assert_eq!(parse_size("0"), Ok(1));
        assert_eq!(parse_size("63").map_err(|_| ()), Err(()));
        assert_eq!(parse_size("64"), Ok(64));
        assert_eq!(parse_size("1000000"), Ok(1_000_000));
        assert_eq!(parse_size("1_000_000"), Ok(1_000_000));
        assert_eq!(parse_size(" 2^28 "), Ok(1 << 28));
        assert_eq!(parse_size("2^100").map_err(|_| ()), Err(()));
        assert_eq!(parse_size("99999999999").map_err(|_| ()), Err(()));
    }

    #[test]
    fn bad_values_are_errors_that_say_why() {
        for (args, expect) in [
            (["--sizes", "20,abc"], "`abc` is not a number"),
            (["--sizes", "1.5"], "not a number"),
            (["--sizes", "40"], "too large"),
            (["--techniques", "reduce-fast"], "reduce-naive"),
        ] {
            let Err(e) = parse(&args) else { panic!("{args:?} should fail") };
            assert!(matches!(e.kind(), ErrorKind::InvalidValue | ErrorKind::ValueValidation), "{args:?}");
            assert!(e.to_string().contains(expect), "{args:?}: {e}");
        }
        let Err(e) = parse(&["--fast"]) else { panic!("unknown flag") };
        assert_eq!(e.kind(), ErrorKind::UnknownArgument);
    }

    #[test]
    fn help_explains_every_option() {
        let Err(e) = parse(&["--help"]) else { panic!("help is an early exit") };
        assert_eq!(e.kind(), ErrorKind::DisplayHelp);
        let help = e.to_string();
        for option in ["--techniques", "--sizes", "--out", "--no-charts", "--charts", "reduce-multi-level"] {
            assert!(help.contains(option), "{option} missing from:\n{help}");
        }
    }
}
