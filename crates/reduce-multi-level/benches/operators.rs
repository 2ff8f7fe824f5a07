//! Every operator of f32 and i32 at 2^28 elements (`OPERATORS_N` to change it), in the multi-level
//! form (this crate's) and the one-launch form (reduce-atomic's last-block finish), beside CUB's
//! DeviceReduce with the same operator (`scripts/peers/reduce_operators.cu`, loaded from the
//! library `COURSE_PEERS` names) and against the read roof of the same run; and user operators
//! compiled at run time beside the built-in operator of the same arithmetic. Each result is checked
//! against the CPU before it is timed. Prints a Markdown table (and writes it to
//! `$OUT/operators.md` when `OUT` is set): the book's `data/nvidia-h200/operators.md`.

use std::ffi::{c_int, c_void};
use std::fmt::Write as _;
use std::process::ExitCode;

use gpu_harness::measure::{Roofs, SAMPLES, gigabytes_per_second, median_ms};
use gpu_harness::peer::{PeerCall, peer_function, peer_stream};
use gpu_harness::{Device, DeviceBuffer, DeviceView, Result};
use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};
use reduce_atomic::operators::Reduce as OneLaunch;
use reduce_multi_level::operators::{
    Operator, OperatorElement, OperatorReduction, Reduce, Reduced, UserElement, UserOperator,
    UserReduce, reference,
};
use reduction::reference::sum_mismatch;

/// `(input, result, n, temp, temp_bytes, stream)`, as scripts/peers/reduce_operators.cu exports.
type CubReduce = unsafe extern "C" fn(
    *const c_void,
    *mut c_void,
    i64,
    *mut c_void,
    *mut u64,
    *mut c_void,
) -> c_int;

struct Row {
    what: String,
    ours_ms: f64,
    /// The one-launch form's time (built-in operators).
    one_launch_ms: Option<f64>,
    cub_ms: Option<f64>,
    note: String,
}

/// The median time of a CUB call of `op` over `input`, or why there is none.
fn cub<T: OperatorElement>(device: &Device, op: Operator, input: DeviceView<'_, T>) -> Result<f64> {
    let symbol: &'static str =
        Box::leak(format!("cub_reduce_{}_{}", op.name(), T::SUFFIX).into_boxed_str());
    let function: CubReduce = unsafe { peer_function(symbol)? };
    let result = device.alloc::<u32>(4)?;
    let (from, to, n, stream) =
        (input.raw_address(), result.as_view().raw_address(), input.len(), peer_stream(device)?);
    let mut call = PeerCall::with_scratch(device, symbol, move |temp, bytes| unsafe {
        function(from as _, to as _, n as i64, temp, bytes, stream)
    })?;
    median_ms(device, SAMPLES, || call.queue())
}

/// Checks our result of `op` against the CPU (float sums within the tree bound, the rest exactly).
fn check<T: OperatorElement>(
    op: Operator,
    host: &[T],
    got: Reduced<T>,
    chain: u64,
) -> std::result::Result<(), String> {
    let want = reference(op, host).ok_or("empty input")?;
    if let (Operator::Sum, true, Reduced::Value(g)) = (op, T::ROUNDS, got) {
        let values: Vec<f32> = host.iter().map(|v| v.to_f64() as f32).collect();
        return match sum_mismatch(&values, g.to_f64() as f32, chain) {
            None => Ok(()),
            Some(why) => Err(why),
        };
    }
    if got == want { Ok(()) } else { Err(format!("{} gave {got:?}, the CPU {want:?}", op.name())) }
}

/// Checks `launcher`'s `op` over `input` against the CPU, then times it.
fn checked_ms<T: OperatorElement, R: OperatorReduction<T>>(
    device: &Device,
    launcher: &mut R,
    op: Operator,
    host: &[T],
    input: &DeviceBuffer<T>,
) -> Result<(f64, bool)> {
    let chain = launcher.plan(host.len()).longest_addition_chain();
    let ok = match check(op, host, launcher.reduce(op, input.as_view())?, chain) {
        Ok(()) => true,
        Err(why) => {
            eprintln!("{} {} ({}): {why}", T::SUFFIX, op.name(), std::any::type_name::<R>());
            false
        }
    };
    Ok((median_ms(device, SAMPLES, || launcher.queue(op, input.as_view()))?, ok))
}

fn operators<T: OperatorElement>(
    device: &Device,
    host: &[T],
    input: &DeviceBuffer<T>,
    rows: &mut Vec<Row>,
) -> Result<bool> {
    let mut reduce = Reduce::<T>::new(device)?;
    let mut one_launch = OneLaunch::<T>::new(device)?;
    reduce.reserve(host.len())?;
    one_launch.reserve(host.len())?;
    let mut ok = true;
    for &op in T::OPERATORS {
        let (ours_ms, ours_ok) = checked_ms(device, &mut reduce, op, host, input)?;
        let (one_launch_ms, one_launch_ok) = checked_ms(device, &mut one_launch, op, host, input)?;
        ok &= ours_ok && one_launch_ok;
        let (cub_ms, note) = match cub(device, op, input.as_view()) {
            Ok(ms) => (Some(ms), String::new()),
            Err(e) => (None, e.to_string().lines().next().unwrap_or_default().to_string()),
        };
        rows.push(Row {
            what: format!("{} {}", T::SUFFIX, op.name()),
            ours_ms,
            one_launch_ms: Some(one_launch_ms),
            cub_ms,
            note,
        });
    }
    Ok(ok)
}

/// A user's operator beside the built-in `op` of the same arithmetic (CUB's column: the built-in's
/// time, so the ratio column reads user / built-in).
fn user<T: OperatorElement + UserElement>(
    device: &Device,
    name: &str,
    source: &str,
    builtin: Operator,
    input: &DeviceBuffer<T>,
    rows: &mut Vec<Row>,
) -> Result<()> {
    let mut user =
        UserReduce::<T>::new(device, &UserOperator { name: name.into(), source: source.into() })?;
    let mut reduce = Reduce::<T>::new(device)?;
    reduce.reserve(input.len())?;
    let got = user.reduce(input.as_view())?;
    let want = reduce.reduce(builtin, input.as_view())?;
    let same = matches!(want, Reduced::Value(w) if T::from_words(&got) == w);
    let user_ms = median_ms(device, SAMPLES, || user.queue(input.as_view()))?;
    let builtin_ms = median_ms(device, SAMPLES, || reduce.queue(builtin, input.as_view()))?;
    let note = format!("beside the built-in {} (same bits: {same})", builtin.name());
    rows.push(Row {
        what: format!("{} user {name}", T::SUFFIX),
        ours_ms: user_ms,
        one_launch_ms: None,
        cub_ms: Some(builtin_ms),
        note,
    });
    Ok(())
}

const USER_SUM: &str = "struct UserSum {\n    typedef float Input;\n    typedef float Value;\n    \
                        __device__ float \
                        identity() const { return 0.0f; }\n    __device__ float operator()(float \
                        a, float b) const { \
                        return a + b; }\n};\n";
const USER_MIN: &str = "struct UserMin {\n    typedef int Input;\n    typedef int Value;\n    \
                        __device__ int \
                        identity() const { return 2147483647; }\n    __device__ int \
                        operator()(int a, int b) const { \
                        return b < a ? b : a; }\n};\n";

fn run(device: &Device) -> Result<bool> {
    let n: usize =
        std::env::var("OPERATORS_N").ok().and_then(|s| s.parse().ok()).unwrap_or(1 << 28);
    let mut rng = SmallRng::seed_from_u64(0x5eed);
    let floats: Vec<f32> = (0..n).map(|_| rng.random_range(-1.0..1.0)).collect();
    let ints: Vec<i32> = (0..n).map(|_| rng.random()).collect();
    let (float_input, int_input) = (device.upload(&floats)?, device.upload(&ints)?);
    let bytes = 4 * n as u64;
    let roofs = Roofs::measure(device, bytes)?;
    let mut rows = Vec::new();
    let mut ok = operators(device, &floats, &float_input, &mut rows)?;
    ok &= operators(device, &ints, &int_input, &mut rows)?;
    user(device, "UserSum", USER_SUM, Operator::Sum, &float_input, &mut rows)?;
    user(device, "UserMin", USER_MIN, Operator::Min, &int_input, &mut rows)?;

    let facts = device.facts();
    let pct = |ms: f64| 100.0 * gigabytes_per_second(bytes, ms) / roofs.read_gbs;
    let mut text = format!(
        "{}, {n} elements (4 bytes each), read roof {:.0} GB/s, copy roof {:.0} GB/s (same run)\n\n\
         | type, operator | ours GB/s | % of read roof | one launch GB/s | % of read roof | CUB \
         GB/s | % of read roof | ours / CUB time | note |\n\
         | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n",
        facts.name, roofs.read_gbs, roofs.copy_gbs
    );
    for row in &rows {
        let ours = gigabytes_per_second(bytes, row.ours_ms);
        let (cub, cub_pct, ratio) = match row.cub_ms {
            Some(ms) => (
                format!("{:.0}", gigabytes_per_second(bytes, ms)),
                format!("{:.1}", pct(ms)),
                format!("{:.3}", row.ours_ms / ms),
            ),
            None => ("-".into(), "-".into(), "-".into()),
        };
        let (one, one_pct) = match row.one_launch_ms {
            Some(ms) => {
                (format!("{:.0}", gigabytes_per_second(bytes, ms)), format!("{:.1}", pct(ms)))
            }
            None => ("-".into(), "-".into()),
        };
        let _ = writeln!(
            text,
            "| {} | {ours:.0} | {:.1} | {one} | {one_pct} | {cub} | {cub_pct} | {ratio} | {} |",
            row.what,
            pct(row.ours_ms),
            row.note
        );
    }
    println!("{text}");
    if let Ok(out) = std::env::var("OUT") {
        std::fs::write(std::path::Path::new(&out).join("operators.md"), &text).map_err(|e| {
            gpu_harness::GpuError::BadInput(format!("cannot write {out}/operators.md: {e}"))
        })?;
    }
    Ok(ok)
}

fn main() -> ExitCode {
    let device = match Device::shared() {
        Ok(device) if !device.is_simulated() => device,
        Ok(_) => {
            println!("operators: skipped: the CPU simulator runs kernels but does not time them");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            println!("operators: skipped: {e}");
            return if std::env::var("CUDA_REQUIRED").as_deref() == Ok("1") {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    match run(&device) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("operators: {e}");
            ExitCode::FAILURE
        }
    }
}
