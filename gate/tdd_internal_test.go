package gate

import "testing"

func TestPyPath(t *testing.T) {
	src := "import x\n\n\ndef test_ac_a_1():\n    pass\n\n\nclass TestCart:\n    # the cart\n    def test_ac_a_2(self):\n        pass\n\n    class TestInner:\n        def test_ac_a_3(self):\n            pass\n"
	for name, want := range map[string]string{"test_ac_a_1": "test_ac_a_1", "test_ac_a_2": "TestCart::test_ac_a_2", "test_ac_a_3": "TestCart::TestInner::test_ac_a_3", "test_gone": "test_gone"} {
		if got := pyPath(src, name); got != want {
			t.Errorf("pyPath(%s) = %q, want %q", name, got, want)
		}
	}
}
