//! How accurate is each sum? `cargo run --release --example accuracy -p reduce-numerics`
//!
//! For n = 2^10, 2^12, ..., 2^28 (2^18 on the CPU simulator) and three inputs built so that their
//! exact sums are known (every value is a whole number of a fixed power of two, so the sum is an
//! exact integer count of it), the relative error |got - exact| / |exact| of:
//!
//! - `cpu-loop`: a sequential f32 loop on the CPU, `sum += x`;
//! - `tree`: reduce-atomic's deterministic single pass (the ladder's tree of f32 additions);
//! - `compensated`: reduce-numerics' compensated sum;
//! - `f16-input`: the values rounded to f16 first, summed in f32 by reduce-numerics (the error of
//!   the accumulation alone: the reference is the exact sum of the rounded values).
//!
//! Writes `book/src/data/accuracy/<gpu>.json`; `cargo run --release -- --charts` draws the book's
//! charts from it.

use gpu_harness::{Device, Result};
use reduce_atomic::DeterministicReduce;
use reduce_numerics::{HalfFormat, Numerics};
use reduction::FullReduction;
use serde::Serialize;

/// An input whose values are `units[i] * 2^-scale_bits`, so its exact sum is an integer count of
/// 2^-scale_bits.
struct Dataset {
    name: &'static str,
    about: &'static str,
    scale_bits: i32,
    unit: fn(usize, &mut u64) -> i64,
}

/// A small deterministic generator (splitmix64), so every run measures the same inputs.
fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

const DATASETS: &[Dataset] = &[
    Dataset {
        name: "all-equal",
        about: "every value 0.1 (as f32: 13421773 x 2^-27)",
        scale_bits: 27,
        unit: |_, _| 13_421_773,
    },
    Dataset {
        name: "offset",
        about: "1000 plus noise in [-1, 1) (whole multiples of 2^-14)",
        scale_bits: 14,
        unit: |_, state| 1000 * (1 << 14) + (next(state) % (1 << 15)) as i64 - (1 << 14),
    },
    Dataset {
        name: "alternating",
        about: "alternating signs, magnitudes in [1, 2) (multiples of 2^-23)",
        scale_bits: 23,
        unit: |i, state| {
            let magnitude = (1i64 << 23) + (next(state) % (1 << 23)) as i64;
            if i % 2 == 0 { magnitude } else { -magnitude }
        },
    },
];

#[derive(Serialize)]
struct Series {
    method: &'static str,
    /// `(n, relative error)` pairs.
    points: Vec<(u64, f64)>,
}

#[derive(Serialize)]
struct Study {
    dataset: &'static str,
    about: &'static str,
    series: Vec<Series>,
}

#[derive(Serialize)]
struct AccuracyFile {
    device: String,
    date: String,
    studies: Vec<Study>,
}

fn relative_error(got: f64, exact: f64) -> f64 {
    if got == exact { 0.0 } else { ((got - exact) / exact).abs() }
}

fn main() -> Result<()> {
    let device = Device::shared()?;
    let largest = if device.is_simulated() { 18 } else { 28 };
    let mut tree = DeterministicReduce::<f32>::new(&device)?;
    let mut numerics = Numerics::new(&device)?;
    let mut studies = Vec::new();
    for dataset in DATASETS {
        let mut series: Vec<Series> = ["cpu-loop", "tree", "compensated", "f16-input"]
            .into_iter()
            .map(|method| Series { method, points: Vec::new() })
            .collect();
        for k in (10..=largest).step_by(2) {
            let n = 1usize << k;
            let mut state = 0x5eed ^ k as u64;
            let units: Vec<i64> = (0..n).map(|i| (dataset.unit)(i, &mut state)).collect();
            let scale = 2f64.powi(-dataset.scale_bits);
            let values: Vec<f32> = units.iter().map(|&u| (u as f64 * scale) as f32).collect();
            let exact = units.iter().map(|&u| i128::from(u)).sum::<i128>() as f64 * scale;
            let halves: Vec<u16> = values.iter().map(|&x| HalfFormat::F16.from_f32(x)).collect();
            let exact_halves: f64 =
                halves.iter().map(|&h| f64::from(HalfFormat::F16.to_f32(h))).sum();

            let input = device.upload(&values)?;
            let loop_sum = values.iter().fold(0.0f32, |sum, &x| sum + x);
            let tree_sum = tree.sum(input.as_view())?;
            let compensated = numerics.compensated_sum(input.as_view())?;
            let half_sum =
                numerics.sum_halves(device.upload(&halves)?.as_view(), HalfFormat::F16)?;
            let errors = [
                relative_error(f64::from(loop_sum), exact),
                relative_error(f64::from(tree_sum), exact),
                relative_error(f64::from(compensated), exact),
                relative_error(f64::from(half_sum), exact_halves),
            ];
            for (s, error) in series.iter_mut().zip(errors) {
                s.points.push((n as u64, error));
            }
            println!("{:<12} n = 2^{k:<2} {:?}", dataset.name, errors.map(|e| format!("{e:.2e}")));
        }
        studies.push(Study { dataset: dataset.name, about: dataset.about, series });
    }
    let file = AccuracyFile {
        device: device.facts().name.clone(),
        date: measuring::utc_date_today(),
        studies,
    };
    let folder = std::path::PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../book/src/data/accuracy"
    ));
    let out = std::env::var_os("ACCURACY_OUT").map(std::path::PathBuf::from).unwrap_or(folder);
    std::fs::create_dir_all(&out).map_err(|e| gpu_harness::GpuError::BadInput(e.to_string()))?;
    let path = out.join(format!("{}.json", measuring::gpu_slug(&device.facts().name)));
    let text = serde_json::to_string_pretty(&file)
        .map_err(|e| gpu_harness::GpuError::BadInput(e.to_string()))?;
    std::fs::write(&path, text + "\n")
        .map_err(|e| gpu_harness::GpuError::BadInput(e.to_string()))?;
    println!("wrote {}", path.display());
    Ok(())
}
