//! # report: the book generator, drawn from the registry and the measured data
//!
//! What is measured, and how, is the measuring core's (crate `measuring`: the session, the results
//! format, the tables); this crate publishes it:
//! - [`data`]: the book's data folder read back, every GPU's results with PyTorch's peers merged;
//! - [`charts`]: SVG bar charts with the read roof, the copy roof and the theoretical peak, and
//!   the front page's chart of shares of roofs;
//! - [`headline`]: the front page's table and chart: each family's final step beside its peers;
//! - [`book`]: every generated page of the book and the README, from the registry and the data;
//! - [`prose`]: the check that numbers quoted in the chapters' prose are the measured ones;
//! - [`accuracy`]: the accuracy studies (relative error against n) and their charts;
//! - [`pictures`]: pictures of what a warp does (lanes, banks, sectors), drawn from a simulator
//!   trace of a real kernel;
//! - [`torch`]: PyTorch's ops as peers, read from `scripts/torch_reductions.py`'s output;
//! - [`host`]: reduce-host's sessions (data that starts in host memory), their chart and tables.

pub mod accuracy;
pub mod book;
pub mod charts;
pub mod data;
pub mod headline;
pub mod hopper;
pub mod host;
pub mod multi_gpu;
pub mod pictures;
pub mod prose;
pub mod torch;

pub use book::{BookError, render_book};
pub use data::{book_data_dir, load_results, load_results_by_gpu};
