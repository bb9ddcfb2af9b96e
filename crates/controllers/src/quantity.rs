//! Resource quantities as the status controller counts them: every resource is an `i64` in
//! its natural integer unit (CPU in millicores, everything else in whole units), parsed with an
//! explicit rounding direction and printed back canonically. The rules live in
//! `flotilla_core::quantity` (shared with the member simulator and the interpreter); this
//! module keeps the controllers' paths.

pub use flotilla_core::quantity::{Round, format, parse};
