//! scan's property tests (proptest, `gpu_test::props`): every scan of f32, i32 and u32 against the
//! CPU on drawn inputs (sizes around warps, blocks and tiles, offsets into a buffer, NaN,
//! infinities, subnormals, -0.0, huge and tiny values, integer extremes and wrap-around, all-equal
//! and skewed data). Integer scans must match exactly; an f32 prefix must match exactly where every
//! order of additions gives the same sum (NaN, an infinity, or an exact sum), else within
//! `reference::scan_tolerance`. Inputs are left as they were and nothing is written around the
//! output (poisoned guard words on both sides); the same input at another offset scans the same;
//! mismatched lengths and outputs too small are errors. A failure prints its smallest input and
//! the seed: `TEST_SEED=<seed> cargo test -p scan --test properties` replays it.

use std::cell::RefCell;

use gpu_harness::{Device, GpuError};
use gpu_test::props::proptest::prelude::*;
use gpu_test::props::proptest::sample::select;
use gpu_test::props::proptest::strategy::BoxedStrategy;
use gpu_test::props::{
    self, Drawn, Guarded, Input, exact_in_any_order, expect_bad_input, same_value,
};
use gpu_test::{TestResult, TestSuite};
use scan::plan::{MULTI_PASS_TILE, SINGLE_PASS_TILE};
use scan::reference::{scan_mismatch, scan_tolerance, segmented_mismatch};
use scan::{
    MultiPass, MultiPassScan, OneBlock, OneBlockScan, Scan, ScanElement, ScanKind, SinglePass,
};

const TILE: usize = (SINGLE_PASS_TILE.threads * SINGLE_PASS_TILE.items) as usize;

/// Cases per property (on a GPU, on the simulator).
const CASES: (u32, u32) = (256, 24);

/// Sizes around a warp, a block, a warp's part of a tile, a tile and a few tiles (and the multi
/// pass's tile and its square); any size up to 40,000 on the simulator, 2^21 on a GPU.
fn scan_sizes(device: &Device) -> BoxedStrategy<usize> {
    let warp_part = 32 * SINGLE_PASS_TILE.items as usize;
    let multi = MULTI_PASS_TILE as usize;
    let edges = [
        1,
        32,
        128,
        warp_part,
        TILE,
        2 * TILE,
        5 * TILE,
        multi,
        3 * multi,
        129 * TILE,
        multi * multi,
    ];
    props::sizes(&edges, props::max_len(device))
}

/// A prefix of f32 values: its f64 sum and magnitude, and the special values seen.
#[derive(Clone, Copy, Default)]
struct Prefix {
    sum: f64,
    sum_abs: f64,
    nan: bool,
    up: bool,
    down: bool,
}

impl Prefix {
    fn add(&mut self, x: f32) {
        self.nan |= x.is_nan();
        self.up |= x == f32::INFINITY;
        self.down |= x == f32::NEG_INFINITY;
        if x.is_finite() {
            self.sum += f64::from(x);
            self.sum_abs += f64::from(x).abs();
        }
    }

    /// The value every order of additions gives, where there is one.
    fn special(&self) -> Option<f32> {
        if self.nan || (self.up && self.down) {
            Some(f32::NAN)
        } else if self.up {
            Some(f32::INFINITY)
        } else if self.down {
            Some(f32::NEG_INFINITY)
        } else {
            None
        }
    }
}

/// Why `got` is not the f32 scan of `values` (segmented at nonzero `heads`, if given).
fn f32_scan_mismatch(
    kind: ScanKind,
    values: &[f32],
    heads: Option<&[u8]>,
    got: &[f32],
) -> Option<String> {
    if got.len() != values.len() {
        return Some(format!("{} results for {} inputs", got.len(), values.len()));
    }
    // Every prefix of an input whose sums are exact in any order is too.
    let exact = exact_in_any_order(values);
    let mut prefix = Prefix::default();
    for (i, (&x, &g)) in values.iter().zip(got).enumerate() {
        if heads.is_some_and(|h| h[i] != 0) {
            prefix = Prefix::default();
        }
        let before = prefix;
        prefix.add(x);
        let p = if kind == ScanKind::Inclusive { prefix } else { before };
        let (ok, want) = match p.special() {
            Some(want) => (same_value(g, want), format!("{want}")),
            None if exact => (same_value(g, p.sum as f32), format!("exactly {}", p.sum as f32)),
            None => {
                let tolerance = scan_tolerance(values.len(), p.sum_abs);
                ((f64::from(g) - p.sum).abs() <= tolerance, format!("{} ± {tolerance:e}", p.sum))
            }
        };
        if !ok {
            return Some(format!(
                "{} scan of {} values: element {i} is {g}, expected {want}",
                kind.name(),
                values.len()
            ));
        }
    }
    None
}

/// The scan element types, with their checks.
trait Element: ScanElement + Drawn {
    fn mismatch(
        kind: ScanKind,
        values: &[Self],
        heads: Option<&[u8]>,
        got: &[Self],
    ) -> Option<String>;
}

impl Element for f32 {
    fn mismatch(
        kind: ScanKind,
        values: &[f32],
        heads: Option<&[u8]>,
        got: &[f32],
    ) -> Option<String> {
        f32_scan_mismatch(kind, values, heads, got)
    }
}

macro_rules! exact_elements {
    ($($t:ty),*) => {$(
        impl Element for $t {
            fn mismatch(
                kind: ScanKind,
                values: &[$t],
                heads: Option<&[u8]>,
                got: &[$t],
            ) -> Option<String> {
                match heads {
                    Some(heads) => segmented_mismatch(kind, values, heads, got),
                    None => scan_mismatch(kind, values, got),
                }
            }
        }
    )*};
}
exact_elements!(i32, u32);

fn kinds() -> impl Strategy<Value = ScanKind> {
    select(ScanKind::BOTH.to_vec())
}

/// Scans `input` with `scan`, into a guarded output or in place, and checks the result, the
/// guards and (out of place) the input.
fn check_scan<T: Element>(
    device: &Device,
    scan: &mut Scan<T>,
    kind: ScanKind,
    input: &Input<T::Mix, T>,
    in_place: bool,
) -> TestResult {
    let values = input.values();
    let mut data = Guarded::input(device, &values, input.offset)?;
    let got = if in_place {
        let range = data.range();
        scan.scan_in_place(kind, data.buffer(), range)?;
        data.check_guards("an in-place scan")?;
        data.read()?
    } else {
        let mut output = Guarded::output(device, values.len())?;
        let at = output.start();
        scan.scan_to(kind, data.view()?, output.buffer(), at)?;
        output.check_guards("the output")?;
        data.check_unchanged("the input")?;
        output.read()?
    };
    match T::mismatch(kind, &values, None, &got) {
        None => Ok(()),
        Some(why) => {
            Err(format!("{}: {why}", if in_place { "in place" } else { "into another buffer" })
                .into())
        }
    }
}

fn typed<T: Element>(suite: TestSuite) -> TestSuite {
    let t = T::SUFFIX;
    suite
        .gpu(format!("properties::single_pass::{t}::scan_matches_the_reference"), |device| {
            let scans = RefCell::new(Vec::new());
            for form in SinglePass::ALL {
                scans.borrow_mut().push(Scan::<T>::with_form(device, form)?);
            }
            let inputs =
                props::input(scan_sizes(device), 7, T::sum_mixes(), T::arith_specials(), 3);
            let forms = select(SinglePass::ALL.to_vec());
            props::check(
                device,
                CASES,
                (inputs, kinds(), forms, any::<bool>()),
                |(input, kind, form, in_place)| {
                    let at = SinglePass::ALL.iter().position(|&f| f == form).unwrap_or(0);
                    check_scan(device, &mut scans.borrow_mut()[at], kind, &input, in_place)
                },
            )
        })
        .gpu(
            format!("properties::single_pass::{t}::segmented_scan_matches_the_reference"),
            |device| {
                let scan = RefCell::new(Scan::<T>::new(device)?);
                let inputs =
                    props::input(scan_sizes(device), 7, T::sum_mixes(), T::arith_specials(), 3);
                let heads = (props::flag_mixes(), any::<u64>(), 0..8usize);
                props::check(
                    device,
                    CASES,
                    (inputs, heads, kinds()),
                    |(input, (head_mix, seed, head_offset), kind)| {
                        let values = input.values();
                        let flags = Input {
                            len: values.len(),
                            offset: head_offset,
                            mix: head_mix,
                            seed,
                            specials: vec![],
                        }
                        .values();
                        let (data, heads) = (
                            Guarded::input(device, &values, input.offset)?,
                            Guarded::input(device, &flags, head_offset)?,
                        );
                        // The segmented scan writes from the start of its output: guards after it
                        // only.
                        let mut output =
                            Guarded::output_with(device, 0, values.len(), props::GUARD)?;
                        scan.borrow_mut().segmented(
                            kind,
                            data.view()?,
                            heads.view()?,
                            output.buffer(),
                        )?;
                        output.check_guards("the output")?;
                        data.check_unchanged("the values")?;
                        heads.check_unchanged("the head flags")?;
                        T::mismatch(kind, &values, Some(&flags), &output.read()?)
                            .map_or(Ok(()), |why| Err(why.into()))
                    },
                )
            },
        )
}

fn main() -> std::process::ExitCode {
    let suite = typed::<u32>(typed::<i32>(typed::<f32>(TestSuite::new())));
    suite
        .gpu("properties::single_pass::same_scan_at_any_offset", |device| {
            let (ints, floats) =
                (RefCell::new(Scan::<i32>::new(device)?), RefCell::new(Scan::<f32>::new(device)?));
            let ints_in =
                props::input(scan_sizes(device), 7, i32::sum_mixes(), i32::arith_specials(), 3);
            let floats_in =
                props::input(scan_sizes(device), 7, f32::sum_mixes(), f32::arith_specials(), 3);
            let cases = (ints_in, floats_in, 0..8usize, kinds());
            props::check(device, CASES, cases, |(ints_in, floats_in, other, kind)| {
                let values = ints_in.values();
                let a = scan_at(device, &mut ints.borrow_mut(), kind, &values, ints_in.offset)?;
                let b = scan_at(device, &mut ints.borrow_mut(), kind, &values, other)?;
                if a != b {
                    return Err(format!(
                        "i32: the scans at offsets {} and {other} differ",
                        ints_in.offset
                    )
                    .into());
                }
                // An f32 scan may round differently at another alignment, unless every order of
                // additions gives the same sums.
                let values = floats_in.values();
                let a = scan_at(device, &mut floats.borrow_mut(), kind, &values, floats_in.offset)?;
                let b = scan_at(device, &mut floats.borrow_mut(), kind, &values, other)?;
                let same = a.iter().zip(&b).all(|(&x, &y)| same_value(x, y));
                if exact_in_any_order(&values) && !same {
                    return Err(format!(
                        "f32: the scans at offsets {} and {other} differ",
                        floats_in.offset
                    )
                    .into());
                }
                Ok(())
            })
        })
        .gpu("properties::one_block::scan_matches_the_reference", |device| {
            let mut scans = Vec::new();
            for step in OneBlock::ALL {
                scans.push((
                    OneBlockScan::<u32>::new(device, step)?,
                    OneBlockScan::<f32>::new(device, step)?,
                ));
            }
            let scans = RefCell::new(scans);
            let steps = 0..OneBlock::ALL.len();
            let sizes = props::sizes(&[1, 32, 64, 512, 1024, 2048], 2048);
            let ints = props::input(sizes.clone(), 7, u32::sum_mixes(), u32::arith_specials(), 3);
            let floats = props::input(sizes, 7, f32::sum_mixes(), f32::arith_specials(), 3);
            props::check(device, CASES, (steps, ints, floats), |(step, ints, floats)| {
                let mut scans = scans.borrow_mut();
                let (int_scan, float_scan) = &mut scans[step];
                let max = OneBlock::ALL[step].max_elements();
                let kind = OneBlock::ALL[step].kind();
                check_one_block(device, max, kind, &ints.values(), ints.offset, |i, o| {
                    int_scan.scan(i, o)
                })?;
                check_one_block(device, max, kind, &floats.values(), floats.offset, |i, o| {
                    float_scan.scan(i, o)
                })
            })
        })
        .gpu("properties::multi_pass::scan_matches_the_reference", |device| {
            let mut scans = Vec::new();
            for strategy in MultiPass::ALL {
                scans.push((
                    MultiPassScan::<u32>::new(device, strategy)?,
                    MultiPassScan::<f32>::new(device, strategy)?,
                ));
            }
            let scans = RefCell::new(scans);
            let strategies = 0..MultiPass::ALL.len();
            let ints =
                props::input(scan_sizes(device), 7, u32::sum_mixes(), u32::arith_specials(), 3);
            let floats =
                props::input(scan_sizes(device), 7, f32::sum_mixes(), f32::arith_specials(), 3);
            props::check(device, CASES, (strategies, ints, floats), |(strategy, ints, floats)| {
                let mut scans = scans.borrow_mut();
                let (int_scan, float_scan) = &mut scans[strategy];
                let inclusive = ScanKind::Inclusive;
                let n = ints.len.max(floats.len);
                int_scan.reserve(n)?;
                float_scan.reserve(n)?;
                int_scan.poison_scratch(0xffc0_0001)?;
                float_scan.poison_scratch(0xffc0_0001)?;
                check_one_block(
                    device,
                    usize::MAX,
                    inclusive,
                    &ints.values(),
                    ints.offset,
                    |i, o| int_scan.inclusive(i, o),
                )?;
                check_one_block(
                    device,
                    usize::MAX,
                    inclusive,
                    &floats.values(),
                    floats.offset,
                    |i, o| float_scan.inclusive(i, o),
                )
            })
        })
        .gpu("properties::bad_lengths_are_errors_and_write_nothing", |device| {
            let scan = RefCell::new(Scan::<f32>::new(device)?);
            let lengths = (0..300usize, 0..300usize, 0..300usize, 0..300usize);
            props::check(device, (256, 64), lengths, |(n, out_len, at, heads_len)| {
                let mut scan = scan.borrow_mut();
                let input = Guarded::input(device, &vec![1.0f32; n], 0)?;
                let mut output = Guarded::output_with(device, 0, out_len, 0)?;
                let result = scan.scan_to(ScanKind::Exclusive, input.view()?, output.buffer(), at);
                if at + n > out_len {
                    expect_bad_input(&format!("a scan of {n} into {out_len} from {at}"), result)?;
                    output.check_unchanged("the output of a refused scan")?;
                } else {
                    result?;
                }
                let heads = device.alloc::<u8>(heads_len)?;
                let mut output = Guarded::output_with(device, 0, out_len, 0)?;
                let result = scan.segmented(
                    ScanKind::Inclusive,
                    input.view()?,
                    heads.as_view(),
                    output.buffer(),
                );
                if heads_len != n || out_len < n {
                    expect_bad_input(
                        &format!("a segmented scan of {n} with {heads_len} heads into {out_len}"),
                        result,
                    )?;
                    output.check_unchanged("the output of a refused segmented scan")?;
                } else {
                    result?;
                }
                let mut data = device.upload(&vec![1.0f32; out_len])?;
                let range = at..at + n;
                let result = scan.scan_in_place(ScanKind::Inclusive, &mut data, range);
                if at + n > out_len {
                    expect_bad_input(
                        &format!("an in-place scan of {at}..{} of {out_len}", at + n),
                        result,
                    )?;
                } else {
                    result?;
                }
                input.check_unchanged("the input")
            })
        })
        .gpu("properties::one_block::too_large_is_an_error", |device| {
            let scan = RefCell::new(OneBlockScan::<u32>::new(device, OneBlock::Blelloch)?);
            props::check(device, (16, 4), 2049usize..2100, |n| {
                let input = device.alloc::<u32>(n)?;
                let mut output = device.alloc::<u32>(n)?;
                match scan.borrow_mut().scan(input.as_view(), &mut output) {
                    Err(GpuError::TooLarge { .. }) => Ok(()),
                    other => {
                        Err(format!("{n} elements in one block: expected TooLarge, got {other:?}")
                            .into())
                    }
                }
            })
        })
        .run()
}

/// Scans `values` at `offset` with `scan`, into a fresh output.
fn scan_at<T: Element>(
    device: &Device,
    scan: &mut Scan<T>,
    kind: ScanKind,
    values: &[T],
    offset: usize,
) -> Result<Vec<T>, gpu_test::Failed> {
    let input = Guarded::input(device, values, offset)?;
    let mut output = Guarded::output(device, values.len())?;
    let at = output.start();
    scan.scan_to(kind, input.view()?, output.buffer(), at)?;
    Ok(output.read()?)
}

/// Runs a scan that writes the start of its output (one block, or the multi pass) on `values` at
/// `offset`, if it takes that many (`max`), and checks it: the result, the guards after the output,
/// and the input.
fn check_one_block<T: Element>(
    device: &Device,
    max: usize,
    kind: ScanKind,
    values: &[T],
    offset: usize,
    scan: impl FnOnce(
        gpu_harness::DeviceView<'_, T>,
        &mut gpu_harness::DeviceBuffer<T>,
    ) -> gpu_harness::Result<()>,
) -> TestResult {
    if values.len() > max {
        return Ok(());
    }
    let input = Guarded::input(device, values, offset)?;
    let mut output = Guarded::output_with(device, 0, values.len(), props::GUARD)?;
    scan(input.view()?, output.buffer())?;
    output.check_guards("the output")?;
    input.check_unchanged("the input")?;
    T::mismatch(kind, values, None, &output.read()?)
        .map_or(Ok(()), |why| Err(format!("{}: {why}", T::SUFFIX).into()))
}
