//! Regenerates the book's measured tables and charts (`book/src/data/<gpu>/*.md` and `*.svg`) from
//! the results files beside them. Run after copying a bench run's `measurements/*.json` there:
//!
//! ```sh
//! cargo run -p book-charts
//! ```

use book_charts::render_book;
use gpu_harness::report::book_data_dir;

fn main() -> std::process::ExitCode {
    let outputs = match render_book(&book_data_dir()) {
        Ok(outputs) => outputs,
        Err(e) => {
            eprintln!("{e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    for (path, text) in outputs {
        if let Err(e) = std::fs::write(&path, text) {
            eprintln!("cannot write {}: {e}", path.display());
            return std::process::ExitCode::FAILURE;
        }
        println!("wrote {}", path.display());
    }
    std::process::ExitCode::SUCCESS
}
