//! A fixture of the testrun tests: some of its tests pass, some fail.

/// Adds.
pub fn add(a: i32, b: i32) -> i32 {
    a + b
}

/// Subtracts, wrongly.
pub fn sub(a: i32, b: i32) -> i32 {
    a + b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adds() {
        assert_eq!(add(1, 2), 3);
    }

    #[test]
    fn subtracts() {
        assert_eq!(sub(3, 1), 2);
    }

    #[test]
    #[ignore = "later"]
    fn later() {}
}
