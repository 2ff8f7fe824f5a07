//! The steps and their peers (CUB's `DeviceSelect::Flagged` and `DeviceSelect::If`,
//! `scripts/peers/compact.cu`) as the tour and the benches measure them. A case names the share
//! kept: at `2^28 50%` each mask byte is 1 with probability 0.5.

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use gpu_harness::inputs::{Input, cached, random_values, uniform_f32};
use gpu_harness::peer::{PeerCall, peer_function, peer_stream};
use gpu_harness::{Case, Checked, Device, DeviceBuffer, GpuError, Prepared, Result, StepEntry};
use rand::RngExt;

use crate::element::{Keep, Predicate, compact_mismatch, cpu_compact};
use crate::launcher::{Compact, DeviceKeep};
use crate::plan::CompactStep;

const CRATE: &str = env!("CARGO_PKG_NAME");

/// The word outputs are poisoned with before a check (a NaN as f32).
pub const POISON_WORD: u32 = 0xffc0_0001;

/// Every step of the chapter, then the peers (CUB), as the tour and the benches measure them.
pub fn steps() -> Vec<StepEntry> {
    let step = |name, launcher, by_mask| {
        StepEntry::new(CRATE, name, move |device, case, seed| {
            measure(device, case, seed, launcher, by_mask)
        })
    };
    vec![
        step("flags-scan-scatter", Some(CompactStep::FlagsScanScatter), true),
        step("count-scan-scatter", Some(CompactStep::CountScanScatter), true),
        step("single-pass", Some(CompactStep::SinglePass), true),
        step("single-pass-if", Some(CompactStep::SinglePass), false),
        step("cub-flagged", None, true),
        step("cub-if", None, false),
    ]
}

/// The share of elements a case keeps: `50%` is 0.5.
pub fn kept_share(case: &Case) -> Result<f64> {
    let percent = case.variant.as_deref().and_then(|v| v.strip_suffix('%')?.parse::<f64>().ok());
    let why = || {
        GpuError::BadInput(format!(
            "case {case}: a compaction's case names the share kept, such as `2^28 50%`"
        ))
    };
    percent.filter(|p| (0.0..=100.0).contains(p)).map(|p| p / 100.0).ok_or_else(why)
}

/// A case's values (uniform in [-1, 1)) and mask on the device, and what the CPU keeps of them by
/// the mask and by the predicate `x > 1 - 2 share`, which keeps about the same share.
pub struct CaseInput {
    pub values: Input<f32>,
    pub mask: DeviceBuffer<u8>,
    pub threshold: f32,
    pub kept: [Vec<f32>; 2],
}

/// The input of `case` from `seed`, shared by the steps measured at the case.
pub fn input(device: &Device, case: &Case, seed: u64) -> Result<Arc<CaseInput>> {
    cached(device, case, seed, || {
        let (share, n) = (kept_share(case)?, case.elements()?);
        let host = random_values(n, seed, uniform_f32);
        let mask = random_values(n, seed ^ 1, |rng| u8::from(rng.random_bool(share)));
        let threshold = (1.0 - 2.0 * share) as f32;
        let kept = [
            cpu_compact(&host, Keep::Mask(&mask)),
            cpu_compact(&host, Keep::Test(Predicate::Greater(threshold))),
        ];
        let values = Input { device: device.upload(&host)?, host, case: case.label.clone(), seed };
        Ok(CaseInput { values, mask: device.upload(&mask)?, threshold, kept })
    })
}

/// What is timed: one of our steps (its launches), or one call of CUB.
enum Run {
    Ours(Box<Compact<f32>>),
    Peer(PeerCall),
}

/// A step on a case's input, by its mask or its predicate.
struct Measured {
    run: Run,
    by_mask: bool,
    input: Arc<CaseInput>,
    output: DeviceBuffer<f32>,
    /// How many CUB kept (our launcher counts them itself).
    kept: DeviceBuffer<u32>,
}

/// `(input, flags, output, kept, n, temp, temp_bytes, stream)`.
type Flagged = unsafe extern "C" fn(
    *const f32,
    *const u8,
    *mut f32,
    *mut u32,
    i64,
    *mut c_void,
    *mut u64,
    *mut c_void,
) -> c_int;
/// `(input, output, kept, n, threshold, temp, temp_bytes, stream)`.
type IfGreater = unsafe extern "C" fn(
    *const f32,
    *mut f32,
    *mut u32,
    i64,
    f32,
    *mut c_void,
    *mut u64,
    *mut c_void,
) -> c_int;

/// A step (`Some`), or CUB (`None`): `DeviceSelect::Flagged` by the mask, `DeviceSelect::If` by
/// the threshold, its scratch allocated once.
fn measure(
    device: &Device,
    case: &Case,
    seed: u64,
    step: Option<CompactStep>,
    by_mask: bool,
) -> Result<Measured> {
    let (input, n) = (input(device, case, seed)?, case.elements()?);
    let (output, kept) = (device.alloc::<f32>(n)?, device.alloc::<u32>(1)?);
    let run = if let Some(step) = step {
        let mut compact = Compact::with_step(device, step)?;
        compact.reserve(n)?;
        Run::Ours(Box::new(compact))
    } else {
        let (values, flags) =
            (input.values.device.as_view().raw_address(), input.mask.as_view().raw_address());
        let (to, count, threshold) =
            (output.as_view().raw_address(), kept.as_view().raw_address(), input.threshold);
        let (stream, n) = (peer_stream(device)?, n as i64);
        // The library exports these symbols with these signatures (scripts/peers/compact.cu).
        Run::Peer(if by_mask {
            let f: Flagged = unsafe { peer_function("cub_select_flagged_f32")? };
            PeerCall::with_scratch(device, "cub_select_flagged_f32", move |temp, bytes| unsafe {
                f(values as _, flags as _, to as _, count as _, n, temp, bytes, stream)
            })?
        } else {
            let f: IfGreater = unsafe { peer_function("cub_select_if_greater_f32")? };
            PeerCall::with_scratch(
                device,
                "cub_select_if_greater_f32",
                move |temp, bytes| unsafe {
                    f(values as _, to as _, count as _, n, threshold, temp, bytes, stream)
                },
            )?
        })
    };
    Ok(Measured { run, by_mask, input, output, kept })
}

impl Prepared for Measured {
    fn queue(&mut self) -> Result<()> {
        let (values, input) = (self.input.values.device.as_view(), &self.input);
        let keep = if self.by_mask {
            DeviceKeep::Mask(input.mask.as_view())
        } else {
            DeviceKeep::Test(Predicate::Greater(input.threshold))
        };
        match &mut self.run {
            Run::Ours(compact) => compact.queue(values, keep, &mut self.output),
            Run::Peer(call) => call.queue(),
        }
    }

    fn check(&mut self) -> Result<Checked> {
        self.output.fill_words(POISON_WORD)?;
        self.queue()?;
        let kept = match &self.run {
            Run::Ours(compact) => compact.kept()?,
            Run::Peer(_) => self.kept.to_host()?[0] as usize,
        };
        let got = if kept == 0 {
            Vec::new()
        } else {
            self.output.view(..kept.min(self.output.len()))?.to_host()?
        };
        let expected = &self.input.kept[usize::from(!self.by_mask)];
        Ok(self.input.values.outcome("compaction", compact_mismatch(expected, &got)))
    }

    fn counts(&self) -> Vec<(&'static str, u64)> {
        vec![("kept", self.input.kept[usize::from(!self.by_mask)].len() as u64)]
    }
}
