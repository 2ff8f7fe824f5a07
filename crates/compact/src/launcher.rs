//! The launcher of every step: compaction of device buffers and host slices, by a mask or by a
//! predicate, into an output the caller sizes or the launcher allocates.

use std::marker::PhantomData;

use gpu_harness::{Device, DeviceBuffer, DeviceView, GpuError, Kernel, KernelArg, Launch, Result};
use scan::{Scan, ScanKind, TileState};

use crate::element::{CompactElement, Predicate};
use crate::plan::{COMPACT_TILE, CompactStep, Selection, compact_plan, kernel_name};
use scan::plan::LaunchPlan;

/// What a compaction on the device keeps: the elements whose mask byte is nonzero (one byte per
/// element), or those that pass a test.
#[derive(Clone, Copy)]
pub enum DeviceKeep<'a, T: CompactElement> {
    Mask(DeviceView<'a, u8>),
    Test(Predicate<T>),
}

impl<T: CompactElement> DeviceKeep<'_, T> {
    fn selection(&self) -> Selection {
        match self {
            DeviceKeep::Mask(_) => Selection::Mask,
            DeviceKeep::Test(_) => Selection::Test,
        }
    }

    /// Adds `(input, mask)` or `(input, test, threshold)` to a launch.
    fn args<'l>(&self, launch: Launch<'l>, input: DeviceView<'_, T>) -> Launch<'l> {
        match *self {
            DeviceKeep::Mask(mask) => launch.arg(input).arg(mask),
            DeviceKeep::Test(predicate) => {
                let (code, threshold) = predicate.code_and_threshold();
                launch.arg(input).arg(code).arg(threshold)
            }
        }
    }
}

/// A compaction into a buffer the launcher allocated: the kept elements are its first `len`.
pub struct Compacted<T: CompactElement> {
    pub buffer: DeviceBuffer<T>,
    pub len: usize,
}

impl<T: CompactElement> Compacted<T> {
    /// The kept elements, on the host.
    pub fn to_host(&self) -> Result<Vec<T>> {
        if self.len == 0 {
            return Ok(Vec::new());
        }
        self.buffer.view(..self.len)?.to_host()
    }
}

/// The kernels of one selection (mask or test) for a step: one, or the two around the scan.
struct StepKernels {
    first: Kernel,
    second: Option<Kernel>,
}

// ANCHOR: launcher
/// Compactions of `T` by one step: its kernels, compiled once, and its scratch, reused from call
/// to call.
///
/// ```no_run
/// # fn main() -> gpu_harness::Result<()> {
/// use compact::{Compact, Predicate};
/// let device = gpu_harness::Device::shared()?;
/// let mut compact = Compact::<f32>::new(&device)?;
/// let input = [3.0, 1.0, 8.0, 4.0, 6.0, 5.0, 2.0, 7.0];
/// assert_eq!(compact.by_mask_host(&input, &[1, 0, 1, 0, 1, 0, 1, 0])?, [3.0, 8.0, 6.0, 2.0]);
/// assert_eq!(compact.by_predicate_host(&input, Predicate::Greater(4.5))?, [8.0, 6.0, 5.0, 7.0]);
/// # Ok(()) }
/// ```
pub struct Compact<T: CompactElement> {
    device: Device,
    step: CompactStep,
    masked: StepKernels,
    tested: StepKernels,
    /// Steps 1 and 2: the scan of the flags or of the tiles' counts.
    scan: Option<Scan<u32>>,
    /// Step 1: a flag, then a place, per element; step 2: a count, then an end, per tile.
    scratch: DeviceBuffer<u32>,
    /// Step 3: the tiles' status words and the tile counter.
    state: TileState,
    /// How many elements the last compaction kept, written by its last kernel.
    kept: DeviceBuffer<u32>,
    element: PhantomData<T>,
}

impl<T: CompactElement> Compact<T> {
    /// The single pass ([`CompactStep::SinglePass`]), the fastest step.
    pub fn new(device: &Device) -> Result<Self> {
        Self::with_step(device, CompactStep::SinglePass)
    }

    /// The given step.
    pub fn with_step(device: &Device, step: CompactStep) -> Result<Self> {
        let kernels = |selection: Selection| -> Result<StepKernels> {
            let kernel =
                |base: &str| crate::compile(device, &kernel_name(base, selection, T::SUFFIX));
            Ok(match step {
                CompactStep::FlagsScanScatter => StepKernels {
                    first: kernel("compact_write_flags")?,
                    second: Some(kernel("compact_scatter_flagged")?),
                },
                CompactStep::CountScanScatter => StepKernels {
                    first: kernel("compact_count_tiles")?,
                    second: Some(kernel("compact_scatter_tiles")?),
                },
                CompactStep::SinglePass => {
                    StepKernels { first: kernel("compact_single_pass")?, second: None }
                }
            })
        };
        let scan = match step {
            CompactStep::SinglePass => None,
            _ => Some(Scan::<u32>::new(device)?),
        };
        Ok(Compact {
            device: device.clone(),
            step,
            masked: kernels(Selection::Mask)?,
            tested: kernels(Selection::Test)?,
            scan,
            scratch: device.alloc(0)?,
            state: TileState::new(device)?,
            kept: device.alloc(1)?,
            element: PhantomData,
        })
    }

    /// The step this compaction runs.
    pub fn step(&self) -> CompactStep {
        self.step
    }

    /// The launch plan of a compaction of `n` elements on this device.
    pub fn plan(&self, selection: Selection, n: usize) -> Result<LaunchPlan> {
        compact_plan(self.step, selection, T::SUFFIX, n, self.device.facts().shape())
    }

    /// Makes room in the scratch for `n` elements (so that no allocation happens in a timed call).
    pub fn reserve(&mut self, n: usize) -> Result<()> {
        self.plan(Selection::Mask, n)?;
        let tiles = COMPACT_TILE.tiles(n as u64) as usize;
        let words = match self.step {
            CompactStep::FlagsScanScatter => n,
            CompactStep::CountScanScatter => tiles,
            CompactStep::SinglePass => 0,
        };
        if self.scratch.len() < words {
            self.scratch = self.device.alloc(words)?;
        }
        if let Some(scan) = &mut self.scan {
            scan.reserve(words)?;
        }
        self.state.reserve(tiles)
    }

    /// Keeps the elements of `input` whose byte of `mask` is nonzero, in order, in `output`;
    /// returns how many. An error if `mask` is not as long as `input`, or if `output` cannot hold
    /// them all (then its elements hold the first ones kept, and nothing past it was written).
    pub fn by_mask(
        &mut self,
        input: DeviceView<'_, T>,
        mask: DeviceView<'_, u8>,
        output: &mut DeviceBuffer<T>,
    ) -> Result<usize> {
        self.compact(input, DeviceKeep::Mask(mask), output)
    }

    /// Keeps the elements of `input` that pass `predicate`, in order, in `output`; returns how
    /// many. An error if `output` cannot hold them all, as for [`Compact::by_mask`].
    pub fn by_predicate(
        &mut self,
        input: DeviceView<'_, T>,
        predicate: Predicate<T>,
        output: &mut DeviceBuffer<T>,
    ) -> Result<usize> {
        self.compact(input, DeviceKeep::Test(predicate), output)
    }

    /// Either of the above; waits for the count.
    pub fn compact(
        &mut self,
        input: DeviceView<'_, T>,
        keep: DeviceKeep<'_, T>,
        output: &mut DeviceBuffer<T>,
    ) -> Result<usize> {
        self.queue(input, keep, output)?;
        if input.is_empty() {
            return Ok(0);
        }
        let kept = self.kept()?;
        if kept > output.len() {
            return Err(GpuError::BadInput(format!(
                "{kept} of {} elements were kept, but the output holds {}: it has the first {} of \
                 them, and \
                 nothing past it was written (an output as long as the input always suffices)",
                input.len(),
                output.len(),
                output.len()
            )));
        }
        Ok(kept)
    }

    /// Compacts into a buffer the launcher allocates (as long as the input).
    pub fn compact_new(
        &mut self,
        input: DeviceView<'_, T>,
        keep: DeviceKeep<'_, T>,
    ) -> Result<Compacted<T>> {
        let mut buffer = self.device.alloc::<T>(input.len())?;
        let len = self.compact(input, keep, &mut buffer)?;
        Ok(Compacted { buffer, len })
    }

    /// The compaction of host slices by a mask, on the device.
    pub fn by_mask_host(&mut self, input: &[T], mask: &[u8]) -> Result<Vec<T>> {
        let (values, flags) = (self.device.upload(input)?, self.device.upload(mask)?);
        self.compact_new(values.as_view(), DeviceKeep::Mask(flags.as_view()))?.to_host()
    }

    /// The compaction of a host slice by a predicate, on the device.
    pub fn by_predicate_host(&mut self, input: &[T], predicate: Predicate<T>) -> Result<Vec<T>> {
        let values = self.device.upload(input)?;
        self.compact_new(values.as_view(), DeviceKeep::Test(predicate))?.to_host()
    }

    /// How many elements the last compaction kept (waits for it).
    pub fn kept(&self) -> Result<usize> {
        Ok(self.kept.to_host()?[0] as usize)
    }

    /// Queues a compaction without waiting: the count stays on the device ([`Compact::kept`]
    /// reads it). This is what the benches time.
    pub fn queue(
        &mut self,
        input: DeviceView<'_, T>,
        keep: DeviceKeep<'_, T>,
        output: &mut DeviceBuffer<T>,
    ) -> Result<()> {
        let n = input.len();
        if let DeviceKeep::Mask(mask) = keep {
            if mask.len() != n {
                return Err(GpuError::BadInput(format!(
                    "a compaction of {n} elements by a mask of {} bytes",
                    mask.len()
                )));
            }
        }
        let plan = self.plan(keep.selection(), n)?;
        if plan.launches.is_empty() {
            return self.kept.fill_words(0);
        }
        self.reserve(n)?;
        let capacity = output.len() as u64;
        let kernels = match keep.selection() {
            Selection::Mask => &self.masked,
            Selection::Test => &self.tested,
        };
        let (first, last) = (plan.launches.first().unwrap(), plan.launches.last().unwrap());
        match self.step {
            CompactStep::FlagsScanScatter | CompactStep::CountScanScatter => {
                // Step 1: flags, then places (an exclusive scan in place), then the scatter. Step
                // 2: tile counts, then tile ends (an inclusive scan in place), then the scatter.
                // Step 1's grid-stride kernels take a signed n, step 2's tile kernels an unsigned
                // one.
                let (kind, scanned, count): (ScanKind, usize, KernelArg) = match self.step {
                    CompactStep::FlagsScanScatter => (ScanKind::Exclusive, n, (n as i64).into()),
                    _ => (ScanKind::Inclusive, first.config.grid.0 as usize, (n as u64).into()),
                };
                let launch = self.device.launch(&kernels.first, first.config);
                keep.args(launch, input).arg(&mut self.scratch).arg(count).run()?;
                let scan = self.scan.as_mut().expect("steps 1 and 2 scan");
                scan.scan_in_place(kind, &mut self.scratch, ..scanned)?;
                let launch = self
                    .device
                    .launch(kernels.second.as_ref().expect("steps 1 and 2 scatter"), last.config);
                keep.args(launch, input)
                    .arg(&self.scratch)
                    .arg(&mut *output)
                    .arg(capacity)
                    .arg(&mut self.kept)
                    .arg(count)
                    .run()
            }
            CompactStep::SinglePass => {
                let launch = self.device.launch(&kernels.first, first.config);
                let launch =
                    keep.args(launch, input).arg(&mut *output).arg(capacity).arg(&mut self.kept);
                self.state.run(launch, n as u64)
            }
        }
    }
}
// ANCHOR_END: launcher
