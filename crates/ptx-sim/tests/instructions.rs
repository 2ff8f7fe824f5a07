//! Instructions the coming kernel families need (scan with decoupled look-back, stream compaction,
//! histograms, transpose, half-precision reductions), each run on the simulator from a tiny CUDA
//! kernel in `instructions.cu` compiled by NVRTC, against results worked out on the host.

mod common;

use gpu_test::{TestResult, TestSuite};
use ptx_sim::{Machine, Module, ParamValue};

fn main() -> std::process::ExitCode {
    TestSuite::new()
        .nvrtc("atomics::wide_atomics_cas_and_exchange", wide_atomics_cas_and_exchange)
        .nvrtc("atomics::red_has_no_result", red_has_no_result)
        .nvrtc(
            "atomics::shared_histogram_and_wrapping_ticket",
            shared_histogram_and_wrapping_ticket,
        )
        .nvrtc(
            "atomics::conflicts_and_places_counted_by_hand",
            conflicts_and_places_counted_by_hand,
        )
        .nvrtc("memory::scoped_loads_stores_and_fences", scoped_loads_stores_and_fences)
        .nvrtc("memory::cache_hint_loads_and_stores", cache_hint_loads_and_stores)
        .nvrtc("memory::byte_and_short_loads_and_stores", byte_and_short_loads_and_stores)
        .nvrtc("warp::ballot_activemask_and_match_any", ballot_activemask_and_match_any)
        .nvrtc("bits::popc_clz_brev_prmt_shf_bfe_bfi_bfind", popc_clz_brev_prmt_shf_bfe_bfi_bfind)
        .nvrtc(
            "halves::f16_and_bf16_conversions_and_arithmetic",
            f16_and_bf16_conversions_and_arithmetic,
        )
        .nvrtc("memory::bulk_copy_and_mbarrier_phases", bulk_copy_and_mbarrier_phases)
        .nvrtc("control::named_barriers", named_barriers)
        .nvrtc("special::ex2_approx_and_nanosleep", ex2_approx_and_nanosleep)
        .run()
}

fn module() -> Module {
    common::module_of_source("instructions.cu", include_str!("instructions.cu"))
}

/// A machine with one zeroed buffer per size in `sizes` (bytes); returns it and their addresses.
fn machine(sizes: &[usize]) -> (Machine, Vec<u64>) {
    let mut m = Machine::new();
    let buffers = sizes.iter().map(|&n| m.alloc(n).unwrap()).collect();
    (m, buffers)
}

fn launch(
    m: &mut Machine,
    kernel: &str,
    grid: u32,
    block: u32,
    buffers: &[u64],
) -> ptx_sim::LaunchStats {
    let params: Vec<ParamValue> = buffers.iter().map(|&b| ParamValue::U64(b)).collect();
    m.launch(&module(), kernel, (grid, 1, 1), (block, 1, 1), 0, &params)
        .unwrap_or_else(|e| panic!("{kernel}: {e}"))
}

fn write<T: Copy>(m: &mut Machine, addr: u64, values: &[T], to_bytes: impl Fn(T) -> Vec<u8>) {
    let bytes: Vec<u8> = values.iter().flat_map(|&v| to_bytes(v)).collect();
    m.write(addr, &bytes).unwrap();
}

fn u32s(m: &Machine, addr: u64, n: usize) -> Vec<u32> {
    m.read(addr, 4 * n)
        .unwrap()
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

fn u64s(m: &Machine, addr: u64, n: usize) -> Vec<u64> {
    m.read(addr, 8 * n)
        .unwrap()
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

fn u16s(m: &Machine, addr: u64, n: usize) -> Vec<u16> {
    m.read(addr, 2 * n)
        .unwrap()
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

fn f32s(m: &Machine, addr: u64, n: usize) -> Vec<f32> {
    u32s(m, addr, n).into_iter().map(f32::from_bits).collect()
}

fn wide_atomics_cas_and_exchange() -> TestResult {
    let (mut m, b) = machine(&[24, 8, 4, 8, 8 * 128]);
    m.write(b[1], &7u64.to_le_bytes()).unwrap();
    launch(&mut m, "atomics64", 2, 64, &b);
    let threads = 128u64;
    let counters = u64s(&m, b[0], 3);
    assert_eq!(counters[0], threads * (threads + 1) / 2, "atom.global.add.u64");
    assert_eq!(counters[1], 5 * threads, "atomicAdd with the result unused");
    assert_eq!(counters[2] & 0xffff_ffff, 3 * threads, "32-bit add into the low half");
    assert_eq!(u64s(&m, b[1], 1)[0], 7 + threads * (1 << 33), "a CAS loop by every thread");
    // Blocks run in order and lanes in order: the last thread's exchange wins.
    assert_eq!(u32s(&m, b[2], 1)[0], 127);
    assert_eq!(u64s(&m, b[3], 1)[0], 127 << 32);
    // Each thread saw the sum of the increments of the threads before it.
    let old = u64s(&m, b[4], 128);
    for (t, &seen) in old.iter().enumerate() {
        assert_eq!(seen, (t as u64) * (t as u64 + 1) / 2, "old value seen by thread {t}");
    }
    Ok(())
}

fn red_has_no_result() -> TestResult {
    let (mut m, b) = machine(&[12, 8]);
    let stats = launch(&mut m, "reductions", 1, 64, &b);
    let counters = u32s(&m, b[0], 3);
    assert_eq!(counters, vec![(0..64).sum::<u32>(), 63 * 7, 2 * 64]);
    assert_eq!(u64s(&m, b[1], 1)[0], (0..64u64).map(|t| t << 32).sum::<u64>());
    assert_eq!(stats.atomics, 4 * 64, "each red is a thread-level atomic");
    Ok(())
}

fn shared_histogram_and_wrapping_ticket() -> TestResult {
    let keys: Vec<u32> = (0..64u32).map(|t| (t * 37 + 11) % 23).collect();
    let (mut m, b) = machine(&[4 * 64, 4 * 8, 4 * 64]);
    write(&mut m, b[0], &keys, |v| v.to_le_bytes().to_vec());
    let stats = launch(&mut m, "shared_atomics", 1, 64, &b);
    let mut expected = [0u32; 8];
    for k in &keys {
        expected[(k % 8) as usize] += 1;
    }
    assert_eq!(u32s(&m, b[1], 8), expected, "histogram by atom.shared.add.u32");
    // atomicInc(&counter, 9) counts 0..=9 and wraps to 0; threads take tickets in order.
    let tickets: Vec<u32> = (0..64).map(|t| t % 10).collect();
    assert_eq!(u32s(&m, b[2], 64), tickets, "tickets by atom.shared.inc.u32");
    assert_eq!(stats.atomics, 2 * 64);
    Ok(())
}

fn conflicts_and_places_counted_by_hand() -> TestResult {
    let (mut m, b) = machine(&[4 * 2048, 4 * 4]);
    let (blocks, threads) = (3u64, 64u64);
    let stats = launch(&mut m, "atomic_conflicts", blocks as u32, threads as u32, &b);
    let words = u32s(&m, b[0], 2048);
    let warps = blocks * threads / 32;
    assert_eq!(words[0], (blocks * threads) as u32, "every thread on word 0");
    assert!((0..32).all(|l| words[32 + l] == warps as u32), "lane copies: one add per warp");
    assert!((0..32).all(|l| words[1024 + 32 * l] == warps as u32), "one bank: one add per warp");
    assert!((0..16).all(|w| words[128 + w] == 2 * warps as u32), "two lanes per word");
    assert_eq!(u32s(&m, b[1], 4), vec![(blocks * threads / 4) as u32; 4], "global atomics");
    // Per warp: 31 (one word) + 0 (lane copies) + 31 (one bank) + 1 (two lanes per word).
    assert_eq!(stats.shared_atomic_conflicts, warps * (31 + 31 + 1), "{stats:?}");
    // Four shared atomics per thread; one global per thread, and 2048 / 64 = 32 per thread at the
    // end.
    assert_eq!(stats.shared_atomics, 4 * blocks * threads);
    assert_eq!(stats.global_atomics, blocks * threads * (1 + 32));
    assert_eq!(stats.atomics, stats.shared_atomics + stats.global_atomics);
    assert_eq!(stats.blocks, blocks);
    // Identical blocks: each ran a third of the warp instructions, and identical warps half of a
    // block's.
    assert_eq!(stats.longest_block * blocks, stats.warp_instructions);
    assert_eq!(stats.longest_warp * 2, stats.longest_block);
    Ok(())
}

fn scoped_loads_stores_and_fences() -> TestResult {
    let (mut m, b) = machine(&[4 * 128, 4 * 192]);
    let stats = launch(&mut m, "scoped_memory", 1, 64, &b);
    let out = u32s(&m, b[1], 192);
    for t in 0..64u32 {
        let t_ = t as usize;
        assert_eq!(out[t_], t + 1, "ld.acquire.gpu sees st.relaxed.gpu, thread {t}");
        assert_eq!(out[64 + t_], 2 * t, "ld.relaxed.gpu sees st.release.gpu, thread {t}");
        assert_eq!(out[128 + t_], 3 * (t + 1), "ld.volatile, thread {t}");
    }
    // By hand: an acquire, a relaxed and a volatile load per warp, two warps; the stores and
    // fences are not loads.
    assert_eq!(stats.strong_loads, 3 * 2, "{stats:?}");
    Ok(())
}

fn cache_hint_loads_and_stores() -> TestResult {
    let input: Vec<f32> = (0..128).map(|i| i as f32 * 0.5 - 7.0).collect();
    let (mut m, b) = machine(&[4 * 32, 16 * 32, 4 * 160]);
    write(&mut m, b[0], &input[..32], |v| v.to_le_bytes().to_vec());
    write(&mut m, b[1], &input, |v| v.to_le_bytes().to_vec());
    launch(&mut m, "cache_hints", 1, 32, &b);
    let out = f32s(&m, b[2], 160);
    for t in 0..32 {
        let x = input[t];
        let v = &input[4 * t..4 * t + 4];
        assert_eq!(out[t], x + 2.0 * x + 4.0 * x + 8.0 * x, "scalar cache-hint loads, thread {t}");
        assert_eq!(
            out[32 + t],
            v.iter().sum::<f32>() + v[0] + v[1] + v[2] + v[3],
            "vector loads, thread {t}"
        );
        assert_eq!(
            [out[64 + t], out[96 + t], out[128 + t]],
            [v[0], v[3], v[1]],
            "cache-hint stores, thread {t}"
        );
    }
    Ok(())
}

fn bulk_copy_and_mbarrier_phases() -> TestResult {
    let input: Vec<u32> = (0..80).map(|i| 1000 + 7 * i).collect();
    let (mut m, b) = machine(&[4 * 80, 4 * 64, 4 * 8]);
    write(&mut m, b[0], &input, |v| v.to_le_bytes().to_vec());
    let stats = launch(&mut m, "bulk_copy_and_mbarrier", 1, 64, &b);
    let out = u32s(&m, b[1], 64);
    for t in 0..64 {
        assert_eq!(out[t], 2 * input[t + 4], "the bulk copy's element {t}");
    }
    assert_eq!(
        u32s(&m, b[2], 5),
        [0, 0, 1, 0, 0],
        "phases: none, one of two, done, the next, bytes due"
    );
    // The copy is one global request: 256 bytes from byte 16 touch 9 sectors of 32 bytes. Beside
    // it, the 5 waits' stores (one thread each) and the 64 threads' stores (2 warps of 128 bytes).
    assert_eq!(
        stats.global_sectors,
        9 + 5 + 2 * 4,
        "sectors: the copy's 9, 5 single words, 2 warps of 4"
    );
    assert_eq!(stats.global_requests, 1 + 5 + 2, "requests: the copy, 5 single words, 2 warps");
    let refused = m
        .launch(
            &module(),
            "bulk_copy_of_20_bytes",
            (1, 1, 1),
            (1, 1, 1),
            0,
            &[ParamValue::U64(b[0]), ParamValue::U64(b[1])],
        )
        .expect_err("a bulk copy of 20 bytes");
    assert!(refused.to_string().contains("multiples of 16"), "{refused}");
    Ok(())
}

fn byte_and_short_loads_and_stores() -> TestResult {
    let bytes: Vec<u8> = (0..64u32).map(|i| (i * 29 + 200) as u8).collect();
    let shorts: Vec<i16> = (0..64i32).map(|i| (i * 1237 - 30000) as i16).collect();
    let (mut m, b) = machine(&[64, 128, 64, 128, 256]);
    m.write(b[0], &bytes).unwrap();
    write(&mut m, b[1], &shorts, |v| v.to_le_bytes().to_vec());
    launch(&mut m, "narrow", 1, 64, &b);
    let out8 = m.read(b[2], 64).unwrap();
    let out16: Vec<i16> = u16s(&m, b[3], 64).into_iter().map(|v| v as i16).collect();
    let wide: Vec<i32> = u32s(&m, b[4], 64).into_iter().map(|v| v as i32).collect();
    for t in 0..64 {
        assert_eq!(out8[t], bytes[63 - t].wrapping_add(1), "u8 through shared memory, thread {t}");
        assert_eq!(
            out16[t],
            shorts[63 - t].wrapping_sub(1),
            "s16 through shared memory, thread {t}"
        );
        assert_eq!(
            wide[t],
            bytes[t] as i8 as i32 + shorts[t].wrapping_sub(1) as i32,
            "sign extension, thread {t}"
        );
    }
    Ok(())
}

fn ballot_activemask_and_match_any() -> TestResult {
    let keys: Vec<i32> = (0..32).map(|t| [3, -1, 3, 0, 7, 7][t % 6]).collect();
    let (mut m, b) = machine(&[4 * 32, 4 * 96]);
    write(&mut m, b[0], &keys, |v| v.to_le_bytes().to_vec());
    launch(&mut m, "votes", 1, 32, &b);
    let out = u32s(&m, b[1], 96);
    let positive = (0..32).filter(|&t| keys[t] > 0).fold(0u32, |acc, t| acc | 1 << t);
    let active = (0..32).filter(|t| t % 3 != 0).fold(0u32, |acc, t| acc | 1 << t);
    for t in 0..32 {
        assert_eq!(out[t], positive, "ballot, lane {t}");
        if t % 3 == 0 {
            assert_eq!([out[32 + t], out[64 + t]], [0, 0], "lane {t} does not take the branch");
        } else {
            assert_eq!(out[32 + t], active, "activemask, lane {t}");
            let same = (0..32)
                .filter(|&u| active & 1 << u != 0 && keys[u] == keys[t])
                .fold(0u32, |acc, u| acc | 1 << u);
            assert_eq!(out[64 + t], same, "match.any, lane {t}");
        }
    }
    Ok(())
}

fn popc_clz_brev_prmt_shf_bfe_bfi_bfind() -> TestResult {
    let a: Vec<u32> = (0..32u32)
        .map(|t| if t == 5 { 0 } else { 0x9e37_79b9u32.wrapping_mul(t + 1).rotate_left(t) })
        .collect();
    let b: Vec<u32> = (0..32u32).map(|t| 0x85eb_ca6bu32.wrapping_mul(t + 3) ^ (t << 20)).collect();
    let (mut m, buf) = machine(&[4 * 32, 4 * 32, 4 * 12 * 32]);
    write(&mut m, buf[0], &a, |v| v.to_le_bytes().to_vec());
    write(&mut m, buf[1], &b, |v| v.to_le_bytes().to_vec());
    launch(&mut m, "bits", 1, 32, &buf);
    let out = u32s(&m, buf[2], 12 * 32);
    for t in 0..32u32 {
        let (x, y) = (a[t as usize], b[t as usize]);
        let o = &out[12 * t as usize..12 * t as usize + 12];
        let bytes = [x.to_le_bytes(), y.to_le_bytes()].concat();
        let perm = u32::from_le_bytes([bytes[0], bytes[4], bytes[1], bytes[5]]);
        let wide = ((y as u64) << 32) | x as u64;
        let funnel_left = (wide << t >> 32) as u32;
        let funnel_right = (wide >> t) as u32;
        let extract = (x >> t) & 0x1f & if t > 27 { (1u32 << (32 - t)) - 1 } else { u32::MAX };
        let field = if t + 7 >= 32 { (1u32 << (32 - t)) - 1 } else { 0x7f };
        let insert = (x & !(field << t)) | ((y & field) << t);
        let signed_extract = (((x >> 3) & 0x1ff) << 23) as i32 >> 23;
        let expected = [
            x.count_ones(),
            x.leading_zeros(),
            x.reverse_bits(),
            perm,
            funnel_left,
            funnel_right,
            extract,
            insert,
            signed_extract as u32,
            (((x as u64) << 32) | y as u64).count_ones(),
            (y as u64).leading_zeros(),
            if x == 0 { 0 } else { x.trailing_zeros() + 1 },
        ];
        let names = [
            "popc", "clz", "brev", "prmt", "shf.l", "shf.r", "bfe.u32", "bfi", "bfe.s32",
            "popc.b64", "clz.b64", "ffs",
        ];
        for k in 0..12 {
            assert_eq!(o[k], expected[k], "{} of {x:#010x}, {y:#010x}, lane {t}", names[k]);
        }
    }
    Ok(())
}

// ----- half precision
// -----------------------------------------------------------------------------

/// The value of half-precision bits (1 sign, 5 exponent, 10 fraction bits).
fn f16_value(bits: u16) -> f64 {
    let sign = if bits & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exponent = ((bits >> 10) & 0x1f) as i32;
    let fraction = (bits & 0x3ff) as f64;
    sign * match exponent {
        0 => fraction * 2f64.powi(-24),
        31 if fraction == 0.0 => f64::INFINITY,
        31 => f64::NAN,
        e => (1024.0 + fraction) * 2f64.powi(e - 25),
    }
}

/// The value of bfloat16 bits (the high half of an f32).
fn bf16_value(bits: u16) -> f64 {
    f32::from_bits((bits as u32) << 16) as f64
}

/// The bits nearest `x` among every finite value of a 16-bit format (ties to an even last bit),
/// found by trying them all: the magnitude is rounded, then the sign copied (so tiny negative
/// values give -0). Half a step or more past the largest finite value gives infinity.
fn nearest(x: f64, value: fn(u16) -> f64, infinity: u16) -> u16 {
    let sign = if x.is_sign_negative() { 0x8000 } else { 0 };
    let magnitude = x.abs();
    let largest = value(infinity - 1);
    if magnitude >= largest + (largest - value(infinity - 2)) / 2.0 {
        return sign | infinity;
    }
    let mut best = 0u16;
    for bits in 1..infinity {
        let (d, best_d) = ((value(bits) - magnitude).abs(), (value(best) - magnitude).abs());
        if d < best_d || (d == best_d && best & 1 != 0) {
            best = bits;
        }
    }
    sign | best
}

fn to_f16(x: f64) -> u16 {
    nearest(x, f16_value, 0x7c00)
}

fn to_bf16(x: f64) -> u16 {
    nearest(x, bf16_value, 0x7f80)
}

fn is_nan16(bits: u16, exponent_mask: u16) -> bool {
    bits & exponent_mask == exponent_mask && bits & !exponent_mask & 0x7fff != 0
}

fn f16_and_bf16_conversions_and_arithmetic() -> TestResult {
    let f: Vec<f32> = vec![
        1.0,
        -2.5,
        1.0 / 3.0,
        65504.0,
        65520.0,
        1e-8,
        2f32.powi(-24),
        3.0 * 2f32.powi(-25),
        f32::NAN,
        -0.0,
        1e5,
        std::f32::consts::PI,
        -1e-3,
        0.1,
        2049.0,
        2051.0,
        1.0 + 2f32.powi(-11),
        6.1e-5,
        -65519.0,
        3.0e38,
        1.5,
        -7.75,
        1234.5678,
        1e-40,
        0.5,
        100.25,
        -0.0625,
        8192.5,
        3.999,
        -3.999,
        0.333,
        42.0,
    ];
    let h: Vec<u16> = (0..32u16)
        .map(|t| {
            [0x3c00, 0xc100, 0x7bff, 0x0001, 0x03ff, 0x8400, 0x7c00, 0x3555][t as usize % 8]
                ^ (t << 4)
        })
        .collect();
    // Small multiples of 1/4, so sums and products are exact in half precision.
    let quarter = |k: i32| to_f16(k as f64 / 4.0);
    let h2: Vec<u32> =
        (0..32i32).map(|t| quarter(t - 9) as u32 | (quarter(13 - t) as u32) << 16).collect();
    let (mut m, b) = machine(&[2 * 32, 4 * 32, 4 * 32, 4 * 96, 2 * 96, 4 * 160]);
    write(&mut m, b[0], &h, |v| v.to_le_bytes().to_vec());
    write(&mut m, b[1], &h2, |v| v.to_le_bytes().to_vec());
    write(&mut m, b[2], &f, |v| v.to_le_bytes().to_vec());
    launch(&mut m, "halves", 1, 32, &b);
    let out = f32s(&m, b[3], 96);
    let out16 = u16s(&m, b[4], 96);
    let out32 = u32s(&m, b[5], 160);
    let halves = |v: u32| [(v & 0xffff) as u16, (v >> 16) as u16];
    for t in 0..32 {
        let (x, bits) = (f[t] as f64, h[t]);
        let same = |got: f32, want: f64| {
            got.to_bits() == (want as f32).to_bits() || (got.is_nan() && want.is_nan())
        };
        assert!(same(out[t], f16_value(bits)), "cvt.f32.f16 of {bits:#06x}: {}", out[t]);
        assert!(
            same(out[32 + t], bf16_value(bits)),
            "cvt.f32.bf16 of {bits:#06x}: {}",
            out[32 + t]
        );
        // cvt.rn.bf16x2.f32 d, a, b: a (here f[t + 1]) into the upper half, b (f[t]) into the
        // lower.
        for (got, value) in halves(out32[128 + t]).into_iter().zip([f[t], f[(t + 1) % 32]]) {
            let value = value as f64;
            let ok = if value.is_nan() { is_nan16(got, 0x7f80) } else { got == to_bf16(value) };
            assert!(ok, "cvt.rn.bf16x2.f32, lane {t}: {got:#06x} for {value:e}");
        }
        if x.is_nan() {
            assert!(
                is_nan16(out16[t], 0x7c00) && is_nan16(out16[32 + t], 0x7f80),
                "NaN converts to NaN"
            );
            continue;
        }
        assert_eq!(out16[t], to_f16(x), "cvt.rn.f16.f32 of {x:e}");
        assert_eq!(out16[32 + t], to_bf16(x), "cvt.rn.bf16.f32 of {x:e}");
        assert_eq!(
            halves(out32[t]),
            [to_f16(x), to_f16(-x)],
            "two halves packed by mov.b32 {{lo, hi}}, {x:e}"
        );
        let (p, q) = (halves(h2[t]), halves(h2[(t + 1) % 32]));
        let sum =
            [to_f16(f16_value(p[0]) + f16_value(q[0])), to_f16(f16_value(p[1]) + f16_value(q[1]))];
        assert_eq!(halves(out32[32 + t]), sum, "add.f16x2, lane {t}");
        assert_eq!(
            out[64 + t] as f64,
            f16_value(sum[0]) + f16_value(sum[1]),
            "unpacked and summed in f32, lane {t}"
        );
        let r = halves(h2[(t + 3) % 32]);
        let fma = [0, 1].map(|k| to_f16(f16_value(p[k]) * f16_value(r[k]) + f16_value(sum[k])));
        assert_eq!(halves(out32[64 + t]), fma, "fma.rn.f16x2, lane {t}");
        let s = halves(h2[(t + 5) % 32]);
        let product = [0, 1].map(|k| to_bf16(bf16_value(p[k]) * bf16_value(s[k])));
        assert_eq!(halves(out32[96 + t]), product, "mul.rn.bf16x2, lane {t}");
        let (c, d) = (bf16_value(bits), bf16_value(h[(t + 7) % 32]));
        if (c + d).is_finite() {
            assert_eq!(out16[64 + t], to_bf16(c + d), "add.rn.bf16 of {c:e} and {d:e}");
        }
    }
    Ok(())
}

fn named_barriers() -> TestResult {
    let (mut m, b) = machine(&[4 * 128, 4]);
    let stats = launch(&mut m, "named_barriers", 1, 128, &b);
    let out = u32s(&m, b[0], 128);
    // By hand: each pass adds the mate's value (t ^ 32) of the pass before. Group 0 (3 passes):
    // v1 = t + (t ^ 32), and v1 is the same for t and its mate, so v2 = 2 v1, v3 = 4 v1; group 1
    // (1 pass): t + (t ^ 32).
    for t in 0..128u32 {
        let pair = t + (t ^ 32);
        let expected = if t < 64 { 4 * pair } else { pair };
        assert_eq!(out[t as usize], expected, "thread {t}");
    }
    // Barriers completed: group 0's 6, group 1's 2, and the block's one.
    assert_eq!(stats.barriers, 6 + 2 + 1, "barriers");
    let never = m.launch(
        &module(),
        "named_barrier_never_filled",
        (1, 1, 1),
        (64, 1, 1),
        0,
        &[ParamValue::U64(b[0])],
    );
    match never {
        Err(e) if e.to_string().to_lowercase().contains("deadlock") => Ok(()),
        other => {
            Err(format!("a named barrier only one of its two warps reaches: {other:?}").into())
        }
    }
}

/// ex2.approx: 2^x rounded to f32 (the hardware is within 2 ulp of it), the special values, and
/// subnormal results kept without .ftz and flushed with it; nanosleep runs as nothing.
fn ex2_approx_and_nanosleep() -> TestResult {
    let inputs = [
        0.0f32,
        1.0,
        -1.0,
        0.5,
        10.0,
        -126.5,
        -140.0,
        -150.0,
        f32::NEG_INFINITY,
        f32::INFINITY,
        f32::NAN,
        128.0,
    ];
    let (mut m, b) = machine(&[4 * inputs.len(), 4 * inputs.len(), 4 * inputs.len()]);
    write(&mut m, b[0], &inputs, |x: f32| x.to_le_bytes().to_vec());
    launch(&mut m, "exp2_and_pause", 1, inputs.len() as u32, &b);
    let (got, got_ftz) = (f32s(&m, b[1], inputs.len()), f32s(&m, b[2], inputs.len()));
    for (k, &x) in inputs.iter().enumerate() {
        let want = f64::from(x).exp2() as f32;
        let want_ftz = if want.is_subnormal() { 0.0 } else { want };
        let same = |a: f32, b: f32| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
        if !same(got[k], want) || !same(got_ftz[k], want_ftz) {
            return Err(format!(
                "ex2.approx of {x:e}: {:e} and {:e} (ftz), expected {want:e} and {want_ftz:e}",
                got[k], got_ftz[k]
            )
            .into());
        }
    }
    assert_eq!(got[0], 1.0, "2^0 is exactly 1");
    assert!(
        got[6] > 0.0 && got[6].is_subnormal() && got_ftz[6] == 0.0,
        "2^-140: subnormal, flushed by .ftz"
    );
    assert_eq!(got[8], 0.0, "2^-inf is 0");
    assert!(got[11].is_infinite(), "2^128 overflows");
    Ok(())
}
