//! What every sum-reduction launcher offers, and the correctness suite they all share.
//!
//! A reduction crate implements [`SumReduction`] for its launcher and runs the whole suite with
//! one line in its test file: `TestSuite::new().sum_reduction_suite::<MyLauncher>()`.

use std::fmt;
use std::marker::PhantomData;

use crate::bench::BenchRun;
use crate::testing::{
    Failed, TestResult, TestRng, TestSuite, check_sum, exact_integer_bound, fits_test_time, rows, test_size,
};
use crate::{Device, DeviceBuffer, DeviceView, GpuError, GpuShape, Kernel, KernelSource, LaunchConfig, Result};

/// One kernel launch of a reduction: which kernel, its shape, and how many values it turns into
/// how many.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PassPlan {
    pub kernel: &'static str,
    pub config: LaunchConfig,
    pub inputs: u64,
    pub outputs: u64,
}

/// How a reduction of `n` values runs: its kernel passes in order, then how many values the host
/// adds up at the end. Launch plans are pure functions of `n`, snapshot-tested without a GPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReductionPlan {
    pub n: u64,
    pub passes: Vec<PassPlan>,
    /// How many values the host adds at the end (0 when the device finishes).
    pub host_adds: u64,
    /// Whether the last pass leaves the final result on the device.
    pub on_device: bool,
}

impl fmt::Display for ReductionPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let finish = if self.on_device {
            "the result stays on the device".to_string()
        } else {
            format!("then the host adds {} value(s)", self.host_adds)
        };
        writeln!(f, "n = {}: {} kernel pass(es), {finish}", self.n, self.passes.len())?;
        for (i, pass) in self.passes.iter().enumerate() {
            let LaunchConfig { grid, block, shared_bytes } = pass.config;
            writeln!(
                f,
                "  pass {}: {} grid {}x{}x{} block {}x{}x{} shared {} B: {} -> {}",
                i + 1,
                pass.kernel,
                grid.0,
                grid.1,
                grid.2,
                block.0,
                block.1,
                block.2,
                shared_bytes,
                pass.inputs,
                pass.outputs
            )?;
        }
        Ok(())
    }
}

/// A launcher that sums f32 on the device.
pub trait SumReduction: Sized + Send + 'static {
    /// Compiles (or fetches from the cache) the kernels and prepares an empty launcher.
    fn create(device: &Device) -> Result<Self>;

    /// Sizes the scratch buffers for inputs of up to `n` elements (allocating only when they must
    /// grow), so that no allocation happens inside a timed call.
    fn reserve(&mut self, n: usize) -> Result<()>;

    /// Fills every scratch buffer with NaN, so a partial result the kernel forgot to write turns
    /// the sum into NaN and fails the test.
    fn poison_scratch(&mut self) -> Result<()>;

    /// Sums `input` on the device; an empty input sums to 0.0.
    fn sum(&mut self, input: DeviceView<'_, f32>) -> Result<f32>;

    /// Sizes that sit on this launcher's own boundaries (block size ± 1, items per block ± 1, ...),
    /// tested on top of the shared [`EDGE_SIZES`].
    fn boundary_sizes() -> Vec<usize> {
        Vec::new()
    }
}

/// Sizes every reduction is tested at: empty, one element, around a warp, around a 256-thread
/// block, a page, and large sizes with and without a power of two.
pub const EDGE_SIZES: &[usize] = &[0, 1, 31, 32, 33, 255, 256, 257, 4096, 1 << 20, (1 << 20) + 3];

/// Sums `host` with a fresh upload, poisoning the launcher's scratch first.
fn sum_of<R: SumReduction>(device: &Device, reducer: &mut R, host: &[f32]) -> Result<f32> {
    let input = device.upload(host)?;
    reducer.reserve(host.len())?;
    reducer.poison_scratch()?;
    reducer.sum(input.as_view())
}

impl TestSuite {
    /// Adds the shared correctness suite for the sum reduction `R`.
    pub fn sum_reduction_suite<R: SumReduction>(self) -> Self {
        let tag = crate::testing::short_type_name::<R>();
        let mut sizes: Vec<usize> = EDGE_SIZES.iter().copied().chain(R::boundary_sizes()).collect();
        sizes.sort_unstable();
        sizes.dedup();
        let mut suite = self;
        for n in sizes {
            suite = suite
                .gpu_if(
                    format!("sum_suite::{tag}::integers_exact::n_{n}"),
                    move |d| fits_test_time(d, n),
                    move |device| {
                        let mut rng = TestRng::new();
                        let input = rng.small_integers_f32(n, exact_integer_bound(n));
                        let got = sum_of(device, &mut R::create(device)?, &input)?;
                        check_sum(&rng, "integer-valued floats", &input, got, true)
                    },
                )
                .gpu_if(
                    format!("sum_suite::{tag}::random_floats::n_{n}"),
                    move |d| fits_test_time(d, n),
                    move |device| {
                        let mut rng = TestRng::new();
                        let input = rng.uniform_f32(n, -1.0, 1.0);
                        let got = sum_of(device, &mut R::create(device)?, &input)?;
                        check_sum(&rng, "uniform floats in [-1, 1)", &input, got, false)
                    },
                );
        }
        suite
            .gpu(format!("sum_suite::{tag}::random_sizes"), |device| {
                let mut rng = TestRng::new();
                let mut reducer = R::create(device)?;
                for _ in 0..4 {
                    let n = rng.size_in(1..=test_size(device, 3_000_000, 300_000));
                    let input = rng.small_integers_f32(n, exact_integer_bound(n));
                    let got = sum_of(device, &mut reducer, &input)?;
                    check_sum(&rng, "integer-valued floats at a random size", &input, got, true)?;
                }
                Ok(())
            })
            .gpu_if(
                format!("sum_suite::{tag}::large_non_power_of_two"),
                |d| fits_test_time(d, (3 << 22) + 11),
                |device| {
                    let mut rng = TestRng::new();
                    let n = (3 << 22) + 11;
                    let input = rng.small_integers_f32(n, exact_integer_bound(n));
                    let got = sum_of(device, &mut R::create(device)?, &input)?;
                    check_sum(&rng, "integer-valued floats", &input, got, true)
                },
            )
            .gpu(format!("sum_suite::{tag}::view_at_odd_offset"), |device| {
                let mut rng = TestRng::new();
                let host = rng.small_integers_f32(100_003, 8);
                let buffer = device.upload(&host)?;
                let mut reducer = R::create(device)?;
                for (start, end) in [(1, host.len() - 2), (3, 3), (7, 8), (5, 4100)] {
                    reducer.reserve(end - start)?;
                    reducer.poison_scratch()?;
                    let got = reducer.sum(buffer.view(start..end)?)?;
                    check_sum(&rng, &format!("view {start}..{end}"), &host[start..end], got, true)?;
                }
                Ok(())
            })
            .gpu(format!("sum_suite::{tag}::reuses_scratch_across_sizes"), |device| {
                let mut rng = TestRng::new();
                let mut reducer = R::create(device)?;
                for n in [1 << 20, 5, (1 << 16) + 1, 0, 1 << 21] {
                    let input = rng.small_integers_f32(n, exact_integer_bound(n));
                    let got = sum_of(device, &mut reducer, &input)?;
                    check_sum(&rng, "one launcher, many sizes", &input, got, true)?;
                }
                Ok(())
            })
            .gpu(format!("sum_suite::{tag}::nan_and_infinity_propagate"), |device| {
                let mut reducer = R::create(device)?;
                let mut input = vec![1.0f32; 1000];
                let mut check = |input: &[f32], expect: f32| -> TestResult {
                    let got = sum_of(device, &mut reducer, input)?;
                    let same = (got.is_nan() && expect.is_nan()) || got == expect;
                    if !same {
                        return Err(format!("expected {expect}, got {got}").into());
                    }
                    Ok(())
                };
                input[517] = f32::NAN;
                check(&input, f32::NAN)?;
                input[517] = f32::INFINITY;
                check(&input, f32::INFINITY)?;
                input[3] = f32::NEG_INFINITY;
                check(&input, f32::NAN)
            })
    }
}

impl ReductionPlan {
    /// The plan of a kernel that reduces `n` values to one partial per block in a single pass,
    /// with `shared_bytes` of dynamic shared memory, the partials then added by the host.
    /// `n == 0` launches nothing.
    pub fn single_pass(kernel: &'static str, n: usize, blocks: u32, threads: u32, shared_bytes: u32) -> Self {
        let pass = PassPlan {
            kernel,
            config: LaunchConfig::linear(blocks, threads, shared_bytes),
            inputs: n as u64,
            outputs: u64::from(blocks),
        };
        let passes = if n == 0 { vec![] } else { vec![pass] };
        let host_adds = if n == 0 { 0 } else { u64::from(blocks) };
        ReductionPlan { n: n as u64, passes, host_adds, on_device: false }
    }

    /// Bytes a host-finished reduction must move: each input read once, each partial written once.
    pub fn bytes_moved(&self) -> u64 {
        4 * (self.n + self.host_adds)
    }
}

/// Blocks of `items_per_block` elements that cover `n`.
pub fn blocks_covering(n: usize, items_per_block: u32) -> u32 {
    n.div_ceil(items_per_block as usize) as u32
}

/// The grid of a grid-stride kernel: enough blocks of `threads` to fill the GPU once, or fewer
/// when `n` gives each thread less than `items_per_thread` elements.
pub fn grid_stride_blocks(n: usize, threads: u32, items_per_thread: u32, gpu: GpuShape) -> u32 {
    blocks_covering(n, threads * items_per_thread).min(gpu.resident_blocks(threads))
}

/// Rejects inputs a kernel with 32-bit (`unsigned int`) element counts cannot address.
pub fn check_fits_u32(step: &str, n: usize) -> Result<()> {
    if n as u64 > u64::from(u32::MAX) {
        return Err(GpuError::TooLarge { what: step.to_string(), n: n as u64, max: u64::from(u32::MAX) });
    }
    Ok(())
}

/// One step of the reduction ladder whose kernel writes one partial sum per block, for the host
/// to add. A step is its kernel and its launch plan; [`HostFinishedSum`] does the rest.
///
/// The kernel's parameters are `(const float* input, float* partial, unsigned int n)`.
pub trait HostFinishedStep: Send + Sync + 'static {
    /// The step's name in benches and the book, e.g. `naive`.
    const STEP: &'static str;
    /// The kernel source file.
    const SOURCE: KernelSource;
    /// The kernel's name in [`Self::SOURCE`].
    const KERNEL: &'static str;

    /// How `n` elements are reduced on a GPU of this shape. A pure function, so that plans are
    /// snapshot-tested without a GPU.
    fn plan(n: usize, gpu: GpuShape) -> Result<ReductionPlan>;

    /// `-D NAME=VALUE` defines the kernel is compiled with (compile-time constants).
    fn defines() -> Vec<(&'static str, String)> {
        Vec::new()
    }

    /// Sizes on this step's own boundaries, added to the shared suite's [`EDGE_SIZES`].
    fn boundary_sizes() -> Vec<usize> {
        Vec::new()
    }
}

// ANCHOR: host_finished
/// The launcher of a [`HostFinishedStep`]: the compiled kernel and a scratch buffer of block
/// partials, which grows only when a larger input arrives (never inside a timed loop that was
/// warmed up). The host adds the partials in f64: they are a small fraction of the input, and
/// finishing on the device is what reduce-multi-level and reduce-atomic teach.
pub struct HostFinishedSum<S: HostFinishedStep> {
    device: Device,
    kernel: Kernel,
    partials: DeviceBuffer<f32>,
    step: PhantomData<S>,
}

impl<S: HostFinishedStep> HostFinishedSum<S> {
    /// Compiles the step's kernel (once per process) and starts with no scratch.
    pub fn new(device: &Device) -> Result<Self> {
        let kernel = device.kernel_with_defines(&S::SOURCE, S::KERNEL, &S::defines())?;
        Ok(HostFinishedSum { device: device.clone(), kernel, partials: device.alloc(0)?, step: PhantomData })
    }

    /// The plan for `n` elements on this device.
    pub fn plan(&self, n: usize) -> Result<ReductionPlan> {
        S::plan(n, self.device.facts().shape())
    }

    /// Makes the partials buffer large enough for `n` inputs.
    pub fn reserve(&mut self, n: usize) -> Result<()> {
        let needed = self.plan(n)?.host_adds as usize;
        if self.partials.len() < needed {
            self.partials = self.device.alloc(needed)?;
        }
        Ok(())
    }

    /// Queues the kernel; afterwards [`Self::partials`] holds one sum per block. Returns the number
    /// of partials. Does not wait for the GPU.
    pub fn block_partials(&mut self, input: DeviceView<'_, f32>) -> Result<usize> {
        let plan = self.plan(input.len())?;
        self.reserve(input.len())?;
        for pass in &plan.passes {
            self.device
                .launch(&self.kernel, pass.config)
                .arg(input)
                .arg(&mut self.partials)
                .arg(input.len() as u32)
                .run()?;
        }
        Ok(plan.host_adds as usize)
    }

    /// Sums `input` on the device: the kernel, then the partials added on the host in f64.
    pub fn sum_device(&mut self, input: DeviceView<'_, f32>) -> Result<f32> {
        let count = self.block_partials(input)?;
        let partials = self.partials.view(..count)?.to_host()?;
        Ok(partials.iter().map(|&p| f64::from(p)).sum::<f64>() as f32)
    }

    /// Sums a host slice: uploads it, then [`Self::sum_device`].
    pub fn sum(&mut self, input: &[f32]) -> Result<f32> {
        let input = self.device.upload(input)?;
        self.sum_device(input.as_view())
    }

    /// The first `count` block partials of the last launch.
    pub fn partials(&self, count: usize) -> Result<DeviceView<'_, f32>> {
        self.partials.view(..count)
    }
}
// ANCHOR_END: host_finished

impl<S: HostFinishedStep> SumReduction for HostFinishedSum<S> {
    fn create(device: &Device) -> Result<Self> {
        Self::new(device)
    }

    fn reserve(&mut self, n: usize) -> Result<()> {
        HostFinishedSum::reserve(self, n)
    }

    fn poison_scratch(&mut self) -> Result<()> {
        self.partials.fill(f32::NAN)
    }

    fn sum(&mut self, input: DeviceView<'_, f32>) -> Result<f32> {
        self.sum_device(input)
    }

    fn boundary_sizes() -> Vec<usize> {
        S::boundary_sizes()
    }
}

/// Benches step `S` on `input` (the kernel alone: the host's final additions are not timed),
/// recording its effective bandwidth against the copy roof of the same size.
pub fn bench_step<S: HostFinishedStep>(bench: &mut BenchRun, input: &DeviceBuffer<f32>) -> Result<()> {
    let mut reducer = HostFinishedSum::<S>::new(bench.device())?;
    reducer.reserve(input.len())?;
    let bytes = reducer.plan(input.len())?.bytes_moved();
    bench.case(S::STEP, input.len(), bytes, || reducer.block_partials(input.as_view()).map(drop))
}

/// Sizes whose launch plans are frozen in each step's snapshot.
pub const PLAN_SNAPSHOT_SIZES: &[usize] = &[0, 1, 255, 256, 257, 4096, 1 << 20, (1 << 20) + 3, 1 << 28];

/// The launch plans of step `S` at [`PLAN_SNAPSHOT_SIZES`] on an H100/H200-shaped GPU, as text.
pub fn plan_snapshot<S: HostFinishedStep>() -> Result<String> {
    let plans = PLAN_SNAPSHOT_SIZES
        .iter()
        .map(|&n| S::plan(n, GpuShape::HOPPER_132_SMS).map(|p| p.to_string()))
        .collect::<Result<Vec<_>>>()?;
    Ok(plans.join("\n"))
}

/// A fixed integer-valued input of 5000 elements (values -8..=8), whose block partials are
/// exact in f32 and therefore the same on every run and every GPU.
pub fn fixed_integer_input() -> Vec<f32> {
    (0..5000).map(|i| ((i * 7) % 17) as f32 - 8.0).collect()
}

/// Runs step `S` on [`fixed_integer_input`] (scratch poisoned first) and returns its block
/// partials as text, after checking that they add up to the exact sum.
pub fn partials_snapshot<S: HostFinishedStep>(device: &Device) -> std::result::Result<String, Failed> {
    let input = fixed_integer_input();
    let buffer = device.upload(&input)?;
    let mut reducer = HostFinishedSum::<S>::new(device)?;
    reducer.reserve(input.len())?;
    SumReduction::poison_scratch(&mut reducer)?;
    let count = reducer.block_partials(buffer.as_view())?;
    let partials = reducer.partials(count)?.to_host()?;
    let total: f64 = partials.iter().map(|&p| f64::from(p)).sum();
    let expected: f64 = input.iter().map(|&x| f64::from(x)).sum();
    if total != expected {
        return Err(format!("{}: partials add up to {total}, expected {expected}: {partials:?}", S::STEP).into());
    }
    Ok(rows(&partials, 10))
}

/// Runs step `S` once on [`fixed_integer_input`] on a fresh CPU simulator and returns what the
/// launch did (warp instructions, divergence, barriers, bank conflicts, coalescing), as text.
pub fn counters_snapshot<S: HostFinishedStep>() -> std::result::Result<String, Failed> {
    let device = Device::simulator()?;
    let input = device.upload(&fixed_integer_input())?;
    HostFinishedSum::<S>::new(&device)?.block_partials(input.as_view())?;
    let counters = device.last_launch_counters().ok_or("the simulator recorded no launch")?;
    Ok(format!("{} on {} elements, 256 threads per block:\n{counters}", S::KERNEL, input.len()))
}

/// Adds, for each listed [`HostFinishedStep`], three snapshot tests to a [`TestSuite`]: its launch
/// plans (no GPU needed), its block partials of [`fixed_integer_input`] (on the GPU, or the
/// simulator), and the simulator's counters for that launch (NVRTC only). A macro,
/// so that the snapshots live in the calling crate's `tests/snapshots` (the crate needs `insta`
/// as a dev-dependency).
#[macro_export]
macro_rules! step_snapshot_tests {
    ($suite:expr, $($step:ty),+ $(,)?) => {{
        let suite = $suite;
        $(
            let step = <$step as $crate::reduction::HostFinishedStep>::STEP;
            let suite = suite
                .cpu(format!("{step}::launch_plans"), move || {
                    let plans = $crate::reduction::plan_snapshot::<$step>()?;
                    insta::assert_snapshot!(format!("{step}_launch_plans"), plans);
                    Ok(())
                })
                .gpu(format!("{step}::partials_of_fixed_input"), move |device| {
                    let partials = $crate::reduction::partials_snapshot::<$step>(device)?;
                    insta::assert_snapshot!(format!("{step}_partials_of_fixed_input"), partials);
                    Ok(())
                })
                .nvrtc_if(format!("{step}::simulator_counters"), $crate::testing::counters_comparable, move || {
                    let counters = $crate::reduction::counters_snapshot::<$step>()?;
                    insta::assert_snapshot!(format!("{step}_simulator_counters"), counters);
                    Ok(())
                });
        )+
        suite
    }};
}
