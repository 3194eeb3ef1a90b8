//! The analyses of an experiment's samples and cells, as pure functions on plain serde data: no
//! I/O, no formatting. They are fsage-analysis' (the report runs them without the runner), on
//! fsage-results' types, re-exported here: aged against fresh and the latency sweeps on samples;
//! latency percentiles per flowop from the cells' workload reports ([`latency_curves`]); each
//! aged base image against its fresh base ([`verdicts`]).

pub use fsage_analysis::*;
