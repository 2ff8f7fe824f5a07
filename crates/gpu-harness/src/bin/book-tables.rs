//! Regenerates the book's measured tables (`book/src/data/<gpu>/<technique>.md`) from the results
//! files beside them. Run after copying a bench run's `measurements/*.json` into the book.

use gpu_harness::report::{book_data_dir, render_book_tables};

fn main() -> std::process::ExitCode {
    match render_book_tables(&book_data_dir()) {
        Ok(outputs) => {
            for (path, text) in outputs {
                if let Err(e) = std::fs::write(&path, text) {
                    eprintln!("cannot write {}: {e}", path.display());
                    return std::process::ExitCode::FAILURE;
                }
                println!("wrote {}", path.display());
            }
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{e}");
            std::process::ExitCode::FAILURE
        }
    }
}
