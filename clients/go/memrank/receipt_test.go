package memrank

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// TestReceiptQuoting pins q (docs/concepts/receipts.md): Python's json.dumps(s, ensure_ascii=True).
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

// TestReceiptFixtures verifies tests/vectors/receipts/*.json offline, v2 and v3 (derived by derive.py, no server):
// each verifies with the lines it lists, its request per candidate and as columns; a candidate renamed in the
// columns, or one selected score an ulp lower, does not.
func TestReceiptFixtures(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("..", "..", "..", "tests", "vectors", "receipts", "*.json"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no receipt fixtures: %v", err)
	}
	schemas := map[string]int{}
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var f struct {
			Request  json.RawMessage `json:"request"`
			Response json.RawMessage `json:"response"`
			Lines    []string        `json:"lines"`
		}
		req, resp := &RankRequest{}, &RankResponse{}
		if err := json.Unmarshal(raw, &f); err != nil || protojson.Unmarshal(f.Request, req) != nil ||
			protojson.Unmarshal(f.Response, resp) != nil {
			t.Fatalf("%s: not a receipt fixture", p)
		}
		schemas[resp.GetReceipt().GetSchema()]++
		canonical, err := ReceiptCanonical(req, resp)
		if err != nil || string(canonical) != strings.Join(f.Lines, "\n")+"\n" {
			t.Errorf("%s: canonical lines differ (%v):\n%s", p, err, canonical)
		}
		columns, ok := Columnar(req)
		if !ok {
			t.Fatalf("%s: not converted to columns", p)
		}
		if again, err := ReceiptCanonical(columns, resp); err != nil || string(again) != string(canonical) {
			t.Errorf("%s: the columnar form's canonical lines differ (%v):\n%s", p, err, again)
		}
		for form, r := range map[string]*RankRequest{"candidates": req, "columns": columns} {
			if err := VerifyReceipt(r, resp, nil); err != nil {
				t.Errorf("%s (%s): %v", p, form, err)
			}
		}
		bad := proto.Clone(columns).(*RankRequest)
		bad.Columns.Ids[0] += "x"
		if err := VerifyReceipt(bad, resp, nil); !errors.Is(err, ErrReceiptMismatch) {
			t.Errorf("%s: a renamed candidate in the columns: want ErrReceiptMismatch, got %v", p, err)
		}
		resp.Selected[0].Score = math.Nextafter(resp.Selected[0].Score, 0)
		for form, r := range map[string]*RankRequest{"candidates": req, "columns": columns} {
			if err := VerifyReceipt(r, resp, nil); !errors.Is(err, ErrReceiptMismatch) {
				t.Errorf("%s (%s): a changed score: want ErrReceiptMismatch, got %v", p, form, err)
			}
		}
	}
	if schemas[ReceiptSchema] == 0 || schemas[ReceiptSchemaV2] == 0 {
		t.Errorf("fixtures of both forms wanted, got %v", schemas)
	}
}
