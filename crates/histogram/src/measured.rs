//! The steps as the tour and the benches measure them (`pub fn steps()`), and their inputs.
//!
//! The registry (`course.toml`) runs the byte steps at `2^30 uniform` and `2^30 all-equal` (1 GiB
//! of random bytes, and 1 GiB of one byte value) and the f32 steps at `2^28 f32` (1 GiB of values
//! uniform in [0, 1), counted into 256 bins over [0, 1)). One input is made per case and kept, so
//! the steps measured one after another at a case share it; it is generated on every core, and its
//! CPU histogram is computed once.

use std::sync::{Arc, Mutex};

use gpu_harness::{Case, Checked, Device, DeviceBuffer, GpuError, Prepared, Result, StepEntry};
use rand::rngs::SmallRng;
use rand::{Rng, RngExt, SeedableRng};

use crate::reference::{byte_histogram_parallel, even_histogram_parallel, mismatch};
use crate::{BYTE_BINS, ByteHistogram, ByteStep, EvenBins, EvenHistogram, EvenStep};

const CRATE: &str = env!("CARGO_PKG_NAME");

/// Every step of the chapter, then the peers (CUB), as the tour and the benches measure them.
pub fn steps() -> Vec<StepEntry> {
    let bytes = ByteStep::ALL.iter().map(|&step| StepEntry {
        crate_name: CRATE,
        step: step.name(),
        prepare: byte_prepare(step),
    });
    let even = [
        StepEntry { crate_name: CRATE, step: EvenStep::OneCopy.name(), prepare: prepare_even::<false> },
        StepEntry { crate_name: CRATE, step: EvenStep::LaneCopies.name(), prepare: prepare_even::<true> },
    ];
    bytes.chain(even).chain(crate::peers::steps()).collect()
}

/// The kinds of byte input a case can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ByteKind {
    /// Every byte drawn uniformly from 0..=255.
    Uniform,
    /// One byte value (drawn from the seed) throughout.
    AllEqual,
}

impl ByteKind {
    /// The kind a case names (`2^30 uniform`, `2^30 all-equal`).
    pub fn of(case: &Case) -> Result<ByteKind> {
        match case.variant.as_deref() {
            Some("uniform") => Ok(ByteKind::Uniform),
            Some("all-equal") => Ok(ByteKind::AllEqual),
            other => Err(GpuError::BadInput(format!(
                "case {case}: a byte histogram's case names its input, `uniform` or `all-equal` (got {other:?})"
            ))),
        }
    }
}

/// Bytes of `kind`, `n` of them, drawn from `seed` on every core.
pub fn make_bytes(kind: ByteKind, n: usize, seed: u64) -> Vec<u8> {
    let mut bytes = vec![0u8; n];
    match kind {
        ByteKind::AllEqual => bytes.fill(SmallRng::seed_from_u64(seed).random::<u8>()),
        ByteKind::Uniform => in_parallel(&mut bytes, seed, |rng, chunk| rng.fill_bytes(chunk)),
    }
    bytes
}

/// `n` f32 values uniform in [0, 1), drawn from `seed` on every core.
pub fn make_unit_floats(n: usize, seed: u64) -> Vec<f32> {
    let mut values = vec![0f32; n];
    in_parallel(&mut values, seed, |rng, chunk| chunk.iter_mut().for_each(|x| *x = rng.random::<f32>()));
    values
}

/// Fills `data` chunk by chunk on every core, each chunk from its own generator seeded from `seed`
/// and the chunk's index (so the result depends on the seed alone).
fn in_parallel<T: Send>(data: &mut [T], seed: u64, fill: impl Fn(&mut SmallRng, &mut [T]) + Sync) {
    const CHUNK: usize = 1 << 22;
    let fill = &fill;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let chunks: Vec<(usize, &mut [T])> = data.chunks_mut(CHUNK).enumerate().collect();
    let per_core = chunks.len().div_ceil(cores).max(1);
    let mut groups: Vec<Vec<(usize, &mut [T])>> = Vec::new();
    let mut chunks = chunks.into_iter().peekable();
    while chunks.peek().is_some() {
        groups.push(chunks.by_ref().take(per_core).collect());
    }
    std::thread::scope(|scope| {
        for group in groups {
            scope.spawn(move || {
                for (index, chunk) in group {
                    let mut rng =
                        SmallRng::seed_from_u64(seed ^ (index as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
                    fill(&mut rng, chunk);
                }
            });
        }
    });
}

/// An input on the device, its copy on the host, and its CPU histogram.
pub struct Input<T: gpu_harness::Element> {
    pub host: Vec<T>,
    pub device: DeviceBuffer<T>,
    pub expected: Vec<u32>,
    pub label: String,
    pub seed: u64,
}

impl<T: gpu_harness::Element> Input<T> {
    /// The check of counts that came back.
    pub fn check(&self, step: &str, got: &[u32]) -> Checked {
        match mismatch(&self.expected, got) {
            None => Checked::Correct,
            Some(why) => Checked::Wrong(format!("{step}: {why} (input {} from seed {})", self.label, self.seed)),
        }
    }
}

/// Where the last input made is kept, with the device it lives on.
type Last<T> = Mutex<Option<(Device, Arc<Input<T>>)>>;

/// The last input made, kept so the next step at the same case reuses it.
fn cached<T: gpu_harness::Element>(
    last: &Last<T>,
    device: &Device,
    label: &str,
    seed: u64,
    make: impl FnOnce() -> Result<Input<T>>,
) -> Result<Arc<Input<T>>> {
    let mut last = last.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((owner, input)) = last.as_ref() {
        if owner.is_same(device) && input.label == label && input.seed == seed {
            return Ok(input.clone());
        }
    }
    *last = None; // free the previous input before making the next
    let input = Arc::new(make()?);
    *last = Some((device.clone(), input.clone()));
    Ok(input)
}

/// The byte input of `case` from `seed`.
pub fn byte_input(device: &Device, case: &Case, seed: u64) -> Result<Arc<Input<u8>>> {
    static LAST: Last<u8> = Mutex::new(None);
    let kind = ByteKind::of(case)?;
    let n = case.elements()?;
    cached(&LAST, device, &case.label, seed, || {
        let host = make_bytes(kind, n, seed);
        let expected = byte_histogram_parallel(&host);
        Ok(Input { device: device.upload(&host)?, host, expected, label: case.label.clone(), seed })
    })
}

/// The bins of the f32 cases: 256 over [0, 1).
pub fn unit_bins() -> EvenBins {
    EvenBins::new(256, 0.0, 1.0).expect("256 bins over [0, 1) are valid")
}

/// The f32 input of `case` from `seed`: values uniform in [0, 1).
pub fn f32_input(device: &Device, case: &Case, seed: u64) -> Result<Arc<Input<f32>>> {
    static LAST: Last<f32> = Mutex::new(None);
    if case.variant.as_deref() != Some("f32") {
        return Err(GpuError::BadInput(format!("case {case}: an f32 histogram's case ends in `f32`")));
    }
    let n = case.elements()?;
    cached(&LAST, device, &case.label, seed, || {
        let host = make_unit_floats(n, seed);
        let expected = even_histogram_parallel(&host, &unit_bins());
        Ok(Input { device: device.upload(&host)?, host, expected, label: case.label.clone(), seed })
    })
}

/// The prepare function of a byte step.
fn byte_prepare(step: ByteStep) -> gpu_harness::workload::PrepareFn {
    macro_rules! prepare_for {
        ($($step:ident),*) => {
            match step {
                $(ByteStep::$step => |device: &Device, case: &Case, seed: u64| prepare_bytes(ByteStep::$step, device, case, seed),)*
            }
        };
    }
    prepare_for!(GlobalAtomics, SharedAtomics, VectorLoads, PerWarp, LaneCopies, Runs, Packed, Addresses)
}

/// A byte step on its case's input: what is timed is zeroing the bins and the kernel.
struct ByteCase {
    histogram: ByteHistogram,
    input: Arc<Input<u8>>,
    bins: DeviceBuffer<u32>,
}

fn prepare_bytes(step: ByteStep, device: &Device, case: &Case, seed: u64) -> Result<Box<dyn Prepared>> {
    let input = byte_input(device, case, seed)?;
    let histogram = ByteHistogram::new(device, step)?;
    histogram.plan(input.host.len())?;
    Ok(Box::new(ByteCase { histogram, input, bins: device.alloc(BYTE_BINS)? }))
}

impl Prepared for ByteCase {
    fn queue(&mut self) -> Result<()> {
        self.histogram.count(self.input.device.as_view(), &mut self.bins)
    }

    fn check(&mut self) -> Result<Checked> {
        self.bins.fill_words(0xdead_beef)?;
        self.queue()?;
        Ok(self.input.check(self.histogram.step().name(), &self.bins.to_host()?))
    }
}

/// An f32 step on its case's input.
struct EvenCase {
    histogram: EvenHistogram,
    bins: EvenBins,
    input: Arc<Input<f32>>,
    counts: DeviceBuffer<u32>,
    name: &'static str,
}

fn prepare_even<const LANES: bool>(device: &Device, case: &Case, seed: u64) -> Result<Box<dyn Prepared>> {
    let step = if LANES { EvenStep::LaneCopies } else { EvenStep::OneCopy };
    let input = f32_input(device, case, seed)?;
    let bins = unit_bins();
    let histogram = EvenHistogram::new(device, step)?;
    histogram.plan(input.host.len(), &bins)?;
    let counts = device.alloc(bins.bins() as usize)?;
    Ok(Box::new(EvenCase { histogram, bins, input, counts, name: step.name() }))
}

impl Prepared for EvenCase {
    fn queue(&mut self) -> Result<()> {
        self.histogram.count(self.input.device.as_view(), &self.bins, &mut self.counts)
    }

    fn check(&mut self) -> Result<Checked> {
        self.counts.fill_words(0xdead_beef)?;
        self.queue()?;
        Ok(self.input.check(self.name, &self.counts.to_host()?))
    }
}
