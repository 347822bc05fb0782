package memrank

import (
	"math"
	"testing"
)

// TestReceiptQuoting pins q (README "Receipt canonical form"): Python's json.dumps(s, ensure_ascii=True).
func TestReceiptQuoting(t *testing.T) {
	s := "a\"b\\c\n\t\b\f\r\x01\x1f\x7f é😀\u2028/<&>"
	want := `"a\"b\\c\n\t\b\f\r\u0001\u001f\u007f \u00e9\ud83d\ude00\u2028/<&>"`
	if got := rq(s); got != want {
		t.Errorf("q: got %s, want %s", got, want)
	}
	if got := rf(0.1); got != "3fb999999999999a" {
		t.Errorf("f(0.1) = %s", got)
	}
	if got := rf(math.Copysign(0, -1)); got != "8000000000000000" {
		t.Errorf("f(-0) = %s", got)
	}
}
