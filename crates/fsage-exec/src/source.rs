//! The planner as an operation source.

use crate::checkpoint::{self, RunRecord, StateError};
use crate::live_ticks::LiveTicks;
use crate::op::{FileRef, OpSource, Operation, Step};
use crate::report::StopReason;
use fsage_plan::stats::{chi2_p, rmse, to_fractions};
use fsage_plan::{DirTree, Phase, Planner};
use std::path::Path;

/// Takes the planner's decisions one tick at a time. With `track_fit` it keeps the live files'
/// creation ticks in a [`LiveTicks`], so that the age fit can be checked cheaply as the run goes.
pub struct PlanSource<'a> {
    planner: &'a mut Planner,
    live: Option<LiveTicks>,
}

impl<'a> PlanSource<'a> {
    pub fn new(planner: &'a mut Planner, track_fit: bool) -> PlanSource<'a> {
        let live = track_fit.then(|| {
            let mut lt = LiveTicks::new(planner.total());
            for f in planner.live_files() {
                lt.insert(f.created);
            }
            lt
        });
        PlanSource { planner, live }
    }

    pub fn planner(&self) -> &Planner {
        self.planner
    }
}

impl OpSource for PlanSource<'_> {
    fn tree(&self) -> &DirTree {
        self.planner.tree()
    }

    #[inline]
    fn next_step(&mut self) -> Option<Step> {
        self.planner.next_op().map(Step::from)
    }

    fn refused(&mut self, step: &Step) {
        if let Some(op) = step.planned() {
            self.planner.reject_create(&op);
        }
    }

    #[inline]
    fn applied(&mut self, step: &Step) {
        if let Some(lt) = self.live.as_mut() {
            match &step.op {
                Operation::Create {
                    file: FileRef::Planned { created, .. },
                    ..
                } => lt.insert(*created),
                Operation::Delete {
                    file: FileRef::Planned { created, .. },
                    ..
                } => lt.remove(*created),
                _ => {}
            }
        }
    }

    fn position(&self) -> u64 {
        self.planner.tick()
    }

    fn total(&self) -> Option<u64> {
        Some(self.planner.total())
    }

    fn exhausted(&self) -> StopReason {
        if self.planner.tick() >= self.planner.total() && self.planner.live() > 0 {
            StopReason::Converged
        } else {
            StopReason::NothingFits
        }
    }

    fn overwrites(&self) -> Option<f64> {
        let p = &self.planner;
        Some(p.counters.bytes_written as f64 / p.config().capacity.max(1) as f64)
    }

    fn fit(&mut self) -> Option<f64> {
        let lt = self.live.as_ref()?;
        let p = &self.planner;
        let counts = lt.age_counts(p.age_edges(), p.tick());
        Some(chi2_p(&counts, p.age_targets()))
    }

    fn age_rmse(&self) -> Option<f64> {
        let p = &self.planner;
        Some(rmse(p.age_targets(), &to_fractions(&p.age_counts_now())))
    }

    fn phase(&self) -> Option<Phase> {
        Some(self.planner.phase())
    }

    fn save_state(&self, path: &Path, record: &RunRecord) -> Result<bool, StateError> {
        checkpoint::save(path, record, self.planner).map(|()| true)
    }
}
