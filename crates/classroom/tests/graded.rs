//! The graded steps name real things: every counter a step's technique improves names a section
//! of its chapter and a kernel of its kernel file, every assigned crate earns optimisation points,
//! and the instructors' page shows the counters of `course.toml`.

use std::path::PathBuf;

use gpu_test::{TestResult, TestSuite};

fn root() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

fn main() -> std::process::ExitCode {
    TestSuite::new()
        .cpu("every_graded_counter_names_a_section_and_a_kernel_that_exist", || -> TestResult {
            let mut problems = Vec::new();
            for step in classroom::optimisation::all_graded_steps(course::registry()) {
                let name = format!("{}/{}", step.crate_name, step.name);
                let Some(chapter) = step.chapter() else { continue };
                let page = std::fs::read_to_string(root().join("book/src").join(&chapter.file))?;
                match step.section() {
                    Some(section)
                        if !page.lines().any(|l| l.trim_start_matches('#').trim() == section) =>
                    {
                        problems.push(format!(
                            "{name}: no section \"{section}\" in book/src/{}",
                            chapter.file
                        ));
                    }
                    Some(_) => {}
                    None => problems.push(format!(
                        "{name}: graded, with no `section` for the \
                                                   grader's advice"
                    )),
                }
                let source =
                    std::fs::read_to_string(root().join("cuda").join(chapter.kernel_file()))?;
                for kernel in step.improves.iter().filter_map(|i| i.kernel.as_ref()) {
                    if !course::kernel_written_out(&source, kernel) {
                        problems.push(format!(
                            "{name}: counts `{kernel}`, not a kernel of cuda/{}",
                            chapter.kernel_file()
                        ));
                    }
                }
            }
            if problems.is_empty() { Ok(()) } else { Err(problems.join("\n").into()) }
        })
        .cpu("every_crate_with_solution_regions_earns_optimisation_points", || -> TestResult {
            // Every one: reduce-multi-gpu's ring is a world step, counted on simulated devices.
            let course = course::registry();
            let mut problems = Vec::new();
            for name in classroom::assigned_crates(&root())? {
                if classroom::optimisation::graded_steps(course, &name).is_empty() {
                    problems
                        .push(format!("{name}: no step of course.toml lists what it `improves`"));
                }
            }
            if problems.is_empty() { Ok(()) } else { Err(problems.join("\n").into()) }
        })
        .cpu("the_instructors_page_shows_the_counters_of_course_toml", || -> TestResult {
            const BEGIN: &str = "<!-- generated from course.toml \
                                 (classroom::optimisation::counters_table): do not edit by hand; \
                                 UPDATE_BOOK=1 cargo test -p classroom --test graded rewrites it \
                                 -->\n";
            const END: &str = "<!-- end of the generated table -->";
            let path = root().join("book/src/instructors.md");
            let page = std::fs::read_to_string(&path)?;
            let start = page.find(BEGIN).ok_or(
                "book/src/instructors.md has no generated table's \
                                                opening marker",
            )? + BEGIN.len();
            let end = start + page[start..].find(END).ok_or("no end marker after the table")?;
            let table = classroom::optimisation::counters_table(course::registry());
            if page[start..end] == table {
                return Ok(());
            }
            if std::env::var("UPDATE_BOOK").is_ok_and(|v| v == "1") {
                std::fs::write(&path, format!("{}{table}{}", &page[..start], &page[end..]))?;
                return Ok(());
            }
            Err(format!(
                "book/src/instructors.md's table of counters differs from course.toml's \
                 (UPDATE_BOOK=1 cargo test -p classroom --test graded rewrites it); \
                 expected:\n{table}"
            )
            .into())
        })
        .run()
}
