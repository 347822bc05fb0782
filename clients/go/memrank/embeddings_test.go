package memrank_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/memrank/memrank/clients/go/memrank"
	"google.golang.org/protobuf/encoding/protojson"
)

// TestPackEmbeddingsMatchesTheVectors packs each vector's "embeddings" rows and
// compares the result with the embeddingsF32 / embeddingDim of its request.
func TestPackEmbeddingsMatchesTheVectors(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("..", "..", "..", "tests", "vectors", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var v struct {
			Name       string          `json:"name"`
			Request    json.RawMessage `json:"request"`
			Embeddings [][]float64     `json:"embeddings"`
		}
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if v.Embeddings == nil {
			continue
		}
		found++
		want := &memrank.RankRequest{}
		if err := protojson.Unmarshal(v.Request, want); err != nil {
			t.Fatalf("%s: %v", v.Name, err)
		}
		rows := make([][]float32, len(v.Embeddings))
		for i, row := range v.Embeddings {
			for _, x := range row {
				rows[i] = append(rows[i], float32(x))
			}
		}
		got := &memrank.RankRequest{Candidates: want.GetCandidates()}
		if err := memrank.PackEmbeddings(got, rows); err != nil {
			t.Fatalf("%s: %v", v.Name, err)
		}
		if !bytes.Equal(got.GetEmbeddingsF32(), want.GetEmbeddingsF32()) || got.GetEmbeddingDim() != want.GetEmbeddingDim() {
			t.Errorf("%s: packed %x (dim %d), vector has %x (dim %d)", v.Name, got.GetEmbeddingsF32(),
				got.GetEmbeddingDim(), want.GetEmbeddingsF32(), want.GetEmbeddingDim())
		}
	}
	if found == 0 {
		t.Fatal("no vector carries packed embeddings")
	}
}

func TestPackEmbeddingsChecksShapes(t *testing.T) {
	two := []*memrank.Candidate{memrank.NewCandidate("a", "x"), memrank.NewCandidate("b", "y")}
	for name, rows := range map[string][][]float32{
		"too few rows": {{1, 2}},
		"ragged":       {{1, 2}, {3}},
		"empty rows":   {{}, {}},
	} {
		if err := memrank.PackEmbeddings(&memrank.RankRequest{Candidates: two}, rows); err == nil {
			t.Errorf("%s: want an error", name)
		}
	}
	req := &memrank.RankRequest{Candidates: two}
	if err := memrank.PackEmbeddings(req, [][]float32{{1, -2}, {0.5, 0}}); err != nil {
		t.Fatal(err)
	}
	want := []byte{0, 0, 0x80, 0x3f, 0, 0, 0, 0xc0, 0, 0, 0, 0x3f, 0, 0, 0, 0}
	if !bytes.Equal(req.GetEmbeddingsF32(), want) || req.GetEmbeddingDim() != 2 {
		t.Errorf("packed %x dim %d, want %x dim 2", req.GetEmbeddingsF32(), req.GetEmbeddingDim(), want)
	}
}
