//! The waits of Flotilla's tests: [`eventually`] polls until something observable holds
//! (an object's state, a metric, an event), [`stays_for`] checks that something holds over a
//! stretch. Tests wait on what they can observe, never on a fixed sleep. A crate of its own,
//! below every other, so any crate's tests can use it (the API server's and the host's
//! among them, which the control-plane fixtures of `flotilla-testenv` stand above).

/// What a check given to [`eventually`] answers: done (with a value), or not yet (and, for a
/// `Result`, why not: the last reason is in the timeout's message).
pub trait Outcome {
    type Value;
    fn into_result(self) -> Result<Self::Value, Option<String>>;
}

impl<T> Outcome for Option<T> {
    type Value = T;
    fn into_result(self) -> Result<T, Option<String>> {
        self.ok_or(None)
    }
}

impl<T> Outcome for Result<T, String> {
    type Value = T;
    fn into_result(self) -> Result<T, Option<String>> {
        self.map_err(Some)
    }
}

impl Outcome for bool {
    type Value = ();
    fn into_result(self) -> Result<(), Option<String>> {
        if self { Ok(()) } else { Err(None) }
    }
}

/// Polls `check` every 50 ms until it is done (`Some`, `Ok`, `true`), returning its value;
/// panics naming `what` (and the last reason a `Result` gave) after `limit`. Tests wait on
/// what they can observe, never on a fixed sleep.
pub async fn eventually<O, F, Fut>(what: &str, limit: std::time::Duration, mut check: F) -> O::Value
where
    O: Outcome,
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = O>,
{
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        let last = match check().await.into_result() {
            Ok(value) => return value,
            Err(last) => last,
        };
        if tokio::time::Instant::now() >= deadline {
            panic!(
                "{}",
                with_reason(
                    format!("timed out after {limit:?} waiting for {what}"),
                    last
                )
            );
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Checks `check` every 50 ms for `period`, panicking naming `what` (and the reason a
/// `Result` gave) the first time it fails: for what must hold over a stretch of time (a
/// cluster stays Ready over several grace periods), where the stretch itself is the point.
pub async fn stays_for<O, F, Fut>(what: &str, period: std::time::Duration, mut check: F)
where
    O: Outcome,
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = O>,
{
    let until = tokio::time::Instant::now() + period;
    loop {
        if let Err(reason) = check().await.into_result() {
            panic!("{}", with_reason(format!("{what} did not hold"), reason));
        }
        if tokio::time::Instant::now() >= until {
            return;
        }
        tokio::time::sleep(POLL).await;
    }
}

/// How often [`eventually`] and [`stays_for`] look.
const POLL: std::time::Duration = std::time::Duration::from_millis(50);

/// A failure's message, with the reason a `Result` check gave when it gave one.
fn with_reason(message: String, reason: Option<String>) -> String {
    match reason {
        Some(reason) => format!("{message}: {reason}"),
        None => message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::time::Duration;

    #[tokio::test]
    async fn eventually_returns_the_first_done_value() {
        let calls = AtomicU32::new(0);
        let value = eventually("the third call", Duration::from_secs(5), || async {
            let n = calls.fetch_add(1, Ordering::SeqCst) + 1;
            (n >= 3).then_some(n)
        })
        .await;
        assert_eq!(value, 3);
    }

    #[tokio::test]
    #[should_panic(expected = "timed out after 100ms waiting for never: still 7")]
    async fn eventually_names_what_and_the_last_reason() {
        eventually("never", Duration::from_millis(100), || async {
            Err::<(), String>("still 7".into())
        })
        .await;
    }

    #[tokio::test]
    #[should_panic(expected = "the flag did not hold")]
    async fn stays_for_fails_the_first_time_the_check_fails() {
        let calls = AtomicU32::new(0);
        stays_for("the flag", Duration::from_secs(5), || async {
            calls.fetch_add(1, Ordering::SeqCst) < 2
        })
        .await;
    }
}
