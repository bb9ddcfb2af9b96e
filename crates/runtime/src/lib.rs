//! Plumbing shared by Flotilla's controllers (the scheduler and the propagation
//! controllers), with no decisions of its own:
//!
//! - [`queue`]: the coalescing work queue keyed by object, with per-key exponential backoff;
//! - [`events`]: the core/v1 Event recorder, writing in the background with deduplication.

pub mod events;
pub mod queue;

pub use events::{EventRecorder, EventRequest};
pub use queue::WorkQueue;
