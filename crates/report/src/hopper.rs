//! What Hopper buys: the steps that use a feature of compute capability 9.0 (the registry's
//! `hopper`: bulk copies, thread block clusters), timed on one GPU natively and under an older
//! GPU's profile (`GPU_PROFILE=A100`: the same GPU runs the code path before 9.0) in one run of
//! the tour. The data is the tour's own output (`--out data/what-hopper-buys`): a GPU's folder and
//! its `<gpu>-gpu-profile-<name>` folder beside it.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use measuring::results::{Record, Results};
use measuring::tables::{Align, Table, measured_on};

use crate::charts::{ChartError, Group, GroupBars, ShareBar, share_chart};
use crate::data::{HOPPER, load_results, results_by_gpu};

/// One GPU measured natively and under an older profile in the same run.
pub struct Comparison {
    /// The GPU's folder name (`nvidia-h200`).
    pub slug: String,
    /// The profile's name as the folder writes it (`a100`).
    pub profile: String,
    pub native: Vec<Results>,
    pub as_profile: Vec<Results>,
}

/// Every GPU under `data/what-hopper-buys/` that has a profile's folder beside its own.
pub fn load(data: &Path) -> gpu_harness::Result<Vec<Comparison>> {
    let folder = data.join(HOPPER);
    if !folder.is_dir() {
        return Ok(Vec::new());
    }
    let by_gpu: Vec<(PathBuf, Vec<Results>)> = results_by_gpu(&load_results(&folder)?);
    let name = |path: &Path| path.file_name().map(|n| n.to_string_lossy().into_owned());
    let mut comparisons = Vec::new();
    for (path, as_profile) in &by_gpu {
        let Some((slug, profile)) = name(path).and_then(|n| {
            n.split_once("-gpu-profile-").map(|(s, p)| (s.to_string(), p.to_string()))
        }) else {
            continue;
        };
        if let Some((_, native)) = by_gpu.iter().find(|(p, _)| name(p).as_deref() == Some(&slug)) {
            comparisons.push(Comparison {
                slug,
                profile,
                native: native.clone(),
                as_profile: as_profile.clone(),
            });
        }
    }
    Ok(comparisons)
}

/// A step measured both ways at one case.
struct Pair<'a> {
    crate_name: &'a str,
    native: &'a Record,
    as_profile: &'a Record,
}

fn pairs(comparison: &Comparison) -> Vec<Pair<'_>> {
    let mut pairs = Vec::new();
    for native in &comparison.native {
        let Some(other) = comparison.as_profile.iter().find(|r| r.crate_name == native.crate_name)
        else {
            continue;
        };
        for record in &native.records {
            if let Some(twin) =
                other.records.iter().find(|r| r.step == record.step && r.case == record.case)
            {
                pairs.push(Pair {
                    crate_name: &native.crate_name,
                    native: record,
                    as_profile: twin,
                });
            }
        }
    }
    pairs
}

/// The registry's Hopper feature of a step, if it uses one.
fn feature<'a>(course: &'a course::Course, pair: &Pair) -> Option<&'a course::HopperFeature> {
    course
        .steps()
        .find(|s| s.crate_name == pair.crate_name && s.name() == pair.native.step)
        .and_then(|s| s.step.hopper.as_ref())
}

/// The table (each step that uses a Hopper feature, at each case: its time natively and on the
/// profile's code path) and the line under it on the steps that use none.
pub fn table(course: &course::Course, comparison: &Comparison) -> String {
    let profile = comparison.profile.to_uppercase();
    let Some(first) = comparison.native.first() else { return String::new() };
    let mut rows = Vec::new();
    let mut uses: Vec<String> = Vec::new();
    let mut others = Vec::new();
    for pair in pairs(comparison) {
        let ratio = pair.as_profile.median_ms / pair.native.median_ms;
        match feature(course, &pair) {
            Some(feature) => {
                let step = format!("{}/{}", pair.crate_name, pair.native.step);
                let line = format!("- {step}: {}", feature.uses);
                if !uses.contains(&line) {
                    uses.push(line);
                }
                rows.push(vec![
                    step,
                    pair.native.case.clone(),
                    format!("{:.4}", pair.native.median_ms),
                    format!("{:.4}", pair.as_profile.median_ms),
                    format!("{ratio:.2}x"),
                ]);
            }
            None => others.push(ratio),
        }
    }
    let caption = format!(
        "{} Each step natively (ms) and as an {profile} (`GPU_PROFILE={profile}`: the code \
         path before compute capability 9.0, its plans for the {profile}'s SMs), in one run.",
        measured_on(first)
    );
    let columns = vec![
        ("step", Align::Left),
        ("case", Align::Left),
        ("Hopper, ms", Align::Right),
        ("Hopper's feature off, ms", Align::Right),
        ("the feature buys", Align::Right),
    ];
    let mut out = Table { caption, columns, rows }.markdown();
    let _ =
        write!(out, "\nWhat each step uses, and what runs without it:\n\n{}\n", uses.join("\n"));
    if let (Some(low), Some(high)) =
        (others.iter().copied().reduce(f64::min), others.iter().copied().reduce(f64::max))
    {
        let _ = write!(
            out,
            "\nThe {} other measurements of these families' steps, which use no Hopper feature, \
             took {:.2}x to {:.2}x their native time as an {profile}.\n",
            others.len(),
            low,
            high
        );
    }
    out
}

/// The chart: per step and case that uses a Hopper feature, its share of the copy roof natively
/// and as the profile.
pub fn chart(course: &course::Course, comparison: &Comparison) -> Result<String, ChartError> {
    let profile = comparison.profile.to_uppercase();
    // Each side's compute capability, as its run recorded it (`9.0`, and the profile's `8.0`).
    let arch = |runs: &[Results]| {
        runs.first().map_or(String::new(), |r| {
            let (major, minor) = r.device.compute_capability;
            format!("{major}.{minor}")
        })
    };
    let (native_arch, profile_arch) = (arch(&comparison.native), arch(&comparison.as_profile));
    let groups: Vec<Group> = pairs(comparison)
        .iter()
        .filter(|pair| feature(course, pair).is_some())
        .map(|pair| {
            let bar = |record: &Record, label: &str, peer: bool| ShareBar {
                label: format!("{label}, {:.4} ms", record.median_ms),
                percent: Some(record.percent_of_copy()),
                peer,
            };
            Group {
                name: format!("{}/{}", pair.crate_name, pair.native.step),
                case: pair.native.case.clone(),
                gpus: vec![
                    GroupBars {
                        gpu: native_arch.clone(),
                        bars: vec![bar(pair.native, "Hopper", false)],
                    },
                    GroupBars {
                        gpu: profile_arch.clone(),
                        bars: vec![bar(pair.as_profile, &format!("as an {profile}"), true)],
                    },
                ],
            }
        })
        .collect();
    share_chart(
        "What Hopper's features buy: % of the copy roof, same GPU, same run",
        &groups,
        &[
            format!("with the feature (compute {native_arch})"),
            format!("without it ({profile}'s code path)"),
        ],
        crate::charts::SIZE.0,
    )
}
