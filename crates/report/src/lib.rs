//! # report: measured results, their tables and charts, and the book pages drawn from them
//!
//! - [`session`]: the one measuring path of the tour and the benches (prepare, check, time,
//!   record next to the roofs of the same run);
//! - [`results`]: the results format and its one writer;
//! - [`tables`]: the tables, rendered once, written as Markdown (the book) or text (the tour);
//! - [`charts`]: SVG bar charts with the read roof, the copy roof and the theoretical peak, and
//!   the front page's chart of shares of roofs;
//! - [`headline`]: the front page's table and chart: each family's final step beside its peers;
//! - [`book`]: every generated page of the book and the README, from the registry and the data;
//! - [`prose`]: the check that numbers quoted in the chapters' prose are the measured ones;
//! - [`accuracy`]: the accuracy studies (relative error against n) and their charts;
//! - [`torch`]: PyTorch's ops as peers, read from `scripts/torch_reductions.py`'s output;
//! - [`host`]: reduce-host's sessions (data that starts in host memory), their chart and tables.

pub mod accuracy;
pub mod book;
pub mod charts;
pub mod headline;
pub mod host;
pub mod multi_gpu;
pub mod prose;
pub mod results;
pub mod session;
pub mod tables;
pub mod torch;

pub use book::{BookError, render_book};
pub use results::{
    Record, Results, book_data_dir, gpu_slug, load_results, load_results_by_gpu, workspace_root, write_results,
};
pub use session::{Failure, Session, find_entry};
pub use tables::Table;
