//! The result, a time series of Git aging: its types live in fsage-results (so the report reads
//! them without building the replay); re-exported here where they always were.

pub use fsage_results::git::*;
