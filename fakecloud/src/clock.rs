//! Wall-clock time in unix milliseconds, the unit stored in the database.

pub fn now_ms() -> i64 {
    jiff::Timestamp::now().as_millisecond()
}
