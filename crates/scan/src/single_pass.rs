//! Step 4: the scan in one pass, with decoupled look-back, and the crate's API: inclusive,
//! exclusive and segmented scans of f32, i32 and u32, of device buffers and host slices, of any
//! size, into another buffer or in place.

use std::marker::PhantomData;
use std::ops::RangeBounds;

use gpu_harness::{Device, DeviceBuffer, DeviceView, GpuError, Kernel, KernelArg, Result};

use crate::compile;
use crate::element::{ScanElement, ScanKind};
use crate::plan::{LaunchPlan, SinglePass, TileShape};
use crate::tile_state::TileState;

// ANCHOR: launcher
/// Single-pass scans of `T`: the compiled kernels and the tile state, reused from call to call.
///
/// ```no_run
/// # fn main() -> gpu_harness::Result<()> {
/// let device = gpu_harness::Device::shared()?;
/// let mut scan = scan::Scan::<u32>::new(&device)?;
/// assert_eq!(scan.inclusive_host(&[1, 2, 3, 4])?, [1, 3, 6, 10]);
/// assert_eq!(scan.exclusive_host(&[1, 2, 3, 4])?, [0, 1, 3, 6]);
/// # Ok(()) }
/// ```
pub struct Scan<T: ScanElement> {
    device: Device,
    form: SinglePass,
    shape: TileShape,
    inclusive: Kernel,
    exclusive: Kernel,
    segmented_inclusive: Kernel,
    segmented_exclusive: Kernel,
    state: TileState,
    element: PhantomData<T>,
}

impl<T: ScanElement> Scan<T> {
    /// The fastest single pass ([`SinglePass::FASTEST`]: the tile in shared memory by one bulk
    /// copy).
    pub fn new(device: &Device) -> Result<Self> {
        Self::with_form(device, SinglePass::FASTEST)
    }

    /// The given form of the single pass (the segmented scans always use the classic form).
    pub fn with_form(device: &Device, form: SinglePass) -> Result<Self> {
        let kernel = |name: String| compile(device, &name);
        let segmented = |kind: ScanKind| format!("segmented_scan_{}_{}", kind.name(), T::SUFFIX);
        Ok(Scan {
            device: device.clone(),
            form,
            shape: form.tile(),
            inclusive: kernel(form.kernel(ScanKind::Inclusive, T::SUFFIX))?,
            exclusive: kernel(form.kernel(ScanKind::Exclusive, T::SUFFIX))?,
            segmented_inclusive: kernel(segmented(ScanKind::Inclusive))?,
            segmented_exclusive: kernel(segmented(ScanKind::Exclusive))?,
            state: TileState::new(device)?,
            element: PhantomData,
        })
    }

    /// The launch plan of a scan of `n` elements on this device.
    pub fn plan(&self, n: usize) -> Result<LaunchPlan> {
        plan(self.form, ScanKind::Inclusive, T::SUFFIX, n)
    }

    /// Makes room in the tile state for `n` elements (so that no allocation happens in a timed
    /// call).
    pub fn reserve(&mut self, n: usize) -> Result<()> {
        self.plan(n)?;
        self.state.reserve(self.shape.tiles(n as u64) as usize)
    }

    /// The tile state (status words and counter), for tests.
    pub fn state(&self) -> &TileState {
        &self.state
    }

    /// Scans `input` into the first `input.len()` elements of `output`.
    pub fn scan(
        &mut self,
        kind: ScanKind,
        input: DeviceView<'_, T>,
        output: &mut DeviceBuffer<T>,
    ) -> Result<()> {
        self.scan_to(kind, input, output, 0)
    }

    /// Scans `input` into `output` from element `at` on.
    pub fn scan_to(
        &mut self,
        kind: ScanKind,
        input: DeviceView<'_, T>,
        output: &mut DeviceBuffer<T>,
        at: usize,
    ) -> Result<()> {
        let n = input.len();
        let end = at.checked_add(n).filter(|&end| end <= output.len()).ok_or_else(|| {
            GpuError::BadInput(format!(
                "a scan of {n} elements into a buffer of {} from element {at}: the output is too \
                 small",
                output.len()
            ))
        })?;
        let target = output.view(at..end)?;
        self.queue(kind, input.into(), target.into(), n)
    }

    /// Scans `data[range]` in place.
    pub fn scan_in_place(
        &mut self,
        kind: ScanKind,
        data: &mut DeviceBuffer<T>,
        range: impl RangeBounds<usize>,
    ) -> Result<()> {
        let view = data.view(range)?;
        self.queue(kind, view.into(), view.into(), view.len())
    }

    /// The inclusive scan of `input` into `output[..input.len()]`.
    pub fn inclusive(
        &mut self,
        input: DeviceView<'_, T>,
        output: &mut DeviceBuffer<T>,
    ) -> Result<()> {
        self.scan(ScanKind::Inclusive, input, output)
    }

    /// The exclusive scan of `input` into `output[..input.len()]`.
    pub fn exclusive(
        &mut self,
        input: DeviceView<'_, T>,
        output: &mut DeviceBuffer<T>,
    ) -> Result<()> {
        self.scan(ScanKind::Exclusive, input, output)
    }

    /// The scan of a host slice, on the device.
    pub fn scan_host(&mut self, kind: ScanKind, input: &[T]) -> Result<Vec<T>> {
        let mut data = self.device.upload(input)?;
        self.scan_in_place(kind, &mut data, ..)?;
        data.to_host()
    }

    pub fn inclusive_host(&mut self, input: &[T]) -> Result<Vec<T>> {
        self.scan_host(ScanKind::Inclusive, input)
    }

    pub fn exclusive_host(&mut self, input: &[T]) -> Result<Vec<T>> {
        self.scan_host(ScanKind::Exclusive, input)
    }

    /// The segmented scan of `input` into `output[..input.len()]`: the scan starts again at every
    /// element whose head flag (`heads`, one byte per element) is nonzero.
    pub fn segmented(
        &mut self,
        kind: ScanKind,
        input: DeviceView<'_, T>,
        heads: DeviceView<'_, u8>,
        output: &mut DeviceBuffer<T>,
    ) -> Result<()> {
        let n = input.len();
        if heads.len() != n {
            return Err(GpuError::BadInput(format!(
                "a segmented scan of {n} values with {} head flags",
                heads.len()
            )));
        }
        if output.len() < n {
            return Err(GpuError::BadInput(format!(
                "a segmented scan of {n} elements into a buffer of {}: the output is too small",
                output.len()
            )));
        }
        let plan = plan(SinglePass::EarlyLoads, kind, T::SUFFIX, n)?;
        let Some(planned) = plan.launches.first() else { return Ok(()) };
        self.state.reserve(SinglePass::EarlyLoads.tile().tiles(n as u64) as usize)?;
        let kernel = match kind {
            ScanKind::Inclusive => &self.segmented_inclusive,
            ScanKind::Exclusive => &self.segmented_exclusive,
        };
        let launch =
            self.device.launch(kernel, planned.config).arg(input).arg(heads).arg(&mut *output);
        self.state.run(launch, n as u64)
    }

    /// The segmented scan of host slices, on the device.
    pub fn segmented_host(&mut self, kind: ScanKind, input: &[T], heads: &[u8]) -> Result<Vec<T>> {
        let (values, flags) = (self.device.upload(input)?, self.device.upload(heads)?);
        let mut output = self.device.alloc::<T>(input.len())?;
        self.segmented(kind, values.as_view(), flags.as_view(), &mut output)?;
        output.to_host()
    }

    /// Queues the scan of `n` elements from `input` to `output` (addresses, possibly the same).
    fn queue(
        &mut self,
        kind: ScanKind,
        input: KernelArg,
        output: KernelArg,
        n: usize,
    ) -> Result<()> {
        let plan = plan(self.form, kind, T::SUFFIX, n)?;
        let Some(planned) = plan.launches.first() else { return Ok(()) };
        self.state.reserve(self.shape.tiles(n as u64) as usize)?;
        let kernel = match kind {
            ScanKind::Inclusive => &self.inclusive,
            ScanKind::Exclusive => &self.exclusive,
        };
        let launch = self.device.launch(kernel, planned.config).arg(input).arg(output);
        self.state.run(launch, n as u64)
    }
}
// ANCHOR_END: launcher

/// The plan of a single-pass scan of `n` elements of type `suffix`.
fn plan(form: SinglePass, kind: ScanKind, suffix: &str, n: usize) -> Result<LaunchPlan> {
    form.plan(kind, suffix, n)
}
