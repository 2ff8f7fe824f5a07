//! reduce-host's tests: every step against the f64 reference at sizes around every chunk boundary,
//! on pageable and pinned memory, at odd offsets, through rings of one to three buffers and
//! budgets much smaller than the input; NaN, infinities and empty inputs; bad plans and budgets as
//! typed errors; the plans (snapshots); pinned memory given back intact.

use gpu_harness::{Device, GpuError};
use gpu_test::{Failed, TestResult, TestRng, TestSuite, test_size};
use reduce_host::{HostReduce, PipelinePlan, cpu_chain, cpu_sum, pipeline_plan, plan};
use reduction::reference::sum_mismatch;

/// Chunks of this many elements in the tests: small, so that inputs of a few chunks run on the
/// simulator, and not a multiple of 4, so that chunks start at every 16-byte offset.
const CHUNK: usize = 1001;

/// Every way this crate sums `host` (pageable), each result checked against the f64 reference
/// within its own chain's bound: copy then reduce, the same from pinned memory, chunked, streamed
/// through rings of 1 to 3 buffers, and the CPU on 1, 3 and 16 threads.
fn check_every_step(
    device: &Device,
    reducer: &mut HostReduce,
    host: &[f32],
    chunk: usize,
) -> TestResult {
    let n = host.len();
    let check = |what: &str, got: f32, chain: u64| match sum_mismatch(host, got, chain) {
        None => Ok(()),
        Some(why) => Err(Failed::from(format!("{what}: {why}"))),
    };
    reducer.poison()?;
    check("copy then reduce, pageable", reducer.copy_then_reduce(host)?, reducer.whole_chain(n))?;
    let pinned = device.pin(host.to_vec())?;
    reducer.poison()?;
    check(
        "copy then reduce, pinned",
        reducer.copy_then_reduce(pinned.as_slice())?,
        reducer.whole_chain(n),
    )?;
    for streams in [1, 2, 3] {
        let in_place = pipeline_plan(n, chunk, streams, None)?;
        reducer.poison()?;
        let got = reducer.chunked(pinned.as_slice(), &in_place)?;
        check(&format!("chunked, {in_place}"), got, reducer.pipeline_chain(&in_place))?;
        if reducer.input(n)?.to_host()? != host {
            return Err(format!(
                "chunked, {in_place}: the input left on the device differs from the host's"
            )
            .into());
        }
        for buffers in 1..=3 {
            let ring = pipeline_plan(n, chunk, streams, Some(buffers * chunk * 4))?;
            reducer.poison()?;
            let got = reducer.streamed_with(pinned.as_slice(), &ring)?;
            check(&format!("streamed, {ring}"), got, reducer.pipeline_chain(&ring))?;
        }
    }
    let ring = pipeline_plan(n, chunk, 2, Some(2 * chunk * 4))?;
    check(
        "streamed from pageable memory",
        reducer.streamed_with(host, &ring)?,
        reducer.pipeline_chain(&ring),
    )?;
    for threads in [1, 3, 16] {
        check(&format!("cpu on {threads} threads"), cpu_sum(host, threads), cpu_chain(n, threads))?;
    }
    let back = pinned.into_vec()?;
    if back != host {
        return Err("pinning changed the host's values".into());
    }
    Ok(())
}

/// Sizes around every boundary of the first `chunks` chunks of `chunk` elements.
fn boundary_sizes(chunk: usize, chunks: usize) -> Vec<usize> {
    let mut sizes = vec![0, 1, 2, 3, 4, 5];
    for k in 1..=chunks {
        sizes.extend([k * chunk - 1, k * chunk, k * chunk + 1]);
    }
    sizes
}

fn bad_input(result: gpu_harness::Result<impl std::fmt::Debug>) -> Result<String, Failed> {
    match result {
        Err(GpuError::BadInput(message)) => Ok(message),
        other => Err(format!("expected a BadInput error, got {other:?}").into()),
    }
}

fn main() -> std::process::ExitCode {
    TestSuite::new()
        .gpu("sizes_around_every_chunk_boundary", |device| {
            let mut rng = TestRng::new();
            let mut reducer = HostReduce::new(device)?;
            for n in boundary_sizes(CHUNK, 7) {
                let host = rng.uniform_f32(n, -1.0, 1.0);
                check_every_step(device, &mut reducer, &host, CHUNK)
                    .map_err(|e| rng.fail(e.message().unwrap_or("")))?;
            }
            Ok(())
        })
        .gpu("odd_offsets_and_random_sizes", |device| {
            // Slices that start 1 to 3 elements into a buffer: the host side of every copy starts
            // off 16-byte alignment, the device side never does (a chunk lands at its range's
            // start).
            let mut rng = TestRng::new();
            let mut reducer = HostReduce::new(device)?;
            for _ in 0..4 {
                let n = rng.size_in(1..=test_size(device, 300_000, 12 * CHUNK));
                let host = rng.uniform_f32(n + 3, -1.0, 1.0);
                for offset in 1..=3 {
                    let chunk = rng.size_in(1..=2 * CHUNK);
                    check_every_step(
                        device,
                        &mut reducer,
                        &host[offset..offset + n - 1.min(n)],
                        chunk,
                    )
                    .map_err(|e| {
                        rng.fail(format!(
                            "offset {offset}, chunk {chunk}: {}",
                            e.message().unwrap_or("")
                        ))
                    })?;
                }
            }
            Ok(())
        })
        .gpu("the_course_plan_on_inputs_bigger_than_the_budget", |device| {
            // The course's own chunk size, an input of several chunks, budgets of one chunk to far
            // more than the input: the same sum, the same bits (the chunks' sums are added in one
            // order).
            let mut rng = TestRng::new();
            let n =
                test_size(device, reduce_host::CHUNK_BYTES / 4 * 5 / 2 + 12_345, 3 * (1 << 16) + 7);
            let chunk = test_size(device, reduce_host::CHUNK_BYTES / 4, 1 << 16);
            let host = device.pin(rng.uniform_f32(n, -1.0, 1.0))?;
            let mut reducer = HostReduce::new(device)?;
            let mut bits = None;
            for budget in [chunk * 4, chunk * 4 + 3, 2 * chunk * 4, 3 * chunk * 4, 1 << 40] {
                let ring = pipeline_plan(n, chunk, reduce_host::STREAMS, Some(budget))?;
                if ring.device_bytes() > budget {
                    return Err(
                        format!("{ring} uses more than its budget of {budget} bytes").into()
                    );
                }
                reducer.poison()?;
                let got = reducer.streamed_with(host.as_slice(), &ring)?;
                if let Some(why) = sum_mismatch(host.as_slice(), got, reducer.pipeline_chain(&ring))
                {
                    return Err(rng.fail(format!("{ring}: {why}")));
                }
                if *bits.get_or_insert(got.to_bits()) != got.to_bits() {
                    return Err(
                        rng.fail(format!("{ring}: {got} differs from the other budgets' sum"))
                    );
                }
            }
            let whole = plan(n, None)?;
            let got = reducer.chunked(host.as_slice(), &whole)?;
            sum_mismatch(host.as_slice(), got, reducer.pipeline_chain(&whole))
                .map_or(Ok(()), |why| Err(rng.fail(why)))
        })
        .gpu("nan_infinities_and_empty_inputs", |device| {
            let mut reducer = HostReduce::new(device)?;
            let n = 5 * CHUNK + 17;
            let mut cases: Vec<(Vec<f32>, f32)> = vec![(Vec::new(), 0.0), (vec![-0.0], 0.0)];
            for (at, value, want) in [
                (n - 1, f32::NAN, f32::NAN),
                (0, f32::INFINITY, f32::INFINITY),
                (3 * CHUNK, f32::NEG_INFINITY, f32::NEG_INFINITY),
            ] {
                let mut host = vec![1.0f32; n];
                host[at] = value;
                cases.push((host, want));
            }
            let mut both = vec![0.5f32; n];
            (both[2], both[4 * CHUNK]) = (f32::INFINITY, f32::NEG_INFINITY);
            cases.push((both, f32::NAN));
            for (host, want) in cases {
                let ring = pipeline_plan(host.len(), CHUNK, 2, Some(CHUNK * 4))?;
                let in_place = pipeline_plan(host.len(), CHUNK, 3, None)?;
                let got = [
                    reducer.copy_then_reduce(&host)?,
                    reducer.chunked(&host, &in_place)?,
                    reducer.streamed_with(&host, &ring)?,
                    cpu_sum(&host, 4),
                ];
                for (step, got) in
                    ["copy then reduce", "chunked", "streamed", "cpu"].iter().zip(got)
                {
                    let same = got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan());
                    if !same {
                        return Err(format!(
                            "{step} of {} elements: got {got}, want {want}",
                            host.len()
                        )
                        .into());
                    }
                }
            }
            Ok(())
        })
        .gpu("bad_plans_and_budgets_are_typed_errors", |device| {
            let mut reducer = HostReduce::new(device)?;
            let host = vec![1.0f32; 3 * CHUNK];
            let mut messages = vec![
                bad_input(pipeline_plan(host.len(), CHUNK, 2, Some(CHUNK * 4 - 1)))?,
                bad_input(reducer.streamed(&host, 0))?,
                bad_input(pipeline_plan(10, 0, 2, None))?,
                bad_input(pipeline_plan(10, 4, 0, None))?,
            ];
            let ring = pipeline_plan(host.len(), CHUNK, 2, Some(CHUNK * 4))?;
            let in_place = pipeline_plan(host.len(), CHUNK, 2, None)?;
            messages.push(bad_input(reducer.chunked(&host, &ring))?);
            messages.push(bad_input(reducer.streamed_with(&host, &in_place))?);
            messages.push(bad_input(reducer.chunked(&host[1..], &in_place))?);
            // A budget below one chunk of a small input is an error too, and one chunk's worth
            // runs.
            messages.push(bad_input(reducer.streamed(&host[..10], 39))?);
            let sum = reducer.streamed(&host[..10], 40)?;
            if sum != 10.0 {
                return Err(format!("10 ones through a budget of one chunk summed to {sum}").into());
            }
            insta::assert_snapshot!("bad_input", messages.join("\n"));
            Ok(())
        })
        .gpu("pinned_memory_round_trips", |device| {
            let mut rng = TestRng::new();
            let n = 3 * CHUNK + 5;
            let values = rng.uniform_f32(n, -1.0, 1.0);
            let mut allocated = device.alloc_pinned::<f32>(n)?;
            if allocated.as_slice().iter().any(|&x| x.to_bits() != 0) {
                return Err("alloc_pinned did not zero its memory".into());
            }
            allocated.as_mut_slice()?.copy_from_slice(&values);
            let registered = device.pin(values.clone())?;
            let both_pinned = allocated.is_pinned() && registered.is_pinned();
            if !device.is_simulated() && !both_pinned {
                return Err("a GPU's pinned buffers say they are not pinned".into());
            }
            let mut reducer = HostReduce::new(device)?;
            let whole = reducer.copy_then_reduce(allocated.as_slice())?;
            if whole.to_bits() != reducer.copy_then_reduce(registered.as_slice())?.to_bits() {
                return Err(
                    "the same values in allocated and registered pinned memory summed differently"
                        .into(),
                );
            }
            if allocated.into_vec()? != values || registered.into_vec()? != values {
                return Err("pinned memory did not give its values back".into());
            }
            let empty = device.pin(Vec::<f32>::new())?;
            if empty.is_pinned() || !empty.into_vec()?.is_empty() {
                return Err("an empty Vec pinned".into());
            }
            Ok(())
        })
        .cpu("illustration::plans", || {
            let mut lines = Vec::new();
            for n in [0usize, 1, 1000, 1 << 23, (1 << 23) + 1, 1 << 28, 3 << 30] {
                lines.push(plan(n, None)?.to_string());
            }
            for budget in [32 << 20, (64 << 20) - 1, 64 << 20, 1 << 30] {
                lines.push(format!("budget {budget}: {}", plan(3 << 30, Some(budget))?));
            }
            lines.push(format!("budget 40: {}", plan(10, Some(40))?));
            lines.push(format!(
                "tests: {}",
                pipeline_plan(7 * CHUNK + 1, CHUNK, 3, Some(2 * CHUNK * 4 + 5))?
            ));
            insta::assert_snapshot!("plans", lines.join("\n"));
            Ok(())
        })
        .cpu("plan_covers_every_element_once", || {
            for n in boundary_sizes(CHUNK, 4) {
                for streams in 1..=4 {
                    let p: PipelinePlan = pipeline_plan(n, CHUNK, streams, Some(CHUNK * 4 * 2))?;
                    let covered: Vec<usize> = (0..p.chunks).flat_map(|k| p.range(k)).collect();
                    if covered != (0..n).collect::<Vec<_>>() || p.streams > streams || p.streams > 2
                    {
                        return Err(format!(
                            "{p}: covers {} of {n} elements, or too many streams",
                            covered.len()
                        )
                        .into());
                    }
                }
            }
            Ok(())
        })
        .run()
}
