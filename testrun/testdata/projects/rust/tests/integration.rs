#[test]
fn int_add() {
    assert_eq!(proj::add(2, 2), 4);
}
