//! Roofs where they do not bind: a step whose bytes fit in the GPU's L2 gets no share of a roof in
//! any table (the book's, the tour's and the bench's text, the peers', the summary's, the README's)
//! nor on a chart; beyond the L2 its share is printed as measured, above 100% too. Made-up records
//! on the registry's scan family, so these tests do not depend on the data.

use gpu_harness::DeviceFacts;
use measuring::tables::{
    IN_L2, chapter_table, peers_table, roof_binds, share_of_roof, summary_table,
};
use measuring::{Record, Results};
use report::charts::{Bar, Lines, bar_chart};

const L2: u64 = 50 << 20;

fn device() -> DeviceFacts {
    DeviceFacts {
        name: "NVIDIA H100 80GB HBM3".into(),
        compute_capability: (9, 0),
        multiprocessors: 132,
        max_threads_per_multiprocessor: 2048,
        l2_cache_bytes: L2,
        memory_bytes: 80 << 30,
        memory_clock_mhz: Some(2619.0),
        memory_bus_bits: Some(5120),
        driver_cuda_version: "13.0".into(),
        driver_release: Some("580.159.04".into()),
        nvrtc_version: "13.0".into(),
    }
}

/// A scan step reading and writing `n` f32 (8n bytes) at `share` of a 3000 GB/s copy roof.
fn record(step: &str, case: &str, n: u64, share: f64) -> Record {
    Record {
        step: step.into(),
        case: case.into(),
        n,
        bytes: 8 * n,
        median_ms: 1.0,
        gbs: 3000.0 * share,
        roof: "copy".into(),
        copy_gbs: 3000.0,
        read_gbs: 3300.0,
    }
}

/// The scan chapter's results: a one-block step past its roof at 2^11 (16 KiB), the single pass
/// and CUB at 2^20 (8 MiB, in the L2) past theirs too, and at 2^28 (2 GiB), the single pass at
/// 100.4% (within a percent of the roof: a tie) and CUB at 82%.
fn scan_results() -> Vec<Results> {
    let results = |crate_name: &str, records: Vec<Record>| Results {
        crate_name: crate_name.into(),
        family: "scan".into(),
        date: "2026-11-21".into(),
        device: device(),
        theoretical_gbs: Some(3352.0),
        records,
    };
    vec![results(
        "scan",
        vec![
            record("blelloch-padded", "2^11", 1 << 11, 1.29),
            record("cub-inclusive-f32", "2^20", 1 << 20, 1.13),
            record("bulk-copy", "2^20", 1 << 20, 1.20),
            record("cub-inclusive-f32", "2^28", 1 << 28, 0.82),
            record("bulk-copy", "2^28", 1 << 28, 1.004),
        ],
    )]
}

/// The table's row whose cells include `step` and `case`.
fn row<'a>(rows: &'a [Vec<String>], case: &str, step: &str) -> &'a [String] {
    rows.iter()
        .find(|row| row.iter().any(|c| c == case) && row.iter().any(|c| c.contains(step)))
        .unwrap_or_else(|| panic!("no row of {step} at {case}: {rows:?}"))
}

#[test]
fn a_roof_binds_only_beyond_the_l2() {
    let fits = record("bulk-copy", "2^20", 1 << 20, 1.2);
    let beyond = record("bulk-copy", "2^28", 1 << 28, 0.9);
    assert!(!roof_binds(&fits, L2));
    assert!(roof_binds(&beyond, L2));
    // Exactly the L2's bytes still fit.
    assert!(!roof_binds(&Record { bytes: L2, ..fits.clone() }, L2));
    assert!(roof_binds(&Record { bytes: L2 + 1, ..fits.clone() }, L2));
    // A GPU that reports no L2 (the simulator): every roof binds.
    assert!(roof_binds(&fits, 0));
    assert_eq!(share_of_roof(&fits, L2, 120.0), IN_L2);
    assert_eq!(share_of_roof(&beyond, L2, 90.0), "90.0%");
}

#[test]
fn the_chapter_table_gives_no_share_of_a_roof_that_does_not_bind() {
    let course = course::registry();
    let scan = course.family("scan").unwrap();
    let table = chapter_table(scan, scan.chapter("scan").unwrap(), &scan_results()).unwrap();
    let share_columns: Vec<usize> = table
        .columns
        .iter()
        .enumerate()
        .filter(|(_, (name, _))| name.starts_with('%'))
        .map(|(i, _)| i)
        .collect();
    assert_eq!(share_columns.len(), 2, "% of its roof and % of copy: {:?}", table.columns);
    for (case, step) in
        [("2^11", "blelloch-padded"), ("2^20", "bulk-copy"), ("2^20", "cub-inclusive-f32")]
    {
        let cells = row(&table.rows, case, step);
        for &i in &share_columns {
            assert_eq!(cells[i], IN_L2, "{step} at {case}: {cells:?}");
        }
        // Its bandwidth is still shown.
        assert!(cells.iter().any(|c| c.parse::<f64>().is_ok_and(|v| v > 3000.0)), "{cells:?}");
    }
    // Beyond the L2, the share as measured, over 100% too.
    let cells = row(&table.rows, "2^28", "bulk-copy");
    assert_eq!(cells[share_columns[0]], "100.4%");
    let cells = row(&table.rows, "2^28", "cub-inclusive-f32");
    assert_eq!(cells[share_columns[0]], "82.0%");
    // The caption says why, once; the bench's and the tour's text says it too.
    assert_eq!(table.caption.matches(&format!("*{IN_L2}*")).count(), 1, "{}", table.caption);
    assert!(table.caption.contains("50 MiB"), "{}", table.caption);
    let text = table.text();
    assert!(
        text.contains("in L2: the step moves no more bytes than the GPU's L2 cache holds"),
        "{text}"
    );
    assert!(
        !text.contains("129.0%") && !text.contains("120.0%") && !text.contains("113.0%"),
        "{text}"
    );
}

#[test]
fn the_peers_and_summary_tables_follow_the_same_rule() {
    let course = course::registry();
    let scan = course.family("scan").unwrap();
    let results = scan_results();
    let peers = peers_table(scan, &results).unwrap();
    let at_2_20 = row(&peers.rows, "2^20", "bulk-copy");
    assert_eq!(at_2_20.iter().filter(|c| *c == IN_L2).count(), 2, "{at_2_20:?}");
    let at_2_28 = row(&peers.rows, "2^28", "bulk-copy");
    assert!(
        at_2_28.contains(&"100.4%".to_string()) && at_2_28.contains(&"82.0%".to_string()),
        "{at_2_28:?}"
    );
    assert!(peers.caption.contains(IN_L2));
    // The summary is at 2^28, beyond the L2: shares as measured, and no note.
    let summary = summary_table(scan, &results).unwrap();
    assert!(summary.rows.iter().flatten().all(|c| c != IN_L2), "{:?}", summary.rows);
    assert!(!summary.caption.contains(IN_L2), "{}", summary.caption);
}

#[test]
fn a_chart_bar_whose_roof_does_not_bind_says_so_instead_of_a_share() {
    let lines = Lines { read_gbs: 3300.0, copy_gbs: 3000.0, peak_gbs: None };
    let bars = [
        Bar { roof_binds: false, ..Bar::new("bulk-copy", 3600.0, "copy", 3000.0) },
        Bar::new("single-pass", 2400.0, "copy", 3000.0),
    ];
    let svg = bar_chart("t", &bars, lines).unwrap();
    assert!(svg.contains(IN_L2), "{svg}");
    assert!(!svg.contains("120%"), "{svg}");
    assert!(svg.contains("80% of copy"), "{svg}");
}
