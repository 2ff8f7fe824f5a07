//! The steps as the tour and the benches measure them: each is prepared on a random input of the
//! case's size, timed on exactly its launches, and checked against the CPU scan.

use std::any::Any;
use std::sync::{Arc, Mutex};

use gpu_harness::{Case, Checked, Device, DeviceBuffer, Prepared, Result, StepEntry};
use rand::SeedableRng;
use rand::rngs::SmallRng;

use crate::element::{ScanElement, ScanKind};
use crate::multi_pass::MultiPassScan;
use crate::one_block::OneBlockScan;
use crate::plan::{MultiPass, OneBlock, SinglePass};
use crate::reference::scan_mismatch;
use crate::single_pass::Scan;

/// The word outputs are poisoned with before a check: NaN as f32, an unlikely integer.
pub const POISON_WORD: u32 = 0xffc0_0001;

const CRATE: &str = env!("CARGO_PKG_NAME");

/// A random input on the device and its copy on the host.
pub struct RandomInput<T: ScanElement> {
    pub host: Vec<T>,
    pub device: DeviceBuffer<T>,
    pub seed: u64,
}

impl<T: ScanElement> RandomInput<T> {
    /// The result of a check of `got` against the CPU's `kind` scan of this input.
    pub fn check(&self, step: &str, kind: ScanKind, got: &[T]) -> Checked {
        match scan_mismatch(kind, &self.host, got) {
            None => Checked::Correct,
            Some(why) => Checked::Wrong(format!(
                "{step}: {why} (random {} input of {} elements from seed {})",
                T::SUFFIX,
                self.host.len(),
                self.seed
            )),
        }
    }
}

/// The random input of `n` elements of `T` drawn from `seed`: uniform in [-1, 1) for f32, every bit
/// pattern for integers. The last one made is kept, so the steps measured one after another at a
/// case share one input and one upload.
pub fn random_input<T: ScanElement>(device: &Device, n: usize, seed: u64) -> Result<Arc<RandomInput<T>>> {
    type Cached = (Device, Arc<dyn Any + Send + Sync>);
    static LAST: Mutex<Option<Cached>> = Mutex::new(None);
    let mut last = LAST.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((owner, any)) = last.as_ref() {
        if let Ok(input) = any.clone().downcast::<RandomInput<T>>() {
            if owner.is_same(device) && input.host.len() == n && input.seed == seed {
                return Ok(input);
            }
        }
    }
    *last = None; // free the previous input before making the next
    let host = T::random(&mut SmallRng::seed_from_u64(seed), n);
    let input = Arc::new(RandomInput { device: device.upload(&host)?, host, seed });
    *last = Some((device.clone(), input.clone()));
    Ok(input)
}

/// What a measured scan runs: its launches, from the input to an output buffer.
trait Measured<T: ScanElement>: Send + 'static {
    fn queue(&mut self, input: &RandomInput<T>, output: &mut DeviceBuffer<T>) -> Result<()>;
    fn kind(&self) -> ScanKind;
}

struct MeasuredCase<T: ScanElement, M> {
    step: &'static str,
    scan: M,
    input: Arc<RandomInput<T>>,
    output: DeviceBuffer<T>,
}

impl<T: ScanElement, M: Measured<T>> Prepared for MeasuredCase<T, M> {
    fn queue(&mut self) -> Result<()> {
        self.scan.queue(&self.input, &mut self.output)
    }

    fn check(&mut self) -> Result<Checked> {
        self.output.fill_words(POISON_WORD)?;
        self.queue()?;
        let got = self.output.to_host()?;
        Ok(self.input.check(self.step, self.scan.kind(), &got))
    }
}

fn prepared<T: ScanElement, M: Measured<T>>(
    device: &Device,
    case: &Case,
    seed: u64,
    step: &'static str,
    scan: M,
) -> Result<Box<dyn Prepared>> {
    let input = random_input::<T>(device, case.elements()?, seed)?;
    let output = device.alloc(input.host.len())?;
    Ok(Box::new(MeasuredCase { step, scan, input, output }))
}

impl<T: ScanElement> Measured<T> for OneBlockScan<T> {
    fn queue(&mut self, input: &RandomInput<T>, output: &mut DeviceBuffer<T>) -> Result<()> {
        self.scan(input.device.as_view(), output)
    }
    fn kind(&self) -> ScanKind {
        OneBlockScan::kind(self)
    }
}

impl<T: ScanElement> Measured<T> for MultiPassScan<T> {
    fn queue(&mut self, input: &RandomInput<T>, output: &mut DeviceBuffer<T>) -> Result<()> {
        self.inclusive(input.device.as_view(), output)
    }
    fn kind(&self) -> ScanKind {
        ScanKind::Inclusive
    }
}

/// A single-pass scan and the kind it computes.
struct SinglePassCase<T: ScanElement>(Scan<T>, ScanKind);

impl<T: ScanElement> Measured<T> for SinglePassCase<T> {
    fn queue(&mut self, input: &RandomInput<T>, output: &mut DeviceBuffer<T>) -> Result<()> {
        self.0.scan(self.1, input.device.as_view(), output)
    }
    fn kind(&self) -> ScanKind {
        self.1
    }
}

fn one_block<const STEP: u8>(device: &Device, case: &Case, seed: u64) -> Result<Box<dyn Prepared>> {
    let step = OneBlock::ALL[STEP as usize];
    prepared::<f32, _>(device, case, seed, step.step(), OneBlockScan::<f32>::new(device, step)?)
}

fn multi_pass<const STEP: u8>(device: &Device, case: &Case, seed: u64) -> Result<Box<dyn Prepared>> {
    let strategy = MultiPass::ALL[STEP as usize];
    let mut scan = MultiPassScan::<f32>::new(device, strategy)?;
    scan.reserve(case.elements()?)?;
    prepared::<f32, _>(device, case, seed, strategy.step(), scan)
}

fn single_pass_step<T: ScanElement>(
    device: &Device,
    case: &Case,
    seed: u64,
    step: &'static str,
    form: SinglePass,
    kind: ScanKind,
) -> Result<Box<dyn Prepared>> {
    let mut scan = Scan::<T>::with_form(device, form)?;
    scan.reserve(case.elements()?)?;
    prepared::<T, _>(device, case, seed, step, SinglePassCase(scan, kind))
}

fn single_pass<const FORM: u8>(device: &Device, case: &Case, seed: u64) -> Result<Box<dyn Prepared>> {
    let form = SinglePass::ALL[FORM as usize];
    single_pass_step::<f32>(device, case, seed, form.step(), form, ScanKind::Inclusive)
}

fn early_loads_i32(device: &Device, case: &Case, seed: u64) -> Result<Box<dyn Prepared>> {
    single_pass_step::<i32>(device, case, seed, "early-loads-i32", SinglePass::EarlyLoads, ScanKind::Exclusive)
}

/// The steps as the tour and the benches measure them (the registry, `course.toml`, says at what
/// sizes), then the peers.
pub fn steps() -> Vec<StepEntry> {
    let entry = |step, prepare| StepEntry { crate_name: CRATE, step, prepare };
    let mut steps = vec![
        entry("hillis-steele", one_block::<0>),
        entry("blelloch", one_block::<1>),
        entry("blelloch-padded", one_block::<2>),
        entry("scan-then-propagate", multi_pass::<0>),
        entry("reduce-then-scan", multi_pass::<1>),
        entry("single-pass", single_pass::<0>),
        entry("early-loads", single_pass::<1>),
        entry("early-loads-i32", early_loads_i32),
        entry("wide-look-back", single_pass::<2>),
    ];
    steps.extend(crate::peers::steps());
    steps
}
